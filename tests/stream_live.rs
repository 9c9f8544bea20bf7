//! The stream (`ftrec -o -`) and recordings cut short, end to end on this
//! machine: root and tracefs needed, skipped with a message otherwise (and
//! with FTBOX_NO_LIVE=1). Every test records in a buffer of its own
//! (--private, or an instance it creates), one at a time (TOP), and puts
//! what it changed back. Run one by name under the shared lock:
//! `flock /work/notes/tracefs.lock cargo test --release --test stream_live -- stream`.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

static TOP: Mutex<()> = Mutex::new(());
const T: &str = "/sys/kernel/tracing";

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// The lock, or None (with a message) when the machine cannot run it.
fn live(test: &str) -> Option<std::sync::MutexGuard<'static, ()>> {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") || !root || !Path::new(T).join("trace").exists() {
        eprintln!("{test}: skipped (needs root and tracefs at {T}, and FTBOX_NO_LIVE unset)");
        return None;
    }
    Some(TOP.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A scratch dir with ftrec/ftcat links to the binary.
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ftbox-stream-{}-{}", tag, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for a in ["ftrec", "ftcat"] {
        std::os::unix::fs::symlink(ftbox(), d.join(a)).unwrap();
    }
    d
}

fn run(exe: &Path, args: &[&str], stdin: Option<&Path>) -> (i32, String, String) {
    let mut c = Command::new(exe);
    c.args(args);
    if let Some(f) = stdin {
        c.stdin(std::fs::File::open(f).unwrap());
    }
    let o = c.output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// Each record line's (CPU, timestamp, event), in order: what two readers
/// of one recording must agree on whatever task names they know.
fn events(text: &str) -> Vec<(String, String, String)> {
    let mut v = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(i) = toks.iter().position(|t| t.starts_with('[') && t.ends_with(']')) else { continue };
        let Some(j) = (i + 1..toks.len()).find(|&j| toks[j].strip_suffix(':').is_some_and(|t| t.contains('.') && t.parse::<f64>().is_ok())) else { continue };
        v.push((toks[i].to_string(), toks[j].to_string(), toks.get(j + 1).unwrap_or(&"").to_string()));
    }
    v
}

fn counts(ev: &[(String, String, String)]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in ev {
        *m.entry(e.2.trim_end_matches(':').to_string()).or_insert(0) += 1;
    }
    m
}

/// `trace-cmd report`'s counts per event, or None when it is missing.
fn trace_cmd_counts(file: &Path) -> Option<BTreeMap<String, usize>> {
    let o = Command::new("trace-cmd").arg("report").arg("-i").arg(file).stdin(Stdio::null()).output().ok()?;
    assert!(o.status.success(), "trace-cmd report {}: {}", file.display(), String::from_utf8_lossy(&o.stderr));
    Some(counts(&events(&String::from_utf8_lossy(&o.stdout))))
}

/// A private instance left by a recorder killed with -9 (it could not
/// remove it), removed.
fn remove_instance_of(pid: u32) {
    let d = Path::new(T).join(format!("instances/ftrec-{pid}-0"));
    if d.exists() {
        let _ = std::fs::write(d.join("tracing_on"), "0");
        let _ = std::fs::write(d.join("events/enable"), "0");
        std::fs::remove_dir(&d).unwrap();
    }
}

fn spawn_recorder(dir: &Path, args: &[&str], stdout: Stdio) -> Child {
    Command::new(dir.join("ftrec")).args(args).stdout(stdout).stderr(Stdio::piped()).spawn().unwrap()
}

/// A busy workload: syscalls and context switches on every CPU.
fn churn(ms: u64) {
    let end = std::time::Instant::now() + Duration::from_millis(ms);
    while std::time::Instant::now() < end {
        let _ = Command::new("true").status();
    }
}

/// One recording as a stream: `ftcat` of the stream file, of stdin, of a
/// pipe and of its `--save`d trace.dat print the same events in the same
/// order (the stream file and the trace.dat byte for byte), and
/// `trace-cmd report` reads the saved file.
#[test]
fn stream_reads_like_the_trace_dat_it_saves_to() {
    let Some(_g) = live("stream_reads_like_the_trace_dat_it_saves_to") else { return };
    let d = scratch("same");
    let s = d.join("rec.stream");
    let out = std::fs::File::create(&s).unwrap();
    let args = ["--private", "-o", "-", "-e", "sched", "-e", "syscalls:sys_enter_getppid", "--", "sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 0.01; done"];
    let o = Command::new(d.join("ftrec")).args(args).current_dir(&d).stdout(out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ftcat = d.join("ftcat");
    let (c1, file_text, e1) = run(&ftcat, &[s.to_str().unwrap()], None);
    assert_eq!(c1, 0, "{e1}");
    assert!(events(&file_text).len() > 10, "{file_text}");
    let (c2, stdin_text, e2) = run(&ftcat, &["-"], Some(&s));
    assert_eq!((c2, stdin_text.as_str()), (0, file_text.as_str()), "{e2}");
    let saved = d.join("rec.dat");
    let (c3, _, e3) = run(&ftcat, &["--save", saved.to_str().unwrap(), s.to_str().unwrap()], None);
    assert_eq!(c3, 0, "{e3}");
    let (c4, dat_text, e4) = run(&ftcat, &[saved.to_str().unwrap()], None);
    assert_eq!((c4, dat_text.as_str()), (0, file_text.as_str()), "{e4}");
    // Through a pipe: the same events in the same order (task names are
    // those known when the stream began).
    let piped = Command::new("sh").arg("-c").arg(format!("cat '{}' | '{}' -", s.display(), ftcat.display())).output().unwrap();
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    assert_eq!(events(&String::from_utf8_lossy(&piped.stdout)), events(&file_text));
    let (_, tc_text, _) = run(&ftcat, &["--style", "trace-cmd", s.to_str().unwrap()], None);
    if let Some(tc) = trace_cmd_counts(&saved) {
        assert_eq!(tc, counts(&events(&tc_text)));
    }
}

/// `ftrec -o - | ftcat -` live: the text arrives and the recording's
/// settings go back on SIGTERM; a reader that goes away ends the recording
/// with an error, settings restored too.
#[test]
fn stream_to_a_pipe_restores_settings() {
    let Some(_g) = live("stream_to_a_pipe_restores_settings") else { return };
    let d = scratch("pipe");
    let inst = Path::new(T).join("instances/ftbox-stream-test");
    let _ = std::fs::create_dir(&inst);
    let before = |f: &str| std::fs::read_to_string(inst.join(f)).unwrap();
    let (clock, sched, on) = (before("trace_clock"), before("events/sched/enable"), before("tracing_on"));
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let mut rec = spawn_recorder(&d, &["-B", "ftbox-stream-test", "-C", "mono", "-e", "sched", "-o", "-"], Stdio::piped());
        let stream = rec.stdout.take().unwrap();
        // ftcat's text goes to a file: a pipe nobody reads until the
        // recorder ends would fill, stop ftcat, and so the recorder.
        let text = d.join("text");
        let mut cat = Command::new(d.join("ftcat")).arg("-").stdin(stream).stdout(std::fs::File::create(&text).unwrap()).spawn().unwrap();
        churn(1000);
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(rec.id() as i32, sig) };
        let st = rec.wait().unwrap();
        let mut err = String::new();
        rec.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        assert!(st.success(), "{err}");
        assert!(cat.wait().unwrap().success());
        assert!(!events(&std::fs::read_to_string(&text).unwrap()).is_empty());
        assert_eq!((before("trace_clock"), before("events/sched/enable"), before("tracing_on")), (clock.clone(), sched.clone(), on.clone()));
    }
    // The reader goes away: EPIPE, exit 1, settings back.
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' -B ftbox-stream-test -C mono -e sched -o - | head -c 1000 >/dev/null; exit 0", d.join("ftrec").display()))
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!((before("trace_clock"), before("events/sched/enable"), before("tracing_on")), (clock, sched, on));
    let _ = std::fs::remove_dir(&inst);
}

/// kill -9 of the recorder mid-run: the file it leaves prints every whole
/// page that reached it, says it is cut short, and converts.
#[test]
fn stream_cut_by_kill_reads_up_to_the_cut() {
    let Some(_g) = live("stream_cut_by_kill_reads_up_to_the_cut") else { return };
    let d = scratch("kill");
    let f = d.join("cut.dat");
    // A small buffer: the readers wake (and write) often.
    let mut rec = spawn_recorder(&d, &["--private", "-b", "64", "-e", "sched", "-e", "syscalls", "-o", f.to_str().unwrap()], Stdio::null());
    churn(2000);
    rec.kill().unwrap();
    let _ = rec.wait();
    std::thread::sleep(Duration::from_millis(300));
    remove_instance_of(rec.id());
    let (code, text, err) = run(&d.join("ftcat"), &[f.to_str().unwrap()], None);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("cut short"), "{err}");
    assert!(events(&text).len() > 100, "{} events", events(&text).len());
    // trace-cmd reads the saved pages as ftcat read them from the cut file.
    let saved = d.join("saved.dat");
    let (c, _, e) = run(&d.join("ftcat"), &["--save", saved.to_str().unwrap(), f.to_str().unwrap()], None);
    assert_eq!(c, 1, "{e}");
    let (_, tc_text, _) = run(&d.join("ftcat"), &["--style", "trace-cmd", f.to_str().unwrap()], None);
    if let Some(tc) = trace_cmd_counts(&saved) {
        assert_eq!(tc, counts(&events(&tc_text)));
    }
}

/// A full disk (a 5 MB tmpfs): ftrec says where it stopped, the file
/// keeps every page before, ftcat prints them; on a filesystem already
/// full nothing readable is left, so the file it created is removed.
#[test]
fn stream_disk_full_keeps_what_fits() {
    let Some(_g) = live("stream_disk_full_keeps_what_fits") else { return };
    let d = scratch("full");
    let mnt = d.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let m = Command::new("mount").args(["-t", "tmpfs", "-o", "size=5m", "tmpfs"]).arg(&mnt).status().unwrap();
    if !m.success() {
        eprintln!("stream_disk_full_keeps_what_fits: skipped (cannot mount a tmpfs)");
        return;
    }
    struct Umount(PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Umount(mnt.clone());
    let f = mnt.join("full.dat");
    let rec = spawn_recorder(&d, &["--private", "-e", "sched", "-e", "syscalls", "-d", "10", "-o", f.to_str().unwrap()], Stdio::null());
    let churner = std::thread::spawn(|| churn(4000));
    let o = rec.wait_with_output().unwrap();
    churner.join().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let size = std::fs::metadata(&f).unwrap().len();
    assert!(err.contains(&format!("disk full at offset {size}")), "{err}");
    let (code, text, e) = run(&d.join("ftcat"), &[f.to_str().unwrap()], None);
    assert_eq!(code, 1, "{e}");
    assert!(e.contains("cut short"), "{e}");
    assert!(events(&text).len() > 100);
    let g = mnt.join("nothing.dat");
    let (code, _, e) = run(&d.join("ftrec"), &["--private", "-e", "sched", "-d", "1", "-o", g.to_str().unwrap()], None);
    assert_eq!(code, 1, "{e}");
    assert!(!g.exists(), "{e}");
}
