//! `ftcat --compare` on recordings made here: one workload recorded with
//! and without an extra CPU load, twice each (alternating, so a change of
//! the machine's own load weighs on both sides). Under the load the
//! workload waits longer for a CPU: the comparison must show
//! `sched.sh.wait` going up, beyond the noise of the runs. (Its preemptions
//! go up too, but on a machine that is busy already not by much: not
//! checked.) Needs root and tracefs (records in a private instance); skips
//! with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const T: &str = "/sys/kernel/tracing";

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

fn live(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") || !root || !Path::new(T).join("trace").exists() {
        eprintln!("{test}: skipped (needs root and tracefs at {T})");
        return false;
    }
    true
}

fn applet(name: &str, args: &[&str]) -> String {
    let o = Command::new(ftbox()).arg(name).args(args).output().unwrap();
    assert!(o.status.success(), "{name} {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The CPU-bound workload (a shell counting, no system calls), recorded
/// alone (-F): its switches and wakeups.
fn record(out: &Path) {
    let script = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done";
    applet("ftrec", &["--private", "-q", "-F", "-e", "sched:sched_switch", "-e", "sched:sched_wakeup", "-o", out.to_str().unwrap(), "--", "sh", "-c", script]);
}

/// Busy loops (`yes` into /dev/null), more than there are CPUs.
struct Load(Vec<Child>);

impl Load {
    fn start() -> Load {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()) * 3;
        Load((0..n).map(|_| Command::new("yes").stdout(Stdio::null()).spawn().unwrap()).collect())
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The comparison's row for `metric`: its change column (`+12.3%`).
fn change<'a>(out: &'a str, metric: &str) -> Option<&'a str> {
    let line = out.lines().find(|l| l.ends_with(&format!("  {metric}")))?;
    line.split_whitespace().find(|w| w.ends_with('%') && (w.starts_with('+') || w.starts_with('-')) || *w == "new" || *w == "gone")
}

#[test]
fn profile_compare_sees_an_extra_load() {
    if !live("profile_compare_sees_an_extra_load") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ftbox-profile-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (mut base, mut new) = (Vec::new(), Vec::new());
    for i in 0..2 {
        let b = dir.join(format!("base{i}.dat"));
        record(&b);
        base.push(b.to_str().unwrap().to_string());
        let n = dir.join(format!("load{i}.dat"));
        let load = Load::start();
        record(&n);
        drop(load);
        new.push(n.to_str().unwrap().to_string());
    }
    let (b, n) = (base.join(","), new.join(","));
    let out = applet("ftcat", &["--compare", &b, &n]);
    let all = applet("ftcat", &["--compare", &b, &n, "-v"]);
    let _ = std::fs::remove_dir_all(&dir);
    // Beyond the noise of the two runs a side (shown without -v), up.
    let c = change(&out, "sched.sh.wait").unwrap_or_else(|| panic!("no sched.sh.wait row:\n{out}"));
    assert!(c.starts_with('+'), "sched.sh.wait went {c}:\n{out}");
    // -v shows what did not change beyond the noise too: the workload's
    // voluntary switches (its exit), the same on both sides.
    assert!(change(&all, "sched.sh.voluntary").is_some(), "{all}");
}
