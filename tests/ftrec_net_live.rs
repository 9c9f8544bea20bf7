//! `ftrec -N` against Debian's own `trace-cmd listen` on 127.0.0.1: the
//! file the listener writes must read in `trace-cmd report` and hold what
//! a local recording of the same workload holds; a refused connection and
//! a listener killed mid-recording must fail clearly and leave tracing as
//! it was. Every recording uses --private (an instance of its own), so the
//! top level is only read. Live: needs root, tracefs and trace-cmd; skips
//! with a message otherwise. Run one at a time, under the shared lock:
//! `flock /work/notes/tracefs.lock cargo test --release --test ftrec_net_live -- net`.
//!
//! What "the same events" means here. Two runs of a workload never see
//! the same scheduler: switches, wakeups and migrations differ in number.
//! So the check is in two parts:
//! - the received file, decoded by two independent readers, says the same
//!   thing: `trace-cmd report` and `ftcat --style trace-cmd-3.1` print it byte
//!   for byte alike (every event, its CPU, timestamp, comm-pid and fields);
//! - against a local `ftrec -o` recording of the same workload (-F -c: the
//!   command and its children only), the events a workload determines —
//!   each fork, exec and exit with its comm and fields, pids aside — are
//!   the same multiset, and both files hold the same event types.

use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const T: &str = "/sys/kernel/tracing";
/// Five children exec'ed by sh: each one fork, exec and exit.
const WORKLOAD: &str = "for i in 1 2 3 4 5; do /bin/true; done";

/// `ftbox APPLET ARGS`, with no input.
fn applet(name: &str, args: &[&str]) -> Command {
    let bin = std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")));
    applet_of(bin, name, args)
}

/// `ftbox APPLET ARGS` of the binary `bin`.
fn applet_of(bin: PathBuf, name: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.arg(name).args(args).stdin(Stdio::null());
    c
}

/// A fresh directory for the listener's files.
fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ftrec-net-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Root, tracefs and trace-cmd are here; else say why the test is skipped.
fn live(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let why = if unsafe { libc::geteuid() } != 0 || !Path::new(T).join("trace").exists() {
        "root and tracefs"
    } else if Command::new("trace-cmd").arg("--version").output().is_err() {
        "trace-cmd"
    } else {
        return true;
    };
    eprintln!("{test}: skipped (needs {why})");
    false
}

/// A port nothing listens on (the kernel's pick, released at once).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `trace-cmd listen -p PORT -d DIR`, in a process group of its own (so
/// the connection handlers it forks can be killed with it).
struct Listen {
    child: Child,
    port: u16,
}

impl Listen {
    fn start(dir: &Path) -> Listen {
        let port = free_port();
        let log = std::fs::File::create(dir.join("listen.log")).unwrap();
        let child = Command::new("trace-cmd")
            .args(["listen", "-p", &port.to_string(), "-d"])
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap();
        // Up once it accepts (the probe's handler gives up on an empty greeting).
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(start.elapsed() < Duration::from_secs(10), "trace-cmd listen did not come up on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Listen { child, port }
    }

    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILL to the listener and every process it forked.
    fn kill(&mut self) {
        // SAFETY: kill has no memory preconditions; the group is the child's own.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

impl Drop for Listen {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The one trace.*.dat the listener wrote in `dir`.
fn received(dir: &Path) -> PathBuf {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "dat") && p.file_name().unwrap().to_string_lossy().starts_with("trace.")).collect();
    assert_eq!(files.len(), 1, "the listener's files in {}: {files:?}", dir.display());
    files.pop().unwrap()
}

fn run(name: &str, args: &[&str]) -> Output {
    applet(name, args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `trace-cmd report FILE`: stdout; it must succeed without complaint.
fn report(file: &Path) -> String {
    let o = Command::new("trace-cmd").arg("report").arg(file).stdin(Stdio::null()).output().unwrap();
    let err = text(&o.stderr);
    assert!(o.status.success(), "trace-cmd report {}: {err}", file.display());
    assert!(!err.contains("error") && !err.contains("failed"), "trace-cmd report {} complained: {err}", file.display());
    text(&o.stdout)
}

/// What the tracing state a recording may change reads now: the top
/// level's switches and the sched events (all of it ftrec puts back; a
/// --private recording changes none of it, so it must read the same).
fn state() -> Vec<(String, String)> {
    let mut files = vec!["tracing_on", "current_tracer", "trace_clock", "set_event", "set_event_pid", "buffer_size_kb", "events/sched/enable"].into_iter().map(String::from).collect::<Vec<_>>();
    for e in std::fs::read_dir(Path::new(T).join("events/sched")).unwrap().flatten() {
        if e.path().is_dir() {
            files.push(format!("events/sched/{}/enable", e.file_name().to_string_lossy()));
        }
    }
    files.into_iter().map(|f| (std::fs::read_to_string(Path::new(T).join(&f)).unwrap_or_default(), f)).map(|(v, f)| (f, v)).collect()
}

/// ftrec's private instances left behind by a process that is gone.
fn leftovers() -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(Path::new(T).join("instances")).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = n.strip_prefix("ftrec-").and_then(|r| r.split('-').next()) {
            if !Path::new("/proc").join(pid).exists() {
                v.push(n);
            }
        }
    }
    v
}

/// A `trace-cmd report` line split into (comm, event, fields): the
/// comm-pid column without its pid, the fields as printed.
fn parse_line(line: &str) -> Option<(String, String, String)> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let i = toks.iter().position(|t| t.strip_suffix(':').is_some_and(|ts| ts.contains('.') && ts.parse::<f64>().is_ok()))?;
    let comm = toks.first()?.rsplit_once('-')?.0.to_string();
    let event = toks.get(i + 1)?.strip_suffix(':')?.to_string();
    Some((comm, event, toks[i + 2..].join(" ")))
}

/// Digits runs that follow "pid=" (and "pid " forms) made "N": pids differ
/// between runs, nothing else in the workload's own events does.
fn no_pids(fields: &str) -> String {
    fields.split(' ').map(|f| match f.split_once('=') { Some((k, _)) if k.ends_with("pid") => format!("{k}=N"), _ => f.to_string() }).collect::<Vec<_>>().join(" ")
}

/// The workload's own events — fork, exec, exit, as (comm, event, fields
/// without pids) — counted; and the set of every event type seen.
fn workload_events(report: &str) -> (BTreeMap<(String, String, String), usize>, Vec<String>) {
    let mut own = BTreeMap::new();
    let mut types = Vec::new();
    for (comm, event, fields) in report.lines().filter_map(parse_line) {
        if !types.contains(&event) {
            types.push(event.clone());
        }
        if ["sched_process_fork", "sched_process_exec", "sched_process_exit"].contains(&event.as_str()) {
            *own.entry((comm, event, no_pids(&fields))).or_insert(0) += 1;
        }
    }
    types.sort();
    (own, types)
}

/// A live test: skipped without root, tracefs or trace-cmd; `body` gets a
/// fresh directory; afterwards the tracing state must read as before and
/// no instance of ftrec's be left behind.
/// One case at a time, though `make test` runs two test threads. The
/// kernel's pid -> comm cache is one for every instance; reading
/// `saved_cmdlines` holds its lock, and a task switch that finds it taken
/// does not wait but skips saving the comm. A case reading it while
/// another case's workload runs made that workload's `/bin/true` children
/// print as the `sh` they forked from (seen once in CI, on a loaded machine).
static ONE: Mutex<()> = Mutex::new(());

fn live_case(test: &str, body: impl FnOnce(&Path)) {
    if !live(test) {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let d = scratch(test);
    let before = state();
    body(&d);
    assert_eq!(state(), before, "{test}: the tracing state was not put back");
    assert!(leftovers().is_empty(), "{test}: instances left behind: {:?}", leftovers());
    let _ = std::fs::remove_dir_all(&d);
}

/// Two readers, one file: `trace-cmd report` and `ftcat --style
/// trace-cmd-3.1` (3.1.6 is installed here) print the same text, event
/// for event. The text.
fn two_readers_agree(d: &Path, got: &Path) -> String {
    let net = report(got);
    assert!(net.lines().filter_map(parse_line).count() > 10, "too few events received:\n{net}");
    let ft = run("ftcat", &["--style", "trace-cmd-3.1", got.to_str().unwrap()]);
    assert!(ft.status.success(), "ftcat {}: {}", got.display(), text(&ft.stderr));
    if net != text(&ft.stdout) {
        std::fs::write(d.join("trace-cmd.txt"), &net).unwrap();
        std::fs::write(d.join("ftcat.txt"), &ft.stdout).unwrap();
        panic!("trace-cmd report and ftcat --style trace-cmd-3.1 differ on {}: see {}/{{trace-cmd,ftcat}}.txt", got.display(), d.display());
    }
    net
}

#[test]
fn net_to_trace_cmd_listen_equals_a_local_recording() {
    live_case("net_to_trace_cmd_listen_equals_a_local_recording", |d| {
        let listen = Listen::start(d);
        let o = run("ftrec", &["-N", &listen.addr(), "--private", "-e", "sched", "-F", "-c", "--", "sh", "-c", WORKLOAD]);
        assert!(o.status.success(), "ftrec -N: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains("bytes sent"), "no summary: {}", text(&o.stderr));
        let got = received(d);

        let net = two_readers_agree(d, &got);

        // The same workload recorded locally.
        let local = d.join("local.dat");
        let o = run("ftrec", &["-o", local.to_str().unwrap(), "--private", "-q", "-e", "sched", "-F", "-c", "--", "sh", "-c", WORKLOAD]);
        assert!(o.status.success(), "ftrec -o: {}", text(&o.stderr));
        let (net_own, net_types) = workload_events(&net);
        let (local_own, local_types) = workload_events(&report(&local));
        // Compared without the comm column: the kernel's pid -> comm cache
        // (saved_cmdlines, 128 tasks) is read when the recording ends, and
        // on a busy machine the first shell's entry may be gone by then in
        // one run and not the other ("<...>", as trace-cmd prints it).
        let uncached = |own: &BTreeMap<(String, String, String), usize>| {
            let mut m = BTreeMap::new();
            for ((_, ev, f), n) in own {
                *m.entry((ev.clone(), f.clone())).or_insert(0) += n;
            }
            m
        };
        assert_eq!(uncached(&net_own), uncached(&local_own), "the workload's forks, execs and exits differ between -N and -o");
        // Five /bin/true execs, each with its comm from the end of the recording.
        let execs: usize = net_own.iter().filter(|((comm, ev, f), _)| ev == "sched_process_exec" && comm == "true" && f.contains("/bin/true")).map(|(_, n)| n).sum();
        assert_eq!(execs, 5, "execs of /bin/true in the received file: {net_own:?}");
        // Migrations, runtime stats and RCU-deferred frees come and go with
        // the scheduler.
        let common = |t: &Vec<String>| t.iter().filter(|e| !["migrate", "stat_", "free"].iter().any(|w| e.contains(w))).cloned().collect::<Vec<_>>();
        assert_eq!(common(&net_types), common(&local_types), "event types differ between -N and -o");
    });
}

#[test]
fn net_refused_connection_changes_nothing() {
    live_case("net_refused_connection_changes_nothing", |_| {
        let port = free_port().to_string();
        let o = run("ftrec", &["-N", &format!("127.0.0.1:{port}"), "--private", "-e", "sched", "--", "true"]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "ftrec -N to a closed port: {err}");
        assert!(err.starts_with("ftrec: cannot connect to 127.0.0.1:") && err.contains("Connection refused"), "{err}");
    });
}

/// A listener of another protocol version: a v1 `trace-cmd listen` hangs
/// up on the v3 offer, another answers something else. Either is a clear
/// error before tracing is touched.
#[test]
fn net_version_mismatch_is_a_clear_error() {
    live_case("net_version_mismatch_is_a_clear_error", |_| {
        for answer in [&b""[..], b"V9\0"] {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap().to_string();
            let server = std::thread::spawn(move || {
                let (mut c, _) = l.accept().unwrap();
                // trace-cmd's greeting, then the client's version offer.
                std::io::Write::write_all(&mut c, b"tracecmd").unwrap();
                let mut offer = [0u8; 64];
                let _ = std::io::Read::read(&mut c, &mut offer);
                let _ = std::io::Write::write_all(&mut c, answer);
            });
            let before = state();
            let o = run("ftrec", &["-N", &addr, "-e", "sched", "--", "true"]);
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(err.starts_with(&format!("ftrec: {addr}: protocol version mismatch")), "{err}");
            assert_eq!(state(), before);
            server.join().unwrap();
        }
    });
}

#[test]
fn net_listener_killed_mid_run_is_an_error_and_restores() {
    live_case("net_listener_killed_mid_run_is_an_error_and_restores", |d| {
        let mut listen = Listen::start(d);
        // A steady stream of sched events (a fork and exec of date(1) per
        // round) for 5 s; the listener dies after 1 s.
        let storm = "end=$(( $(date +%s) + 5 )); while [ $(date +%s) -lt $end ]; do :; done";
        // (stderr to a file: the command, left running when ftrec stops,
        // would hold a pipe open to its end.)
        let log = d.join("ftrec.err");
        let mut rec = applet("ftrec", &["-N", &listen.addr(), "--private", "-b", "256", "-e", "sched", "--", "sh", "-c", storm])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(1));
        listen.kill();
        let start = Instant::now();
        let status = rec.wait().unwrap();
        let err = std::fs::read_to_string(&log).unwrap();
        assert!(!status.success(), "ftrec -N went on without its listener: {err}");
        assert!(start.elapsed() < Duration::from_secs(3), "ftrec -N did not notice the listener going away ({:?}): {err}", start.elapsed());
        assert!(err.contains(&format!("ftrec: {}: the listener went away", listen.addr())), "{err}");
    });
}

/// Longer than the listener's 5 s patience with a silent client: the
/// keeper holds it, and the statistics read at the end reach the file.
#[test]
fn net_outlasts_the_listeners_timeout_with_stats() {
    live_case("net_outlasts_the_listeners_timeout_with_stats", |d| {
        let listen = Listen::start(d);
        let o = run("ftrec", &["-N", &listen.addr(), "--private", "-e", "sched", "-d", "7"]);
        assert!(o.status.success(), "ftrec -N -d 7: {}", text(&o.stderr));
        let got = received(d);
        two_readers_agree(d, &got);
        let o = Command::new("trace-cmd").args(["report", "--stat"]).arg(&got).stdin(Stdio::null()).output().unwrap();
        let stat = text(&o.stdout);
        assert!(stat.contains("CPU: 0\n") && stat.contains("read events:"), "no per-CPU stats in {}:\n{stat}", got.display());
    });
}

/// `--compression zstd` with `-N`: ftrec sends the metadata compressed, the
/// listener compresses the CPU data as the header says; both readers read
/// the file alike.
#[cfg(feature = "zstd-write")]
#[test]
fn net_zstd_file_reads_in_both_readers() {
    live_case("net_zstd_file_reads_in_both_readers", |d| {
        let listen = Listen::start(d);
        // This test build's own binary: the default one has no zstd writing
        // (feature zstd-write, `make full`; `make test` builds with it).
        let o = applet_of(PathBuf::from(env!("CARGO_BIN_EXE_ftbox")), "ftrec", &["-N", &listen.addr(), "--compression", "zstd", "--private", "-e", "sched", "-F", "-c", "--", "sh", "-c", WORKLOAD]).output().unwrap();
        assert!(o.status.success(), "ftrec -N --compression zstd: {}", text(&o.stderr));
        let got = received(d);
        let head = std::fs::read(&got).unwrap();
        assert!(head[18..].starts_with(b"zstd\0"), "{:?}", &head[..32]);
        two_readers_agree(d, &got);
    });
}
