//! Hostile and damaged input (fixtures/hostile, see its README): for every
//! file there, the release binary as `ftcat` in each mode (default,
//! `--style trace-cmd`, `--stat`, `-R`) must end within 2 s of CPU time,
//! with a peak RSS of at most 64 MiB and at most 64 MiB of output, and exit
//! 0, or 1 with a message on stderr — never a panic, an abort or a signal.
//!
//! The limits are checked, not merely hoped for: the child runs under an
//! address-space limit (RLIMIT_AS, 256 MiB) so that a regression fails the
//! test instead of exhausting the machine; its peak RSS and CPU time come
//! from wait4()'s rusage; stdout is read up to the cap and the child is
//! killed past it. CPU time rather than wall time is the bound: the tests
//! share a small machine, and a run that needs no more than 2 s of CPU may
//! still wait for it. A run still going after 10 s of wall time is killed.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MODES: [&[&str]; 4] = [&[], &["--style", "trace-cmd"], &["--stat"], &["-R"]];
const MAX_CPU: Duration = Duration::from_secs(2);
const MAX_WALL: Duration = Duration::from_secs(10);
const MAX_RSS_KIB: i64 = 64 << 10;
const MAX_OUTPUT: u64 = 64 << 20;
const ADDRESS_SPACE: libc::rlim_t = 256 << 20;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// What one run did.
struct Run {
    /// The wait status, None when the child had to be killed at MAX_WALL.
    status: Option<i32>,
    cpu: Duration,
    rss_kib: i64,
    out: u64,
    err: String,
}

fn timeval(t: libc::timeval) -> Duration {
    Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
}

/// Run `ftcat ARGS FILE` under the limits above.
fn run(file: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(ftbox());
    cmd.arg0("ftcat").args(args).arg(file).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the
    // parent; the closure runs in the forked child before exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit { rlim_cur: ADDRESS_SPACE, rlim_max: ADDRESS_SPACE };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn ftbox");
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    // Count stdout up to the cap; past it, kill the child (the cap is a failure).
    let out = std::thread::spawn(move || {
        let mut buf = vec![0u8; 1 << 16];
        let mut n = 0u64;
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => return n,
                Ok(k) => n += k as u64,
            }
            if n > MAX_OUTPUT {
                // SAFETY: kill(2) has no memory effects. The child has not
                // been reaped while its stdout is still open and writing.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                return n;
            }
        }
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.by_ref().take(1 << 20).read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let start = Instant::now();
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        // SAFETY: wait4 on our own child with valid pointers to locals.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if start.elapsed() > MAX_WALL && !killed {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Run {
        status: (!killed).then_some(status),
        cpu: timeval(ru.ru_utime) + timeval(ru.ru_stime),
        rss_kib: i64::from(ru.ru_maxrss),
        out: out.join().unwrap(),
        err: err.join().unwrap(),
    }
}

/// What is wrong with `r`, if anything.
fn verdict(r: &Run) -> Option<String> {
    let first = r.err.lines().next().unwrap_or("");
    if r.out > MAX_OUTPUT {
        return Some(format!("more than {MAX_OUTPUT} bytes of output (killed)"));
    }
    let Some(st) = r.status else { return Some(format!("still running after {MAX_WALL:?} (killed)")) };
    if libc::WIFSIGNALED(st) {
        return Some(format!("killed by signal {} ({first})", libc::WTERMSIG(st)));
    }
    let code = libc::WEXITSTATUS(st);
    // On 32-bit musl the libc crate's `struct rusage` is the pre-1.2
    // (32-bit time_t) layout while musl fills in the 64-bit one, so the
    // CPU and RSS numbers are not readable there: the wall-clock kill and
    // the output bound still hold.
    if cfg!(target_pointer_width = "64") {
        if r.cpu > MAX_CPU {
            return Some(format!("{:?} of CPU time", r.cpu));
        }
        if r.rss_kib > MAX_RSS_KIB {
            return Some(format!("peak RSS {} KiB", r.rss_kib));
        }
    }
    match code {
        0 => None,
        1 if !r.err.trim().is_empty() => None,
        1 => Some(String::from("exit 1 with nothing on stderr")),
        c => Some(format!("exit {c}: {first}")),
    }
}

#[test]
fn every_hostile_file_ends_quickly_in_bounded_memory() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hostile");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dat"))
        .collect();
    files.sort();
    assert!(files.len() >= 18, "{}: {} files, the README lists 18", dir.display(), files.len());
    // Only some files, by name: `HOSTILE=F4 cargo test --test hostile`.
    let only = std::env::var("HOSTILE").unwrap_or_default();
    let mut bad = Vec::new();
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy();
        if !name.contains(only.as_str()) {
            continue;
        }
        for args in MODES {
            let r = run(f, args);
            let mode = if args.is_empty() { String::from("default") } else { args.join(" ") };
            println!("{name} [{mode}]: cpu {:?}, rss {} KiB, out {} B, {}", r.cpu, r.rss_kib, r.out, r.err.lines().next().unwrap_or(""));
            if let Some(why) = verdict(&r) {
                bad.push(format!("{name} [{mode}]: {why}"));
            }
        }
    }
    assert!(bad.is_empty(), "{} runs broke a bound:\n{}", bad.len(), bad.join("\n"));
}

/// A zstd-compressed kallsyms stays compressed until the first symbol is
/// printed, after the file has opened. When it then does not decompress
/// (here: its frame's magic number zeroed, in a copy of a real recording
/// whose kprobe lines print symbols), every record is still printed, with
/// addresses, and the run ends with the file and the reason and exit 1.
#[test]
fn damaged_kallsyms_prints_the_records_then_fails() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/linux-6.12/kprobe.dat");
    let mut d = std::fs::read(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
    // kallsyms is the file's largest zstd frame (megabytes of text).
    let magic = [0x28, 0xb5, 0x2f, 0xfd];
    let starts: Vec<usize> = d.windows(4).enumerate().filter(|(_, w)| *w == magic).map(|(i, _)| i).collect();
    let ends = starts.iter().skip(1).copied().chain([d.len()]);
    let (_, at) = starts.iter().zip(ends).map(|(&a, b)| (b - a, a)).max().expect("zstd frames");
    d[at..at + 4].fill(0);
    let dir = std::env::temp_dir().join(format!("ftbox-kallsyms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("kprobe-damaged.dat");
    std::fs::write(&f, &d).unwrap();
    let whole = run(&src, &[]);
    let r = run(&f, &[]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(r.status.filter(|&s| libc::WIFEXITED(s)).map(|s| libc::WEXITSTATUS(s)), Some(1), "{}", r.err);
    assert!(r.err.contains("kprobe-damaged.dat: kallsyms section: zstd data does not decompress"), "{}", r.err);
    // The same records (addresses are no shorter than symbols here).
    assert!(r.out > whole.out / 2 && whole.status == Some(0), "{} of {} bytes printed", r.out, whole.out);
}
