//! CLI tests: the real binary, reached through argv[0] symlinks made by
//! `ftbox --install -s`, as a rescue shell would have it.

use std::path::{Path, PathBuf};
use std::process::Command;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// The live-test convention: a test that touches tracefs calls this first
/// and returns when it says so. `FTBOX_NO_LIVE=1` (exported by `make
/// test-cross`, whose binaries run under qemu-user, a syscall translator
/// rather than the kernel ABI live tests are about) skips every live test
/// with a message; so does a machine without a mounted tracefs.
#[allow(dead_code)]
fn live_skipped(test: &str) -> bool {
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") {
        println!("skipped: {test}: FTBOX_NO_LIVE=1");
        return true;
    }
    if !Path::new("/sys/kernel/tracing/trace").exists() {
        println!("skipped: {test}: no tracefs at /sys/kernel/tracing");
        return true;
    }
    false
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ftbox-cli-{}-{}", tag, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(exe: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(exe).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

#[test]
fn list_help_version() {
    let (c, out, _) = run(&ftbox(), &["--list"]);
    assert_eq!(c, 0);
    assert_eq!(out, "ftcat\nftctl\nftrec\n");
    let (c, out, _) = run(&ftbox(), &["--help"]);
    assert_eq!(c, 0);
    assert!(out.contains("ftbox --install [-s] DIR"));
    let (c, out, _) = run(&ftbox(), &["--version"]);
    assert_eq!(c, 0);
    assert!(out.starts_with("ftbox "));
}

#[test]
fn unknown_applet_is_127() {
    let (c, _, err) = run(&ftbox(), &["nosuch"]);
    assert_eq!(c, 127);
    assert_eq!(err, "ftbox: applet not found: nosuch\n");
    let d = tmpdir("unknown");
    let l = d.join("weird");
    std::os::unix::fs::symlink(ftbox(), &l).unwrap();
    let (c, _, err) = run(&l, &[]);
    assert_eq!(c, 127);
    assert_eq!(err, "ftbox: applet not found: weird\n");
}

#[test]
fn install_symlinks_and_hardlinks() {
    let d = tmpdir("install");
    let (c, _, err) = run(&ftbox(), &["--install", "-s", d.to_str().unwrap()]);
    assert_eq!(c, 0, "{err}");
    let target = std::fs::canonicalize(ftbox()).unwrap();
    for a in ["ftcat", "ftctl", "ftrec"] {
        assert_eq!(std::fs::read_link(d.join(a)).unwrap(), target);
    }
    // Again: correct links are left alone, quietly.
    let (c, _, err) = run(&ftbox(), &["--install", "-s", d.to_str().unwrap()]);
    assert_eq!((c, err.as_str()), (0, ""));
    // A foreign file is reported and kept.
    std::fs::remove_file(d.join("ftcat")).unwrap();
    std::fs::write(d.join("ftcat"), "mine").unwrap();
    let (c, _, err) = run(&ftbox(), &["--install", "-s", d.to_str().unwrap()]);
    assert_eq!(c, 1);
    assert!(err.contains("ftcat: exists"), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("ftcat")).unwrap(), "mine");
    // Hard links, when on the same filesystem as the binary.
    let h = target.parent().unwrap().join(format!("hl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    let (c, _, err) = run(&ftbox(), &["--install", h.to_str().unwrap()]);
    assert_eq!(c, 0, "{err}");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(h.join("ftctl")).unwrap().ino(), std::fs::metadata(&target).unwrap().ino());
    std::fs::remove_dir_all(&h).unwrap();
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn applets_answer_help_through_links() {
    let d = tmpdir("help");
    run(&ftbox(), &["--install", "-s", d.to_str().unwrap()]);
    for a in ["ftcat", "ftctl", "ftrec"] {
        let (c, out, err) = run(&d.join(a), &["--help"]);
        assert_eq!(c, 0, "{a} --help: {err}");
        assert!(out.starts_with(&format!("Usage: {a}")), "{a}: {out}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Issue #2 §1: `ftbox APPLET ARGS…`; `--install` leaves correct hard
/// links alone too, refuses a missing directory, and answers a bad usage
/// with exit 2.
#[test]
fn applet_as_first_argument_and_install_edges() {
    for a in ["ftcat", "ftctl", "ftrec"] {
        let (c, out, err) = run(&ftbox(), &[a, "--help"]);
        assert_eq!(c, 0, "ftbox {a} --help: {err}");
        assert!(out.starts_with(&format!("Usage: {a}")), "{a}: {out}");
        let (c, _, err) = run(&ftbox(), &[a, "--no-such-option"]);
        assert_eq!(c, 2, "ftbox {a} --no-such-option: {err}");
        assert!(err.starts_with(&format!("{a}: ")), "errors are 'APPLET: message': {err}");
    }
    let target = std::fs::canonicalize(ftbox()).unwrap();
    let h = target.parent().unwrap().join(format!("hl2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&h);
    std::fs::create_dir_all(&h).unwrap();
    let (c, _, err) = run(&ftbox(), &["--install", h.to_str().unwrap()]);
    assert_eq!(c, 0, "{err}");
    let (c, _, err) = run(&ftbox(), &["--install", h.to_str().unwrap()]);
    assert_eq!((c, err.as_str()), (0, ""), "correct hard links are left alone, quietly");
    std::fs::remove_dir_all(&h).unwrap();
    let (c, _, err) = run(&ftbox(), &["--install", "/nonexistent/dir"]);
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("/nonexistent/dir"), "{err}");
    let (c, _, _) = run(&ftbox(), &["--install"]);
    assert_eq!(c, 2);
}

/// Issue #2 §1: without /proc/self/exe, `--install` points the links at an
/// absolute argv[0] (or a relative one made absolute). Needs root for a
/// private mount namespace with /proc unmounted; skips otherwise.
#[test]
fn install_without_proc_uses_argv0() {
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") {
        println!("skipped: install_without_proc_uses_argv0: FTBOX_NO_LIVE=1");
        return;
    }
    let d = tmpdir("noproc");
    // A copy named ftbox, so that argv[0]'s basename is the multicall name.
    std::fs::create_dir_all(d.join("bin")).unwrap();
    let bin = d.join("bin/ftbox");
    std::fs::copy(ftbox(), &bin).unwrap();
    let (abs, rel) = (d.join("abs"), d.join("rel"));
    std::fs::create_dir_all(&abs).unwrap();
    std::fs::create_dir_all(&rel).unwrap();
    let script = format!("umount -l /proc || exit 77; {} --install -s {} || exit 1; cd {} && ./ftbox --install -s {}", bin.display(), abs.display(), d.join("bin").display(), rel.display());
    let o = match Command::new("unshare").args(["-m", "sh", "-c", &script]).output() {
        Ok(o) => o,
        Err(e) => {
            println!("skipped: install_without_proc_uses_argv0: no unshare ({e})");
            return;
        }
    };
    if o.status.code() == Some(77) || (!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("unshare")) {
        println!("skipped: install_without_proc_uses_argv0: no private mount namespace: {}", String::from_utf8_lossy(&o.stderr));
        let _ = std::fs::remove_dir_all(&d);
        return;
    }
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for dir in [&abs, &rel] {
        for a in ["ftcat", "ftctl", "ftrec"] {
            let l = std::fs::read_link(dir.join(a)).unwrap();
            assert!(l.is_absolute(), "{}: {}", a, l.display());
            assert_eq!(std::fs::canonicalize(&l).unwrap(), std::fs::canonicalize(&bin).unwrap());
        }
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Output into a pipe nobody reads (`ftcat | head` after head quit): the
/// write fails with EPIPE (ftbox ignores SIGPIPE, as std's runtime did) and
/// the applet ends quietly with status 0, not killed by the signal.
#[test]
fn closed_stdout_ends_quietly() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12/x-kstack.extract.dat");
    let d = tmpdir("epipe");
    let l = d.join("ftcat");
    std::os::unix::fs::symlink(ftbox(), &l).unwrap();
    let mut c = Command::new(&l).arg(&f).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    drop(c.stdout.take());
    let o = c.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{:?}", o.status);
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    std::fs::remove_dir_all(&d).unwrap();
}

/// `make` while the binary is in use (a recording runs from ./bin/ftrec):
/// the Makefile's strip step writes beside the binary and renames the copy
/// over it, so a running program keeps its old file and the step succeeds
/// where objcopy in place fails with "Text file busy". Runs the step
/// alone (`make strip-sections FILE=...`) on a copy that is running.
#[test]
fn rebuild_while_the_binary_runs() {
    // The Makefile strips only the x86_64 builds; the host's objcopy may
    // not know a cross target's ELF (make test-cross runs these tests).
    if cfg!(not(target_arch = "x86_64")) {
        println!("skipped: rebuild_while_the_binary_runs: make strips only the x86_64 binary");
        return;
    }
    // make and llvm-objcopy are what builds the binary (scripts/setup.sh installs llvm).
    for tool in ["llvm-objcopy", "make"] {
        assert!(Command::new(tool).arg("--version").output().is_ok(), "no {tool}: make test needs it");
    }
    let d = tmpdir("busy");
    let bin = d.join("ftbox");
    std::fs::copy(ftbox(), &bin).unwrap();
    // `ftcat -` reads stdin to its end: it runs until stdin closes.
    let mut running = Command::new(&bin).args(["ftcat", "-"]).stdin(std::process::Stdio::piped()).stderr(std::process::Stdio::null()).spawn().unwrap();
    // Wait until it has exec'ed (its exe is our copy).
    let exe = std::path::PathBuf::from(format!("/proc/{}/exe", running.id()));
    for _ in 0..200 {
        if std::fs::read_link(&exe).is_ok_and(|p| p == bin) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let o = Command::new("make")
        .args(["-s", "--no-print-directory", "-C", env!("CARGO_MANIFEST_DIR"), "strip-sections"])
        .arg(format!("FILE={}", bin.display()))
        .output()
        .unwrap();
    drop(running.stdin.take());
    let _ = running.wait();
    assert!(o.status.success(), "make strip-sections on a running binary: {}", String::from_utf8_lossy(&o.stderr));
    let (c, out, _) = run(&bin, &["--version"]);
    assert_eq!(c, 0);
    assert!(out.starts_with("ftbox "), "{out}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A system error reaches the user in the system's words: a directory
/// given as a trace file says "Is a directory", not an errno number.
#[test]
fn system_errors_in_words() {
    let d = tmpdir("eisdir");
    let (c, _, err) = run(&ftbox(), &["ftcat", d.to_str().unwrap()]);
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("Is a directory") && !err.contains("errno"), "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}
