//! Issue #2 §3 "Find the mount: /sys/kernel/tracing, else
//! /sys/kernel/debug/tracing, else /proc/mounts; mount tracefs when absent
//! and permitted" — each branch in a private mount namespace (unshare -m,
//! private propagation: the machine's mounts are not touched). Needs root
//! and util-linux unshare; skips with a message otherwise.

use std::path::PathBuf;
use std::process::Command;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// Run `script` (with $FTBOX set) in a private mount namespace; None = skip.
fn in_namespace(script: &str) -> Option<(i32, String, String)> {
    let o = Command::new("unshare").args(["-m", "--propagation", "private", "sh", "-c", script]).env("FTBOX", ftbox()).output().ok()?;
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if o.status.code() == Some(77) || err.starts_with("unshare:") {
        println!("skipped: no private mount namespace: {err}");
        return None;
    }
    Some((o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into_owned(), err))
}

fn skipped() -> bool {
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") {
        println!("skipped: ftctl_mount: FTBOX_NO_LIVE=1");
        return true;
    }
    if !std::path::Path::new("/sys/kernel/tracing/trace").exists() {
        println!("skipped: ftctl_mount: no tracefs at /sys/kernel/tracing");
        return true;
    }
    false
}

/// Unmount every tracefs and debugfs in the namespace (exit 77 if not allowed).
const CLEAR: &str = "for m in $(awk '$3 == \"tracefs\" || $3 == \"debugfs\" {print $2}' /proc/mounts | sort -r); do umount -l \"$m\" || exit 77; done; ";

#[test]
fn found_elsewhere_through_proc_mounts() {
    if skipped() {
        return;
    }
    let d = std::env::temp_dir().join(format!("ftctl-mnt-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let script = format!("{CLEAR} mount -t tracefs nodev {} || exit 77; \"$FTBOX\" ftctl mount && \"$FTBOX\" ftctl list tracers", d.display());
    let Some((c, out, err)) = in_namespace(&script) else { return };
    let _ = std::fs::remove_dir(&d);
    assert_eq!(c, 0, "{err}");
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some(d.to_str().unwrap()), "{out}");
    assert!(lines.any(|l| l == "nop"), "the control files are read there: {out}");
}

#[test]
fn found_under_debugfs() {
    if skipped() {
        return;
    }
    let script = format!("{CLEAR} mount -t debugfs nodev /sys/kernel/debug || exit 77; test -e /sys/kernel/debug/tracing/trace || exit 77; \"$FTBOX\" ftctl mount");
    let Some((c, out, err)) = in_namespace(&script) else { return };
    assert_eq!((c, out.as_str()), (0, "/sys/kernel/debug/tracing\n"), "{err}");
}

#[test]
fn mounted_when_absent() {
    if skipped() {
        return;
    }
    let script = format!("{CLEAR} \"$FTBOX\" ftctl mount && awk '$3 == \"tracefs\" {{print \"mounted at \" $2}}' /proc/mounts");
    let Some((c, out, err)) = in_namespace(&script) else { return };
    assert_eq!((c, out.as_str()), (0, "/sys/kernel/tracing\nmounted at /sys/kernel/tracing\n"), "{err}");
}
