//! Issue #3 §5: `ftcat --live` without `--once` prints as it goes: a
//! marker written while it runs shows up on its stdout while it is still
//! running (the differential tests only use `--once`). Live: needs root
//! and tracefs; skips with a message otherwise. Uses a private instance.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

struct Instance(PathBuf);

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("tracing_on"), "0");
        let _ = std::fs::remove_dir(&self.0);
    }
}

#[test]
fn live_prints_as_it_goes() {
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") {
        println!("skipped: live_prints_as_it_goes: FTBOX_NO_LIVE=1");
        return;
    }
    let root = Path::new("/sys/kernel/tracing");
    if !root.join("trace").exists() {
        println!("skipped: live_prints_as_it_goes: no tracefs at /sys/kernel/tracing");
        return;
    }
    let name = format!("ftcat-stream-{}", std::process::id());
    let dir = root.join("instances").join(&name);
    if let Err(e) = std::fs::create_dir(&dir) {
        println!("skipped: live_prints_as_it_goes: cannot create an instance ({e}); needs root");
        return;
    }
    let inst = Instance(dir);
    let mut child = Command::new(ftbox()).args(["ftcat", "--live", "-B", &name]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut b = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut b) {
            if n == 0 || tx.send(b[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    let mut wait_for = |text: &str| -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut wrote = false;
        while Instant::now() < deadline {
            if !wrote {
                std::fs::write(inst.0.join("trace_marker"), text).unwrap();
                wrote = true;
            }
            if let Ok(b) = rx.recv_timeout(Duration::from_millis(200)) {
                got.extend(b);
            }
            if String::from_utf8_lossy(&got).contains(&format!("tracing_mark_write: {text}\n")) {
                return true;
            }
        }
        false
    };
    let first = wait_for("stream-one");
    let second = first && wait_for("stream-two");
    let still_running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let _ = reader.join();
    let text = String::from_utf8_lossy(&got);
    assert!(first, "the first marker was printed while ftcat ran:\n{text}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(second, "so was one written after it:\n{text}");
    assert!(still_running, "ftcat --live (no --once) keeps following the buffer");
    assert!(text.starts_with("# tracer: nop\n"), "the kernel's header first:\n{text}");
    let one = text.find("stream-one").unwrap();
    assert!(text[one..].contains("stream-two"), "in order");
}
