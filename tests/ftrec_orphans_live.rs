//! A `--private` recording removes the instances that ftrec processes now
//! gone left behind (killed, or aborted on a failed allocation: each holds
//! a ring buffer per CPU until reboot), and keeps a live process's. A test
//! binary of its own: every `--private` ftrec sweeps, so a recording of
//! another test running in parallel could take this test's orphan first.
//! Needs root and tracefs; skips with a message otherwise.

mod support;

use std::path::Path;
use std::process::Command;
use support::{applet_dir, ftbox, Instance};

#[test]
fn private_recording_removes_dead_ftrecs_instances() {
    // A PID that was a process and is gone: a child, reaped.
    let mut child = Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let Some(orphan) = Instance::create(&format!("ftrec-{dead}-0"), None) else { return };
    let Some(live) = Instance::create(&format!("ftrec-{}-9", std::process::id()), None) else { return };
    let d = applet_dir("orphans", &ftbox(), &["ftrec", "ftcat"]);
    let f = d.join("f.dat");
    let o = Command::new(d.join("ftrec"))
        .args(["--private", "-e", "sched:sched_process_exec", "-o"])
        .arg(&f)
        .args(["--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!orphan.dir.exists(), "{} is still there: {err}", orphan.dir.display());
    let removed = format!("ftrec: removed instance ftrec-{dead}-0: left by ftrec process {dead}, which is gone\n");
    assert!(err.contains(&removed), "{err}");
    assert!(live.dir.exists(), "the live process's instance was removed: {err}");
    // What it recorded is there as usual.
    let o = Command::new(d.join("ftcat")).arg(&f).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(String::from_utf8_lossy(&o.stdout).matches("sched_process_exec:").count(), 1);
    // The orphan's Drop finds it gone: nothing to wait for.
    std::mem::forget(orphan);
    drop(live);
    let _ = std::fs::remove_dir_all(Path::new(&d));
}
