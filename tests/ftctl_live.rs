//! ftctl against the running kernel, through an argv[0] symlink: every verb
//! on a private instance (one per test, so tests run in parallel), and on the
//! top level in one serialized test that snapshots the top level first and
//! puts it back afterwards. The control files are read back after each
//! command. Skipped, with a message, without root or tracefs.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

fn ftctl() -> &'static PathBuf {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("ftbox-ftctl-live-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let o = Command::new(ftbox()).arg("--install").arg("-s").arg(&d).output().unwrap();
        assert!(o.status.success(), "install: {}", String::from_utf8_lossy(&o.stderr));
        d.join("ftctl")
    })
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(ftctl()).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// Run and insist on success; stdout.
fn ok(args: &[&str]) -> String {
    let (c, out, err) = run(args);
    assert_eq!(c, 0, "ftctl {args:?} failed: {err}");
    out
}

/// Run and insist on failure with `code`; stderr.
fn fails(code: i32, args: &[&str]) -> String {
    let (c, out, err) = run(args);
    assert_eq!(c, code, "ftctl {args:?}: expected exit {code}, got {c}; out={out} err={err}");
    err
}

/// Where tracefs is, or None (with the reason printed) when these tests
/// cannot run here.
fn tracefs() -> Option<&'static Path> {
    static T: OnceLock<Option<PathBuf>> = OnceLock::new();
    T.get_or_init(|| {
        if !rustix::process::geteuid().is_root() {
            println!("skipped: live ftctl tests need root");
            return None;
        }
        let (c, out, err) = run(&["mount"]);
        if c != 0 {
            println!("skipped: no tracefs: {err}");
            return None;
        }
        Some(PathBuf::from(out.trim()))
    })
    .as_deref()
}

/// Instance tests share the machine with `reset -a`, which removes every
/// instance: they hold this for reading, that test for writing.
static INSTANCES: RwLock<()> = RwLock::new(());
/// The top level is changed by one test at a time.
static TOP: Mutex<()> = Mutex::new(());

const PREFIX: &str = "ftctl-test-";

/// A private instance, removed on drop.
struct Inst {
    name: String,
    dir: PathBuf,
    _guard: std::sync::RwLockReadGuard<'static, ()>,
}

impl Inst {
    fn new(tag: &str) -> Option<Inst> {
        let t = tracefs()?;
        let guard = INSTANCES.read().unwrap_or_else(|e| e.into_inner());
        let name = format!("{PREFIX}{tag}-{}", std::process::id());
        let dir = t.join("instances").join(&name);
        let _ = std::fs::remove_dir(&dir);
        ok(&["instance", "add", &name]);
        assert!(dir.is_dir());
        Some(Inst { name, dir, _guard: guard })
    }

    /// ftctl -B this ARGS...
    fn args<'a>(&'a self, a: &[&'a str]) -> Vec<&'a str> {
        let mut v = vec!["-B", self.name.as_str()];
        v.extend_from_slice(a);
        v
    }

    fn ok(&self, a: &[&str]) -> String {
        ok(&self.args(a))
    }

    fn fails(&self, code: i32, a: &[&str]) -> String {
        fails(code, &self.args(a))
    }

    fn file(&self, rel: &str) -> String {
        std::fs::read_to_string(self.dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }
}

impl Drop for Inst {
    fn drop(&mut self) {
        support::remove_instance(&self.dir);
    }
}

fn enabled(i: &Inst, ev: &str) -> bool {
    i.file(&format!("events/{ev}/enable")).trim() == "1"
}

#[test]
fn on_off_tracer() {
    let Some(i) = Inst::new("onoff") else { return };
    i.ok(&["off"]);
    assert_eq!(i.file("tracing_on"), "0\n");
    i.ok(&["on"]);
    assert_eq!(i.file("tracing_on"), "1\n");
    assert_eq!(i.ok(&["tracer"]), "nop\n");
    i.ok(&["tracer", "nop"]);
    assert_eq!(i.file("current_tracer"), "nop\n");
    if std::fs::write(i.dir.join("current_tracer"), "function").is_err() {
        // This kernel refuses function tracing: said so, not "needs root".
        let err = i.fails(1, &["tracer", "function"]);
        assert!(err.contains("refuses function tracing") && !err.contains("needs root"), "{err}");
        assert_eq!(i.file("current_tracer"), "nop\n");
    } else {
        let _ = std::fs::write(i.dir.join("current_tracer"), "nop");
    }
    let err = i.fails(1, &["tracer", "nosuchtracer"]);
    assert!(err.contains("unknown tracer 'nosuchtracer'") && err.contains("nop"), "{err}");
}

#[test]
fn enable_disable_forms() {
    let Some(i) = Inst::new("enable") else { return };
    i.ok(&["enable", "sched:sched_switch"]);
    assert!(enabled(&i, "sched/sched_switch"));
    assert_eq!(i.file("set_event"), "sched:sched_switch\n");
    i.ok(&["enable", "sched/sched_wakeup", "sched_waking"]);
    assert!(enabled(&i, "sched/sched_wakeup") && enabled(&i, "sched/sched_waking"));
    i.ok(&["enable", "irq:irq_handler_*"]);
    assert!(enabled(&i, "irq/irq_handler_entry") && enabled(&i, "irq/irq_handler_exit"));
    i.ok(&["disable", "irq"]);
    assert_eq!(i.file("events/irq/enable").trim(), "0");
    i.ok(&["enable", "sched"]);
    assert_eq!(i.file("events/sched/enable").trim(), "1");
    i.ok(&["disable", "sched:*"]);
    assert_eq!(i.file("events/sched/enable").trim(), "0");
    assert_eq!(i.file("set_event"), "");
    i.ok(&["enable", "all"]);
    assert_eq!(i.file("events/enable").trim(), "1");
    i.ok(&["disable", "all"]);
    assert_eq!(i.file("events/enable").trim(), "0");
    assert_eq!(i.file("set_event"), "");

    // Unknown: exit 1, named, with a suggestion; nothing enabled.
    let err = i.fails(1, &["enable", "sched_swich"]);
    assert!(err.contains("unknown event 'sched_swich'") && err.contains("sched:sched_switch"), "{err}");
    let err = i.fails(1, &["enable", "sched:sched_switch", "nosuchsys:foo"]);
    assert!(err.contains("unknown event 'nosuchsys:foo'"), "{err}");
    assert!(!enabled(&i, "sched/sched_switch"), "nothing is enabled when one name is unknown");
    // The ftrace system's events have no switch.
    let err = i.fails(1, &["enable", "ftrace:print"]);
    assert!(err.contains("ftrace:print cannot be enabled"), "{err}");
    let err = i.fails(1, &["enable", "ftrace"]);
    assert!(err.contains("cannot be enabled"), "{err}");
}

#[test]
fn names_with_dots_or_slashes_refused_before_writing() {
    let Some(i) = Inst::new("names") else { return };
    let before = i.file("tracing_on");
    for bad in ["../tracing_on", "sched/../../tracing_on", "sched:..", "a/b/c", "..", "sched\x01"] {
        let err = i.fails(1, &["enable", bad]);
        assert!(err.contains("invalid"), "{bad}: {err}");
        let err = i.fails(1, &["filter", bad, "common_pid == 1"]);
        assert!(err.contains("invalid"), "{bad}: {err}");
        let err = i.fails(1, &["option", bad, "on"]);
        assert!(err.contains("invalid") || err.contains("unknown option"), "{bad}: {err}");
    }
    assert_eq!(i.file("tracing_on"), before);
    assert_eq!(i.file("set_event"), "");
    // An instance name that walks out is refused before a directory is made.
    let t = tracefs().unwrap();
    let list = |p: &Path| {
        let mut v: Vec<_> = std::fs::read_dir(p).unwrap().map(|e| e.unwrap().file_name()).collect();
        v.sort();
        v
    };
    let top_before = list(t);
    let err = fails(1, &["instance", "add", "../evil"]);
    assert!(err.contains("invalid instance name"), "{err}");
    let err = fails(1, &["-B", "../..", "on"]);
    assert!(err.contains("invalid instance name"), "{err}");
    assert_eq!(list(t), top_before);
    assert!(!t.join("instances/evil").exists());
}

#[test]
fn filters() {
    let Some(i) = Inst::new("filter") else { return };
    i.ok(&["filter", "sched:sched_switch", "prev_pid == 1"]);
    assert_eq!(i.file("events/sched/sched_switch/filter"), "prev_pid == 1\n");
    // The expression may come in pieces.
    i.ok(&["filter", "sched_wakeup", "pid", ">", "100"]);
    assert_eq!(i.file("events/sched/sched_wakeup/filter"), "pid > 100\n");
    i.ok(&["filter", "sched_switch", "--clear"]);
    assert_eq!(i.file("events/sched/sched_switch/filter"), "none\n");
    // A whole system at once.
    i.ok(&["filter", "irq", "common_pid != 0"]);
    assert_eq!(i.file("events/irq/irq_handler_entry/filter"), "common_pid != 0\n");
    i.ok(&["filter", "irq", "--clear"]);
    assert_eq!(i.file("events/irq/irq_handler_entry/filter"), "none\n");

    // A syntax error: exit 1 and the kernel's error_log text for it.
    let err = i.fails(1, &["filter", "sched_switch", "prev_pid >< 3"]);
    assert!(err.contains("Invalid argument"), "{err}");
    assert!(err.contains("event filter parse error") && err.contains("Command: prev_pid >< 3"), "{err}");
    // Only the entry for this command, not older ones.
    let err2 = i.fails(1, &["filter", "sched_switch", "no_such_field == 1"]);
    assert!(err2.contains("Field not found") && !err2.contains("><"), "{err2}");
    // Unbalanced parentheses (refused with ENOENT on some kernels): the
    // file is there, so no "does not have that control file"; the
    // kernel's error_log entry or a hint about the value instead.
    let err3 = i.fails(1, &["filter", "sched_switch", "((prev_pid == 1"]);
    assert!(!err3.contains("does not have"), "{err3}");
    assert!(err3.contains("parse error") || err3.contains("refused what was written"), "{err3}");
    let err = i.fails(2, &["filter", "sched_switch"]);
    assert!(err.contains("--clear"), "{err}");
}

#[test]
fn triggers() {
    let Some(i) = Inst::new("trigger") else { return };
    let f = "events/sched/sched_process_free/trigger";
    let lines = |i: &Inst| -> Vec<String> {
        i.file(f).lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(String::from).collect()
    };
    i.ok(&["trigger", "sched_process_free", "traceoff"]);
    assert_eq!(lines(&i), ["traceoff:unlimited"]);
    i.ok(&["trigger", "sched_process_free", "--remove", "traceoff"]);
    assert!(lines(&i).is_empty());
    i.ok(&["trigger", "sched_process_free", "stacktrace:5", "if", "pid", "==", "1"]);
    i.ok(&["trigger", "sched_process_free", "enable_event:irq:irq_handler_entry"]);
    assert_eq!(lines(&i).len(), 2, "{:?}", lines(&i));
    i.ok(&["trigger", "sched_process_free", "--clear"]);
    assert!(lines(&i).is_empty(), "{:?}", lines(&i));
    let err = i.fails(1, &["trigger", "sched_process_free", "nosuchtrigger"]);
    assert!(err.contains("Invalid argument") && err.contains("triggers this kernel knows"), "{err}");
    i.fails(2, &["trigger", "sched_process_free", "traceoff", "--clear"]);
}

#[test]
fn function_filters_refused_clearly() {
    let Some(i) = Inst::new("funcs") else { return };
    let permitted = std::fs::read_to_string(i.dir.join("set_ftrace_filter")).is_ok();
    if permitted {
        // A kernel that allows function tracing: the lists are written.
        i.ok(&["funcs", "--filter", "schedule", "--notrace", "kfree"]);
        assert!(i.file("set_ftrace_filter").contains("schedule"));
        assert!(i.file("set_ftrace_notrace").contains("kfree"));
        i.ok(&["funcs", "--clear"]);
        let err = i.fails(1, &["funcs", "--filter", "no_such_function_xyz"]);
        assert!(err.contains("no function matches 'no_such_function_xyz'"), "{err}");
        return;
    }
    for args in [
        &["funcs", "--filter", "schedule"][..],
        &["funcs", "--notrace", "kfree"],
        &["funcs", "--clear"],
        &["funcs"],
    ] {
        let err = i.fails(1, args);
        assert!(err.contains("Operation not permitted") && err.contains("refuses function tracing"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let err = fails(1, &["list", "functions"]);
    assert!(err.contains("refuses function tracing"), "{err}");
    if !i.dir.join("set_graph_function").exists() {
        let err = i.fails(1, &["funcs", "--graph", "schedule"]);
        assert!(err.contains("no set_graph_function"), "{err}");
        let err = i.fails(1, &["funcs", "--depth", "3"]);
        assert!(err.contains("max_graph_depth"), "{err}");
    }
    i.fails(2, &["funcs", "--depth", "x"]);
}

#[test]
fn pids() {
    let Some(i) = Inst::new("pid") else { return };
    i.ok(&["pid", "1", "2"]);
    let mut v: Vec<String> = i.file("set_event_pid").split_whitespace().map(String::from).collect();
    v.sort();
    assert_eq!(v, ["1", "2"]);
    let out = i.ok(&["pid"]);
    assert!(out.contains("set_event_pid: 1 2") || out.contains("set_event_pid: 2 1"), "{out}");
    i.ok(&["pid", "--follow"]);
    assert_eq!(i.file("options/event-fork"), "1\n");
    assert_eq!(i.file("set_event_pid").split_whitespace().count(), 2, "--follow alone keeps the list");
    i.ok(&["pid", "3", "--follow"]);
    assert_eq!(i.file("set_event_pid").trim(), "3");
    i.ok(&["pid", "--clear"]);
    assert_eq!(i.file("set_event_pid"), "");
    assert_eq!(i.file("options/event-fork"), "0\n");
    i.fails(2, &["pid", "abc"]);
}

#[test]
fn buffer_subbuf_clock_option() {
    let Some(i) = Inst::new("knobs") else { return };
    i.ok(&["buffer", "512"]);
    // The kernel rounds up to whole sub-buffers (with their headers).
    let kb: u32 = i.file("buffer_size_kb").trim().parse().unwrap();
    assert!((512..=520).contains(&kb), "{kb}");
    assert_eq!(i.ok(&["buffer"]), format!("{kb}\n"));
    i.fails(2, &["buffer", "lots"]);
    i.fails(2, &["buffer", "0"]);
    if i.dir.join("buffer_subbuf_size_kb").exists() {
        i.ok(&["subbuf", "8"]);
        assert_eq!(i.file("buffer_subbuf_size_kb"), "8\n");
        assert_eq!(i.ok(&["subbuf"]), "8\n");
        i.ok(&["subbuf", "4"]);
        assert_eq!(i.file("buffer_subbuf_size_kb"), "4\n");
    }
    i.ok(&["clock", "global"]);
    assert!(i.file("trace_clock").contains("[global]"));
    assert_eq!(i.ok(&["clock"]), "global\n");
    let err = i.fails(1, &["clock", "sundial"]);
    assert!(err.contains("unknown clock 'sundial'") && err.contains("local"), "{err}");
    i.ok(&["option", "raw", "on"]);
    assert_eq!(i.file("options/raw"), "1\n");
    assert_eq!(i.ok(&["option", "raw"]), "on\n");
    let all = i.ok(&["option"]);
    assert!(all.contains("raw on  (changed)") && all.contains("overwrite on\n"), "{all}");
    i.ok(&["option", "raw", "off"]);
    assert_eq!(i.file("options/raw"), "0\n");
    let err = i.fails(1, &["option", "nosuchoption", "on"]);
    assert!(err.contains("unknown option 'nosuchoption'"), "{err}");
    i.fails(2, &["option", "raw", "maybe"]);
}

#[test]
fn mark_and_show() {
    let Some(i) = Inst::new("show") else { return };
    let text = format!("ftctl-mark-{}", std::process::id());
    i.ok(&["mark", &text, "two words"]);
    let out = i.ok(&["show"]);
    assert!(out.contains(&format!("tracing_mark_write: {text} two words\n")), "{out}");
    // Per CPU: the mark is in exactly one CPU's buffer.
    let ncpu = std::fs::read_dir(i.dir.join("per_cpu")).unwrap().count();
    let hits = (0..ncpu).filter(|c| i.ok(&["show", "--cpu", &c.to_string()]).contains(&text)).count();
    assert_eq!(hits, 1);
    let err = i.fails(1, &["show", "--cpu", "9999"]);
    assert!(err.contains("no such CPU"), "{err}");
    i.fails(2, &["show", "--pipe", "--snapshot"]);
    // Off: the kernel refuses markers, and says why.
    i.ok(&["off"]);
    let err = i.fails(1, &["mark", "x"]);
    assert!(err.contains("tracing is off"), "{err}");
    i.ok(&["on"]);

    // --pipe consumes and follows: start it, then mark, then see the line.
    let mut child = Command::new(ftctl())
        .args(["-B", &i.name, "show", "--pipe"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let piped = format!("piped-{text}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut got = Vec::new();
    while Instant::now() < deadline && !String::from_utf8_lossy(&got).contains(&piped) {
        i.ok(&["mark", &piped]);
        if let Ok(b) = rx.recv_timeout(Duration::from_millis(300)) {
            got.extend(b);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let _ = reader.join();
    assert!(String::from_utf8_lossy(&got).contains(&piped), "{}", String::from_utf8_lossy(&got));
    // Consumed: the first mark is gone from the buffer.
    assert!(!i.ok(&["show"]).contains(&format!("{text} two words")));
}

#[test]
fn snapshots() {
    let Some(i) = Inst::new("snap") else { return };
    if !i.dir.join("snapshot").exists() {
        for op in ["take", "clear", "free"] {
            let err = i.fails(1, &["snapshot", op]);
            assert!(err.contains("no snapshot buffer"), "{err}");
        }
        let err = i.fails(1, &["show", "--snapshot"]);
        assert!(err.contains("no snapshot buffer"), "{err}");
    } else {
        i.ok(&["mark", "before-snapshot"]);
        i.ok(&["snapshot", "take"]);
        assert!(i.ok(&["show", "--snapshot"]).contains("before-snapshot"));
        i.ok(&["snapshot", "clear"]);
        assert!(!i.ok(&["show", "--snapshot"]).contains("before-snapshot"));
        i.ok(&["snapshot", "free"]);
    }
    i.fails(2, &["snapshot", "keep"]);
}

#[test]
fn format_and_lists() {
    let Some(i) = Inst::new("list") else { return };
    let f = i.ok(&["format", "sched_switch"]);
    assert!(f.starts_with("name: sched_switch\nID: "), "{f}");
    assert_eq!(f, i.file("events/sched/sched_switch/format"));
    let err = i.fails(1, &["format", "nosuch_event_zz"]);
    assert!(err.contains("unknown event 'nosuch_event_zz'"), "{err}");
    let l = i.ok(&["list", "events", "sched:sched_sw*"]);
    assert!(l.lines().any(|x| x == "sched:sched_switch"), "{l}");
    assert!(l.lines().all(|x| x.starts_with("sched:sched_sw")), "{l}");
    let all = i.ok(&["list", "events"]);
    assert!(all.lines().count() > 100);
    assert!(i.ok(&["list", "systems"]).lines().any(|x| x == "sched"));
    assert!(i.ok(&["list", "tracers"]).lines().any(|x| x == "nop"));
    assert!(i.ok(&["list", "clocks"]).lines().any(|x| x == "local"));
    assert!(i.ok(&["list", "options"]).lines().any(|x| x == "overwrite on"));
    assert!(ok(&["list", "instances"]).lines().any(|x| x == i.name));
    i.fails(2, &["list", "nonsense"]);
    i.fails(2, &["list", "tracers", "x*"]);
}

#[test]
fn status_then_reset() {
    let Some(i) = Inst::new("reset") else { return };
    i.ok(&["enable", "sched", "irq:irq_handler_entry"]);
    i.ok(&["filter", "sched_switch", "prev_pid == 7"]);
    i.ok(&["trigger", "sched_process_free", "stacktrace"]);
    i.ok(&["pid", "1", "--follow"]);
    i.ok(&["clock", "global"]);
    i.ok(&["option", "raw", "on"]);
    i.ok(&["off"]);
    let _ = i.fails(1, &["filter", "sched_wakeup", "bad >< expr"]);
    let _ = i.fails(1, &["filter", "sched_wakeup", "bad >< expr"]);
    let s = i.ok(&["status"]);
    // The newest command's entry once, with a count.
    assert_eq!(s.matches("Command: bad >< expr").count(), 1, "{s}");
    assert!(s.contains("(logged 2 times in a row)"), "{s}");
    for want in [
        &format!("Instance: {}\n", i.name)[..],
        "Tracer: nop\n",
        "Tracing: off\n",
        "Events:\n  irq:irq_handler_entry\n  sched:*\n",
        "Event filters:\n  sched:sched_switch: prev_pid == 7\n",
        "Event triggers:\n  sched:sched_process_free: stacktrace:unlimited\n",
        "Pid filters:\n  set_event_pid: 1\n",
        "Buffer size per CPU (KiB): ",
        "Sub-buffer size (KiB): ",
        "Clock: global\n",
        "Options changed from defaults:\n",
        "  event-fork on\n",
        "  raw on\n",
        "Last error_log entry:\n",
        "Command: bad >< expr",
    ] {
        assert!(s.contains(want), "status lacks {want:?}:\n{s}");
    }
    assert!(!s.contains("sched:sched_wakeup:"), "a rejected filter is not a filter:\n{s}");
    i.ok(&["reset"]);
    assert_eq!(i.file("tracing_on"), "1\n");
    assert_eq!(i.file("current_tracer"), "nop\n");
    assert_eq!(i.file("set_event"), "");
    assert_eq!(i.file("events/sched/sched_switch/filter"), "none\n");
    assert!(!i.file("events/sched/sched_process_free/trigger").contains("stacktrace:"));
    assert_eq!(i.file("set_event_pid"), "");
    assert!(i.file("trace_clock").contains("[local]"));
    assert_eq!(i.file("options/raw"), "0\n");
    assert_eq!(i.file("options/event-fork"), "0\n");
    assert_eq!(i.file("error_log"), "");
    let s = i.ok(&["status"]);
    for gone in ["Events:", "Event filters:", "Event triggers:", "Pid filters:", "Options changed", "error_log"] {
        assert!(!s.contains(gone), "after reset, status still shows {gone}:\n{s}");
    }
    fails(2, &["-B", &i.name, "reset", "-a"]);
}

#[test]
fn instances_and_mount() {
    let Some(t) = tracefs() else { return };
    let _g = INSTANCES.read().unwrap_or_else(|e| e.into_inner());
    let name = format!("{PREFIX}inst-{}", std::process::id());
    ok(&["instance", "add", &name]);
    assert!(t.join("instances").join(&name).is_dir());
    let err = fails(1, &["instance", "add", &name]);
    assert!(err.contains("already exists"), "{err}");
    ok(&["instance", "rm", &name]);
    assert!(!t.join("instances").join(&name).exists());
    let err = fails(1, &["instance", "rm", &name]);
    assert!(err.contains("no such instance"), "{err}");
    let err = fails(1, &["-B", &name, "status"]);
    assert!(err.contains(&format!("instance '{name}' does not exist")), "{err}");
    fails(2, &["-B", "x", "instance", "add", "y"]);
    fails(2, &["instance", "make", "y"]);
    assert_eq!(ok(&["mount"]).trim(), t.to_str().unwrap());
}

// ---- the top level ----

/// What the top-level test changes, read before and written back after.
/// (The ring buffer's contents and error_log cannot be put back: reset
/// clears them.)
struct TopState {
    root: PathBuf,
    files: Vec<(String, String)>,
    options: Vec<(String, String)>,
    events: String,
    /// Event filters and triggers that were set: (event dir, text).
    filters: Vec<(PathBuf, String)>,
    triggers: Vec<(PathBuf, String)>,
}

/// Every event directory under `events/`.
fn event_dirs(root: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for sys in std::fs::read_dir(root.join("events")).unwrap().flatten() {
        if sys.path().is_dir() {
            v.extend(std::fs::read_dir(sys.path()).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()));
        }
    }
    v
}

const EV: &str = "events/sched/sched_process_free";

impl TopState {
    fn save(root: &Path) -> TopState {
        let rd = |f: &str| std::fs::read_to_string(root.join(f)).unwrap_or_default();
        let files = ["tracing_on", "current_tracer", "trace_clock", "buffer_subbuf_size_kb", "set_event_pid", "tracing_cpumask"]
            .iter()
            .map(|f| (f.to_string(), rd(f)))
            .collect();
        let mut options = Vec::new();
        for e in std::fs::read_dir(root.join("options")).unwrap() {
            let n = e.unwrap().file_name().into_string().unwrap();
            let v = rd(&format!("options/{n}"));
            options.push((n, v));
        }
        let (mut filters, mut triggers) = (Vec::new(), Vec::new());
        for d in event_dirs(root) {
            if let Ok(f) = std::fs::read_to_string(d.join("filter")) {
                if f.trim() != "none" && !f.contains("parse_error") {
                    filters.push((d.clone(), f.trim().to_string()));
                }
            }
            if let Ok(t) = std::fs::read_to_string(d.join("trigger")) {
                for l in t.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
                    // Back to the syntax that adds it: "traceoff:count=3" -> "traceoff:3".
                    let add = l.trim_end_matches(" [active]").replace(":unlimited", "").replace(":count=", ":");
                    triggers.push((d.clone(), add));
                }
            }
        }
        TopState { root: root.to_path_buf(), files, options, events: rd("set_event"), filters, triggers }
    }

    fn restore(&self) {
        let wr = |f: &str, v: &str| {
            let _ = std::fs::write(self.root.join(f), v);
        };
        for (n, v) in &self.options {
            if std::fs::read_to_string(self.root.join("options").join(n)).ok().as_deref() != Some(v.as_str()) {
                wr(&format!("options/{n}"), v.trim());
            }
        }
        for (f, v) in &self.files {
            let v = match f.as_str() {
                "trace_clock" => v.split_whitespace().find(|c| c.starts_with('[')).unwrap_or("[local]").trim_matches(['[', ']']),
                _ => v.trim(),
            };
            wr(f, v);
        }
        wr(&format!("{EV}/filter"), "0");
        let _ = std::fs::OpenOptions::new().append(true).open(self.root.join(format!("{EV}/trigger"))).and_then(|mut f| {
            use std::io::Write;
            f.write_all(b"!traceoff")
        });
        for (d, f) in &self.filters {
            let _ = std::fs::write(d.join("filter"), f);
        }
        for (d, t) in &self.triggers {
            let _ = std::fs::OpenOptions::new().append(true).open(d.join("trigger")).and_then(|mut f| {
                use std::io::Write;
                f.write_all(t.as_bytes())
            });
        }
        wr("events/enable", "0");
        for l in self.events.lines() {
            let _ = std::fs::OpenOptions::new().append(true).open(self.root.join("set_event")).and_then(|mut f| {
                use std::io::Write;
                f.write_all(l.as_bytes())
            });
        }
    }
}

/// Restores the top level even when an assertion fails half-way.
struct Restore(TopState);

impl Drop for Restore {
    fn drop(&mut self) {
        self.0.restore();
    }
}

#[test]
fn top_level_every_verb() {
    let Some(t) = tracefs() else { return };
    let _g = TOP.lock().unwrap_or_else(|e| e.into_inner());
    let saved = TopState::save(t);
    let before_events = saved.events.clone();
    let _restore = Restore(saved);
    let rd = |f: &str| std::fs::read_to_string(t.join(f)).unwrap();

    let s = ok(&["status"]);
    assert!(s.starts_with("Tracer: ") && s.contains("\nClock: "), "{s}");
    assert!(!s.contains("Instance:"));
    ok(&["off"]);
    assert_eq!(rd("tracing_on"), "0\n");
    ok(&["on"]);
    assert_eq!(rd("tracing_on"), "1\n");
    ok(&["tracer", "nop"]);
    assert_eq!(rd("current_tracer"), "nop\n");
    ok(&["enable", "sched_process_free"]);
    assert_eq!(rd(&format!("{EV}/enable")), "1\n");
    ok(&["filter", "sched_process_free", "pid == 4242"]);
    assert_eq!(rd(&format!("{EV}/filter")), "pid == 4242\n");
    // Conditional on a pid that does not exist, so it never stops tracing.
    ok(&["trigger", "sched_process_free", "traceoff", "if", "pid", "==", "4242"]);
    assert!(rd(&format!("{EV}/trigger")).contains("traceoff:unlimited if pid == 4242"));
    let s = ok(&["status"]);
    assert!(s.contains("sched:sched_process_free: pid == 4242") && s.contains("sched:sched_process_free: traceoff"), "{s}");
    ok(&["trigger", "sched_process_free", "--clear"]);
    ok(&["filter", "sched_process_free", "--clear"]);
    assert_eq!(rd(&format!("{EV}/filter")), "none\n");
    ok(&["disable", "sched_process_free"]);
    assert_eq!(rd(&format!("{EV}/enable")), "0\n");
    ok(&["option", "sym-offset", "on"]);
    assert_eq!(rd("options/sym-offset"), "1\n");
    assert!(ok(&["status"]).contains("  sym-offset on\n"));
    ok(&["option", "sym-offset", "off"]);
    ok(&["clock", "global"]);
    assert!(rd("trace_clock").contains("[global]"));
    ok(&["clock", "local"]);
    assert!(!ok(&["buffer"]).is_empty());
    if t.join("buffer_subbuf_size_kb").exists() {
        assert_eq!(ok(&["subbuf"]), rd("buffer_subbuf_size_kb"));
    }
    let me = std::process::id().to_string();
    ok(&["pid", &me]);
    assert_eq!(rd("set_event_pid").trim(), me);
    ok(&["pid", "--clear"]);
    assert_eq!(rd("set_event_pid"), "");
    let text = format!("ftctl-top-mark-{me}");
    ok(&["mark", &text]);
    assert!(ok(&["show"]).contains(&text));
    let err = fails(1, &["funcs", "--filter", "schedule"]);
    assert!(err.contains("set_ftrace_filter"), "{err}");

    // reset: back to defaults, then the saved state is put back by Restore.
    ok(&["enable", "sched_process_free"]);
    ok(&["option", "sym-offset", "on"]);
    ok(&["clock", "global"]);
    ok(&["off"]);
    ok(&["reset"]);
    assert_eq!(rd("tracing_on"), "1\n");
    assert_eq!(rd("current_tracer"), "nop\n");
    assert_eq!(rd("set_event"), "");
    assert_eq!(rd("options/sym-offset"), "0\n");
    assert!(rd("trace_clock").contains("[local]"));
    assert!(!ok(&["show"]).contains(&text), "reset clears the buffer");
    drop(_restore);
    assert_eq!(rd("set_event"), before_events, "top level restored");
}

/// `reset -a` removes every instance on the machine, so it only runs when
/// no instance but ours exists (CI); on a shared machine it says why not.
#[test]
fn reset_all_removes_instances() {
    let Some(t) = tracefs() else { return };
    let _top = TOP.lock().unwrap_or_else(|e| e.into_inner());
    let _all = INSTANCES.write().unwrap_or_else(|e| e.into_inner());
    let foreign: Vec<String> = std::fs::read_dir(t.join("instances"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with(PREFIX))
        .collect();
    if !foreign.is_empty() {
        println!("skipped: reset -a would remove other users' instances: {}", foreign.join(", "));
        return;
    }
    let saved = TopState::save(t);
    let _restore = Restore(saved);
    let names: Vec<String> = (0..2).map(|k| format!("{PREFIX}all{k}-{}", std::process::id())).collect();
    for n in &names {
        ok(&["instance", "add", n]);
    }
    ok(&["reset", "-a"]);
    for n in &names {
        assert!(!t.join("instances").join(n).exists(), "{n} still there");
    }
    assert_eq!(ok(&["list", "instances"]), "");
}
