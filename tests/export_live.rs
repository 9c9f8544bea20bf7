//! `ftcat --live --once --export perfetto`: a short recording in a private
//! instance, exported from the live buffers, read back by Perfetto's
//! protobuf bindings (tests/export/check_live.py): SystemInfo carries the
//! running kernel's uname (sysname, release, machine) and FtraceStats each
//! CPU's buffer statistics, as an export of a file does; the markers
//! written and the sched_switch records are there. Live: needs root and
//! tracefs (skips without). Like every test here it runs the binary
//! FTBOX_BIN names (make build's static one; cargo's own host build of the
//! no_std binary is not runnable).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{w, Instance};

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

#[test]
fn live_export_carries_uname_and_stats() {
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") {
        println!("skipped: live_export_carries_uname_and_stats: FTBOX_NO_LIVE=1");
        return;
    }
    let name = format!("ftcat-export-{}", std::process::id());
    let Some(inst) = Instance::create(&name, Some("1024")) else { return };
    w(&inst.dir, "events/sched/sched_switch/enable", "1");
    w(&inst.dir, "tracing_on", "1");
    let markers = ["export-live-one", "export-live-two"];
    for m in markers {
        w(&inst.dir, "trace_marker", m);
        // A switch or two on the way (sleeping is one).
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    w(&inst.dir, "tracing_on", "0");
    let ncpus = std::fs::read_dir(inst.dir.join("per_cpu")).unwrap().count();

    let out = std::env::temp_dir().join(format!("ftbox-export-live-{}.pftrace", std::process::id()));
    let o = Command::new(ftbox()).args(["ftcat", "--live", "--once", "-B", &name, "--export", "perfetto"]).output().unwrap();
    assert!(o.status.success(), "ftcat: {}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(&out, &o.stdout).unwrap();
    drop(inst);

    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/export/check_live.py");
    let c = Command::new(py).arg(script).arg(&out).arg(ncpus.to_string()).args(markers).output().expect("python3");
    let msg = format!("{}{}", String::from_utf8_lossy(&c.stdout), String::from_utf8_lossy(&c.stderr));
    let _ = std::fs::remove_file(&out);
    assert!(c.status.success(), "{msg}");
    eprintln!("{}", msg.trim());
}
