//! ftrec end to end: the real binary records on this machine and two
//! independent readers — Debian's `trace-cmd report` (the oracle) and ftcat
//! (once it decodes) — must read every file and agree on the number of
//! records of each event type. Live tests need root and tracefs and skip
//! with a message otherwise. Tests that touch the top level take TOP so they
//! never overlap (tests in one binary run in parallel).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

static TOP: Mutex<()> = Mutex::new(());
const T: &str = "/sys/kernel/tracing";

fn top_lock() -> std::sync::MutexGuard<'static, ()> {
    TOP.lock().unwrap_or_else(|e| e.into_inner())
}

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// A scratch dir with ftrec/ftcat links to the binary.
fn scratch(tag: &str) -> PathBuf {
    scratch_with(tag, &ftbox())
}

/// A scratch directory whose applets run `bin`.
fn scratch_with(tag: &str, bin: &Path) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ftrec-test-{}-{}", tag, std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    for a in ["ftrec", "ftcat"] {
        std::os::unix::fs::symlink(bin, d.join(a)).unwrap();
    }
    d
}

/// `--compression zstd` is not in the default binary (feature zstd-write,
/// `make full`): this test build's own binary, built with it (`make test`
/// passes --features zstd-write).
#[cfg(feature = "zstd-write")]
fn full() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ftbox"))
}

fn live(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root || !Path::new(T).join("trace").exists() {
        eprintln!("{test}: skipped (needs root and tracefs at {T})");
        return false;
    }
    true
}

fn run(exe: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(exe).args(args).output().unwrap();
    (o.status.code().unwrap_or(-1), String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// Per-event record counts from text where each record line has a
/// `SECONDS.FRACTION:` timestamp token followed by `event_name:` — true of
/// the kernel's `trace` file, `trace-cmd report` and ftcat alike.
fn count_events(text: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        for (i, t) in toks.iter().enumerate() {
            let Some(ts) = t.strip_suffix(':') else { continue };
            if ts.contains('.') && ts.parse::<f64>().is_ok() && i >= 2 {
                if let Some(ev) = toks.get(i + 1).and_then(|e| e.strip_suffix(':')) {
                    *m.entry(ev.to_string()).or_insert(0) += 1;
                }
                break;
            }
        }
    }
    m
}

/// Counts by `trace-cmd report`; None (with a message) when it is missing.
fn trace_cmd_counts(file: &Path) -> Option<BTreeMap<String, usize>> {
    let o = match Command::new("trace-cmd").arg("report").arg("-i").arg(file).stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(_) => {
            eprintln!("trace-cmd not installed: oracle comparison skipped");
            return None;
        }
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "trace-cmd report -i {}: {err}", file.display());
    assert!(!err.contains("error") && !err.contains("failed"), "trace-cmd report complained: {err}");
    Some(count_events(&String::from_utf8_lossy(&o.stdout)))
}

/// Counts by `ftcat --stat` (its EVENT table: `system:name  records`);
/// None (with a message) while ftcat cannot decode yet.
fn ftcat_counts(dir: &Path, file: &Path) -> Option<BTreeMap<String, usize>> {
    let o = Command::new(dir.join("ftcat")).arg("--stat").arg(file).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    if !o.status.success() && (err.contains("not implemented") || o.status.code() == Some(2)) {
        eprintln!("ftcat cannot read trace.dat yet: ftcat comparison skipped ({})", err.trim());
        return None;
    }
    assert!(o.status.success(), "ftcat --stat {}: {err}", file.display());
    let text = String::from_utf8_lossy(&o.stdout);
    let mut m = BTreeMap::new();
    for line in text.lines().skip_while(|l| !l.starts_with("EVENT")).skip(1).take_while(|l| !l.trim().is_empty()) {
        let mut it = line.split_whitespace();
        if let (Some(ev), Some(n)) = (it.next(), it.next().and_then(|n| n.parse::<usize>().ok())) {
            let name = ev.rsplit(':').next().unwrap_or(ev);
            *m.entry(name.to_string()).or_insert(0) += n;
        }
    }
    Some(m)
}

/// Both readers agree; returns the counts.
fn check_file(dir: &Path, file: &Path) -> BTreeMap<String, usize> {
    let tc = trace_cmd_counts(file);
    let fc = ftcat_counts(dir, file);
    if let (Some(a), Some(b)) = (&tc, &fc) {
        assert_eq!(a, b, "trace-cmd and ftcat disagree on {}", file.display());
    }
    tc.or(fc).unwrap_or_default()
}

/// Everything at the top level a recording could change: the control files,
/// options/*, set_event and the sched events' filters and triggers. Dynamic
/// content (buffers, stats, logs, cmdlines) is left out; buffer_size_kb is
/// compared by value, since the kernel expands a never-used buffer
/// ("7 (expanded: 1408)") as soon as any event is on, and no write can undo it.
fn top_snapshot() -> BTreeMap<String, String> {
    const SKIP: &[&str] = &[
        "trace", "trace_pipe", "trace_marker", "trace_marker_raw", "saved_cmdlines", "saved_tgids", "snapshot",
        "error_log", "free_buffer", "printk_formats", "available_filter_functions",
        "available_filter_functions_addrs", "enabled_functions", "touched_functions", "dyn_ftrace_total_info",
        "README", "kprobe_profile", "uprobe_profile", "stack_trace", "stack_trace_filter", "buffer_total_size_kb",
        "timestamp_mode", "per_cpu", "trace_stat", "hwlat_detector",
    ];
    let mut m = BTreeMap::new();
    let mut add = |rel: String| {
        if let Ok(v) = std::fs::read_to_string(Path::new(T).join(&rel)) {
            let v = match (rel.as_str(), v.find("(expanded: ")) {
                ("buffer_size_kb", Some(at)) => v[at + 11..].trim_end().trim_end_matches(')').to_string(),
                _ => v.trim_end().to_string(),
            };
            m.insert(rel, v);
        }
    };
    for e in std::fs::read_dir(T).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().map(|t| t.is_file()).unwrap_or(false) && !SKIP.contains(&name.as_str()) {
            add(name);
        }
    }
    for e in std::fs::read_dir(Path::new(T).join("options")).unwrap().flatten() {
        add(format!("options/{}", e.file_name().to_string_lossy()));
    }
    for e in std::fs::read_dir(Path::new(T).join("events/sched")).unwrap().flatten() {
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            let n = e.file_name().to_string_lossy().into_owned();
            for f in ["filter", "trigger", "enable"] {
                add(format!("events/sched/{n}/{f}"));
            }
        }
    }
    for cpu in 0.. {
        let p = format!("per_cpu/cpu{cpu}/buffer_size_kb");
        if !Path::new(T).join(&p).exists() {
            break;
        }
        add(p);
    }
    m
}

fn assert_same(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>, when: &str) {
    let mut diffs = Vec::new();
    for (k, v) in before {
        match after.get(k) {
            Some(w) if w == v => {}
            w => diffs.push(format!("{k}: {v:?} -> {w:?}")),
        }
    }
    assert!(diffs.is_empty(), "top level changed {when}:\n{}", diffs.join("\n"));
}

fn no_leftover_instances() {
    for e in std::fs::read_dir(Path::new(T).join("instances")).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        // ftrec-PID-N: left behind only when that ftrec is gone (tests run
        // in parallel, another recording may be live).
        if let Some(pid) = n.strip_prefix("ftrec-").and_then(|r| r.split('-').next()) {
            assert!(Path::new("/proc").join(pid).exists(), "instance {n} left behind");
        }
    }
}

#[test]
fn usage_and_bad_arguments() {
    let d = scratch("usage");
    let ftrec = d.join("ftrec");
    let (c, out, _) = run(&ftrec, &["--help"]);
    assert_eq!(c, 0);
    assert!(out.starts_with("Usage: ftrec"), "{out}");
    for bad in [&["-f", "x"][..], &["--file-version", "5"], &["-Z"], &["-d", "soon"], &["--private", "-B", "x"]] {
        let (c, _, err) = run(&ftrec, bad);
        assert_eq!(c, 2, "{bad:?}: {err}");
        assert!(err.starts_with("ftrec: "), "{bad:?}: {err}");
    }
    let (c, _, err) = run(&ftrec, &["extract", "-e", "sched"]);
    assert_eq!(c, 2, "{err}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unwritable_output_fails_before_tracing() {
    let d = scratch("unwritable");
    let (c, _, err) = run(&d.join("ftrec"), &["-e", "sched", "-o", "/nonexistent-dir/x.dat", "--", "true"]);
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("/nonexistent-dir/x.dat"), "{err}");
    // A read-only output is refused the same way.
    std::fs::write(d.join("ro.dat"), "old").unwrap();
    std::fs::set_permissions(d.join("ro.dat"), std::os::unix::fs::PermissionsExt::from_mode(0o444)).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let (c, _, err) = run(&d.join("ftrec"), &["-e", "sched", "-o", d.join("ro.dat").to_str().unwrap(), "--", "true"]);
        assert_eq!(c, 1, "{err}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Record a command at the top level in both file versions.
#[test]
fn record_command_v7_and_v6() {
    if !live("record_command_v7_and_v6") {
        return;
    }
    let _g = top_lock();
    let d = scratch("cmd");
    let before = top_snapshot();
    // -F: the command only. v7 follows children (-c): sh and the sleep it
    // forks are both exec'd; v6 without -c sees only sh. The pid filter is
    // set by the child itself before exec, so ftrec's own activity is never
    // in the file.
    for (ver, follow, execs) in [("7", "-c", 2), ("6", "-q", 1)] {
        let f = d.join(format!("cmd-v{ver}.dat"));
        let (c, _, err) = run(
            &d.join("ftrec"),
            &[
                "-e", "sched:sched_switch", "-e", "sched:sched_process_exec", "-e", "sched:sched_process_exit",
                "-e", "syscalls:sys_enter_getppid", "--file-version", ver, "-F", follow, "-o", f.to_str().unwrap(),
                "--", "sh", "-c", "sleep 0.05; exit 3",
            ],
        );
        assert_eq!(c, 3, "the command's exit status is ftrec's: {err}");
        assert_eq!(err.contains("CPU0:"), follow != "-q", "summary unless -q: {err}");
        let counts = check_file(&d, &f);
        assert_eq!(counts.get("sched_process_exec"), Some(&execs), "v{ver}: {counts:?}");
        assert_eq!(counts.get("sched_process_exit"), Some(&execs), "v{ver}: {counts:?}");
        assert!(counts.get("sched_switch").is_some_and(|&n| n > 0), "v{ver}: {counts:?}");
        let head = std::fs::read(&f).unwrap();
        assert_eq!(&head[..12], format!("\x17\x08\x44tracing{ver}\0").as_bytes());
    }
    assert_same(&before, &top_snapshot(), "after recording a command");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A command's scope, as trace-cmd's: by default the whole system while it
/// runs (its children's execs are in), `-F` the command's own pid only
/// (the shell may exec its last command itself, in that pid), `-F -c` the
/// command and its children. The summary says which.
#[test]
fn command_scope_system_command_children() {
    if !live("command_scope_system_command_children") {
        return;
    }
    let d = scratch("scope");
    let f = d.join("s.dat");
    // The shell under a name of its own, so that its exec is told apart
    // from other shells' in a system-wide recording.
    let sh = d.join("scope-sh");
    std::os::unix::fs::symlink("/bin/sh", &sh).unwrap();
    let sh = sh.to_str().unwrap();
    let modes: [(&[&str], String, bool); 3] = [
        (&[], format!("system-wide while {sh} ran"), true),
        (&["-F"], format!("{sh} only"), false),
        (&["-F", "-c"], format!("{sh} and its children"), true),
    ];
    for (mode, said, children) in modes {
        let mut args = vec!["--private", "-e", "sched:sched_process_exec", "-o", f.to_str().unwrap()];
        args.extend_from_slice(mode);
        args.extend_from_slice(&["--", sh, "-c", "true; /bin/true; ls / >/dev/null"]);
        let (c, _, err) = run(&d.join("ftrec"), &args);
        assert_eq!(c, 0, "{mode:?}: {err}");
        assert!(err.contains(&format!("Traced: {said}\n")), "{mode:?}: {err}");
        let (c, text, err) = run(&d.join("ftcat"), &[f.to_str().unwrap()]);
        assert_eq!(c, 0, "{err}");
        // (filename, pid) of each exec.
        let execs: Vec<(String, String)> = text
            .lines()
            .filter(|l| l.contains("sched_process_exec:"))
            .map(|l| {
                let field = |k: &str| l.split_whitespace().find_map(|t| t.strip_prefix(k)).unwrap_or_default().to_string();
                (field("filename="), field("pid="))
            })
            .collect();
        let sh = execs.iter().find(|(file, _)| file == sh).unwrap_or_else(|| panic!("{mode:?}: no exec of {sh}: {text}"));
        let child = execs.iter().find(|(file, _)| file == "/bin/true");
        assert_eq!(child.is_some(), children, "{mode:?}: {execs:?}");
        if let Some((_, pid)) = child {
            assert_ne!(pid, &sh.1, "/bin/true runs in a child: {execs:?}");
        }
        if mode == ["-F"] {
            assert!(execs.iter().all(|(_, pid)| pid == &sh.1), "-F: the shell's pid only: {execs:?}");
        }
    }
    no_leftover_instances();
    std::fs::remove_dir_all(&d).unwrap();
}

/// `ftrec extract` saves exactly what the instance's `trace` file shows.
#[test]
fn extract_matches_trace_file() {
    if !live("extract_matches_trace_file") {
        return;
    }
    let d = scratch("extract");
    let name = format!("ftrectest-x-{}", std::process::id());
    let g = Instance::new(&name);
    let inst = g.0.clone();
    let w = |f: &str, v: &str| std::fs::write(inst.join(f), v).unwrap();
    // Events whose kernel text is "name: ..." (syscalls print "sys_read(...)").
    w("events/sched/enable", "1");
    w("events/irq/enable", "1");
    std::thread::sleep(Duration::from_millis(300));
    w("tracing_on", "0");
    let text = std::fs::read_to_string(inst.join("trace")).unwrap();
    let want = count_events(&text);
    let settings = ["tracing_on", "events/sched/sched_switch/enable", "current_tracer", "buffer_size_kb"]
        .map(|f| std::fs::read_to_string(inst.join(f)).unwrap());
    for ver in ["7", "6"] {
        let f = d.join(format!("x{ver}.dat"));
        let (c, _, err) = run(&d.join("ftrec"), &["extract", "-B", &name, "--file-version", ver, "-o", f.to_str().unwrap()]);
        if ver == "6" {
            // The first extract consumed the buffer: this one is empty but valid.
            assert_eq!(c, 0, "{err}");
            check_file(&d, &f);
            continue;
        }
        assert_eq!(c, 0, "{err}");
        let got = check_file(&d, &f);
        assert_eq!(got, want, "extract vs the trace file");
    }
    let after = ["tracing_on", "events/sched/sched_switch/enable", "current_tracer", "buffer_size_kb"]
        .map(|f| std::fs::read_to_string(inst.join(f)).unwrap());
    assert_eq!(settings, after, "extract changed a setting");
    drop(g);
    std::fs::remove_dir_all(&d).unwrap();
}

/// SIGINT at several moments of an open-ended top-level recording with many
/// settings changed: the file is readable and the top level as it was.
#[test]
fn sigint_restores_top_level() {
    if !live("sigint_restores_top_level") {
        return;
    }
    let _g = top_lock();
    let d = scratch("sigint");
    let before = top_snapshot();
    for (i, ms) in [0u64, 20, 150, 700].into_iter().enumerate() {
        let f = d.join(format!("sig{i}.dat"));
        let child = Command::new(d.join("ftrec"))
            .args(["-e", "sched", "-f", "prev_pid != 0", "-e", "sched:sched_wakeup", "-R", "stacktrace"])
            .args(["-b", "2048", "-C", "global", "-O", "nooverwrite", "-O", "print-parent=0", "-c"])
            .arg("-o")
            .arg(&f)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(ms));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        match o.status.code() {
            // Handler not installed yet: killed before touching anything.
            None => assert!(!f.exists() || std::fs::metadata(&f).unwrap().len() == 0),
            Some(0) => {
                check_file(&d, &f);
            }
            Some(c) => panic!("SIGINT after {ms} ms: exit {c}: {err}"),
        }
        assert_same(&before, &top_snapshot(), &format!("after SIGINT at {ms} ms"));
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// Two --private recordings at once, each tracing its own command: each
/// file holds its command's exec only, the top level is untouched and the
/// instances are gone afterwards.
#[test]
fn private_recordings_are_isolated() {
    if !live("private_recordings_are_isolated") {
        return;
    }
    let _g = top_lock();
    let d = scratch("private");
    let before = top_snapshot();
    let spawn = |f: &Path, secs: &str| {
        Command::new(d.join("ftrec"))
            .args(["--private", "-q", "-F", "-e", "sched:sched_process_exec", "-e", "sched:sched_switch", "-o"])
            .arg(f)
            .args(["--", "sleep", secs])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (fa, fb) = (d.join("a.dat"), d.join("b.dat"));
    let a = spawn(&fa, "0.4");
    let b = spawn(&fb, "0.2");
    for (c, f) in [(a, &fa), (b, &fb)] {
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let counts = check_file(&d, f);
        assert_eq!(counts.get("sched_process_exec"), Some(&1), "{}: {counts:?}", f.display());
    }
    // And an open-ended one with -d, next to nothing else.
    let f = d.join("d.dat");
    let (c, _, err) = run(&d.join("ftrec"), &["--private", "-e", "sched", "-d", "0.3", "-o", f.to_str().unwrap()]);
    assert_eq!(c, 0, "{err}");
    assert!(check_file(&d, &f).values().sum::<usize>() > 0);
    assert_same(&before, &top_snapshot(), "after --private recordings");
    no_leftover_instances();
    std::fs::remove_dir_all(&d).unwrap();
}

/// The kernel refuses function tracing here: a clear message, and the
/// events still record.
#[test]
fn function_tracer_refused_events_still_record() {
    if !live("function_tracer_refused_events_still_record") {
        return;
    }
    let d = scratch("func");
    let f = d.join("f.dat");
    let (c, _, err) = run(
        &d.join("ftrec"),
        &["--private", "-F", "-p", "function", "-l", "schedule", "-e", "sched:sched_process_exec", "-o", f.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(c, 0, "{err}");
    if !err.contains("refused") {
        eprintln!("function tracing is allowed on this kernel: refusal path not exercised");
    }
    let counts = check_file(&d, &f);
    assert_eq!(counts.get("sched_process_exec"), Some(&1), "{counts:?}");
    no_leftover_instances();
    std::fs::remove_dir_all(&d).unwrap();
}

/// A test's own instance, events off and removed even when the test fails.
struct Instance(PathBuf);
impl Instance {
    fn new(name: &str) -> Instance {
        let p = Path::new(T).join("instances").join(name);
        std::fs::create_dir(&p).unwrap();
        Instance(p)
    }
}
impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.0.join("events/enable"), "0");
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Unmounts the small tmpfs even when the test fails.
struct Mount(PathBuf);
impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Disk full mid-run: stop, restore, keep a readable file, exit 1.
#[test]
fn disk_full_keeps_a_readable_file() {
    fill_the_disk("disk_full_keeps_a_readable_file", "full", &[]);
}

/// A recording with `extra` options into a 24 MB tmpfs it fills.
fn fill_the_disk(test: &str, tag: &str, extra: &[&str]) {
    if !live(test) {
        return;
    }
    #[cfg(feature = "zstd-write")]
    let d = if extra.contains(&"zstd") { scratch_with(tag, &full()) } else { scratch(tag) };
    #[cfg(not(feature = "zstd-write"))]
    let d = scratch(tag);
    let mnt = d.join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount").args(["-t", "tmpfs", "-o", "size=24m", "tmpfs"]).arg(&mnt).status().unwrap();
    if !ok.success() {
        eprintln!("{test}: skipped (cannot mount tmpfs)");
        return;
    }
    let _m = Mount(mnt.clone());
    let f = mnt.join("full.dat");
    // A syscall storm as the traced command fills 24 MB in well under a second.
    let mut args = vec!["--private", "-F", "-b", "4096", "-e", "syscalls", "-e", "sched", "-d", "60", "-o", f.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=3000000"]);
    let (c, _, err) = run(&d.join("ftrec"), &args);
    assert_eq!(c, 1, "{err}");
    // Where it stopped; the file is the stream up to there (README:
    // Streams and cut recordings), and --save makes a trace.dat of it.
    let size = std::fs::metadata(&f).unwrap().len();
    assert!(err.contains(&format!("disk full at offset {size}")), "{err}");
    let saved = d.join("saved.dat");
    let (c, _, err) = run(&d.join("ftcat"), &["--save", saved.to_str().unwrap(), f.to_str().unwrap()]);
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("cut short"), "{err}");
    let counts = check_file(&d, &saved);
    assert!(counts.get("sys_enter_read").is_some_and(|&n| n > 1000), "{counts:?}");
    no_leftover_instances();
    drop(_m);
    std::fs::remove_dir_all(&d).unwrap();
}

/// `-B` on an existing instance with the read() path: the instance stays,
/// its settings come back, the file holds the command's records.
#[test]
fn existing_instance_with_read_fallback() {
    if !live("existing_instance_with_read_fallback") {
        return;
    }
    let d = scratch("inst");
    let name = format!("ftrectest-b-{}", std::process::id());
    let g = Instance::new(&name);
    let before: Vec<String> = ["events/sched/sched_process_exec/enable", "tracing_on", "set_event_pid", "buffer_size_kb"]
        .iter()
        .map(|f| std::fs::read_to_string(g.0.join(f)).unwrap())
        .collect();
    let f = d.join("b.dat");
    let (c, _, err) = run(
        &d.join("ftrec"),
        &["-B", &name, "-F", "--no-splice", "-b", "512", "-e", "sched:sched_process_exec", "-o", f.to_str().unwrap(), "--", "true"],
    );
    assert_eq!(c, 0, "{err}");
    assert!(err.contains(&format!("Buffer: {name}")), "{err}");
    let counts = check_file(&d, &f);
    assert_eq!(counts.get("sched_process_exec"), Some(&1), "{counts:?}");
    assert!(g.0.exists(), "an instance ftrec did not create must stay");
    let after: Vec<String> = ["events/sched/sched_process_exec/enable", "tracing_on", "set_event_pid", "buffer_size_kb"]
        .iter()
        .map(|f| std::fs::read_to_string(g.0.join(f)).unwrap())
        .collect();
    assert_eq!(before, after);
    drop(g);
    std::fs::remove_dir_all(&d).unwrap();
}

/// `-m KB` keeps only the newest data of each CPU.
#[test]
fn max_kb_keeps_the_newest() {
    if !live("max_kb_keeps_the_newest") {
        return;
    }
    let d = scratch("maxkb");
    let f = d.join("m.dat");
    let (c, _, err) = run(
        &d.join("ftrec"),
        &["--private", "-F", "-m", "64", "-e", "syscalls", "-o", f.to_str().unwrap(), "--",
          "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=300000"],
    );
    assert_eq!(c, 0, "{err}");
    for line in err.lines().filter(|l| l.contains("bytes,")) {
        let bytes: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(bytes <= 64 * 1024, "{line}");
    }
    let counts = check_file(&d, &f);
    // The newest records survive: the end of dd, its exit_group.
    assert_eq!(counts.get("sys_enter_exit_group"), Some(&1), "{counts:?}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// Another reader of a CPU's trace_pipe_raw (the kernel allows it, and the
/// two would split the pages): a clear error naming the CPU, nothing changed.
#[test]
fn busy_trace_pipe_raw_is_refused() {
    if !live("busy_trace_pipe_raw_is_refused") {
        return;
    }
    let d = scratch("busy");
    let name = format!("ftrectest-busy-{}", std::process::id());
    let g = Instance::new(&name);
    // A separate process holds CPU 0's file (ftrec ignores its own pid).
    let mut holder = Command::new("sh")
        .arg("-c")
        .arg(format!("exec 3<{}/per_cpu/cpu0/trace_pipe_raw; exec sleep 5", g.0.display()))
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let f = d.join("busy.dat");
    let (c, _, err) = run(&d.join("ftrec"), &["-B", &name, "-e", "sched", "-d", "0.2", "-o", f.to_str().unwrap()]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(c, 1, "{err}");
    assert!(err.contains("CPU 0:") && err.contains("busy"), "{err}");
    assert!(!f.exists(), "no output file after a refusal");
    assert_eq!(std::fs::read_to_string(g.0.join("events/sched/enable")).unwrap().trim(), "0");
    drop(g);
    std::fs::remove_dir_all(&d).unwrap();
}

/// ftbox ignores SIGPIPE (a closed output is EPIPE, ended quietly); the
/// command it traces must not inherit that (ignored signals survive exec).
#[test]
fn traced_command_gets_default_sigpipe() {
    if !live("traced_command_gets_default_sigpipe") {
        return;
    }
    let d = scratch("sigpipe");
    let out = d.join("p.dat");
    let (c, stdout, err) = run(&d.join("ftrec"), &["--private", "-q", "-e", "sched:sched_process_exit", "-o", out.to_str().unwrap(), "--", "grep", "SigIgn", "/proc/self/status"]);
    assert_eq!(c, 0, "{err}");
    let mask = stdout.split_whitespace().nth(1).and_then(|m| u64::from_str_radix(m, 16).ok()).expect(&stdout);
    assert_eq!(mask & (1 << (libc::SIGPIPE - 1)), 0, "SIGPIPE ignored in the traced command: {stdout}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// `--compression zstd`: trace-cmd report and ftcat read the file and
/// agree on every event's count; the data spans many chunks (a read storm),
/// and the file is much smaller than the same kind of recording uncompressed.
#[cfg(feature = "zstd-write")]
#[test]
fn zstd_recording_reads_in_trace_cmd_and_ftcat() {
    if !live("zstd_recording_reads_in_trace_cmd_and_ftcat") {
        return;
    }
    let d = scratch_with("zstd", &full());
    let mut sizes = Vec::new();
    for comp in ["zstd", "none"] {
        let f = d.join(format!("{comp}.dat"));
        let (c, _, err) = run(
            &d.join("ftrec"),
            &["--private", "-F", "-b", "8192", "--compression", comp, "-e", "syscalls:sys_enter_read", "-e", "sched:sched_process_exec",
              "-o", f.to_str().unwrap(), "--", "dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=100000"],
        );
        assert_eq!(c, 0, "{err}");
        assert_eq!(err.contains("compressed)"), comp == "zstd", "the summary gives the compressed size: {err}");
        let head = std::fs::read(&f).unwrap();
        assert!(head[12..].starts_with(b"\0\x08\0\x10\0\0") && head[18..].starts_with(format!("{comp}\0").as_bytes()), "{comp}: {:?}", &head[..24]);
        let counts = check_file(&d, &f);
        assert_eq!(counts.get("sched_process_exec"), Some(&1), "{comp}: {counts:?}");
        assert!(counts.get("sys_enter_read").is_some_and(|&n| n >= 100_000), "{comp}: {counts:?}");
        sizes.push(head.len());
    }
    assert!(sizes[0] * 3 < sizes[1], "zstd {} bytes, plain {}", sizes[0], sizes[1]);
    no_leftover_instances();
    std::fs::remove_dir_all(&d).unwrap();
}

/// Disk full mid-run with `--compression zstd`: as without it, the stream
/// keeps the pages that fit (compression happens when the stream becomes
/// the trace.dat, which a full disk stops short of).
#[cfg(feature = "zstd-write")]
#[test]
fn zstd_disk_full_keeps_a_readable_file() {
    fill_the_disk("zstd_disk_full_keeps_a_readable_file", "zstd-full", &["--compression", "zstd"]);
}
