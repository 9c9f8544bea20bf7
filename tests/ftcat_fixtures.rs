//! ftcat against the kernel's own text: every `x-NAME.extract.dat` /
//! `x-NAME.trace.txt` pair of fixtures/linux-6.12 (the same ring
//! buffer, raw and as `cat trace` printed it on a Debian 6.12 kernel), and
//! damaged copies of fixtures.
//!
//! Lines are compared one to one. Exclusions, each with its reason:
//! - hashed pointers: with `hash-ptr` on (the default) the kernel prints
//!   `%p` as a keyed hash of the pointer (`00000000d399c52a`); the key is
//!   per boot and not in the recording, so no decoder can reproduce it.
//!   ftcat prints the real value; a line differing only in such 16-digit
//!   tokens counts as identical-but-hashed. (The live test turns hash-ptr
//!   off and needs no such rule.)
//! - print fmts naming enum constants the kernel left unresolved (no
//!   TRACE_DEFINE_ENUM; e.g. `HRTIMER_MODE_ABS` in hrtimer_start/
//!   hrtimer_init): the values are not in the recording. ftcat prints the
//!   value as the kernel prints an unmatched one (`mode=0xa`); these lines
//!   must equal the kernel's but for that token, and are counted.
//! Tracer options are not part of a trace.dat; x-fgtail was recorded with
//! funcgraph-tail, so it is given with `-O funcgraph-tail`.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

fn fixtures() -> PathBuf {
    support::fixtures("x-events.trace.txt")
}

/// An `ftcat` link to the binary, as the applet is reached in the field.
/// Each call gets its own directory: tests run in parallel threads, and two
/// of them creating the same link raced ("File exists", seen on i686).
fn ftcat() -> PathBuf {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("ftcat-fixt-{}-{}", std::process::id(), n));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let l = d.join("ftcat");
    std::os::unix::fs::symlink(ftbox(), &l).unwrap();
    l
}

/// The `x-NAME` pairs (NAME.extract.dat + NAME.trace.txt) in `dir`, sorted.
fn pairs_in(dir: &Path) -> Vec<String> {
    let mut pairs: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".extract.dat").map(str::to_string))
        .filter(|n| dir.join(format!("{n}.trace.txt")).exists())
        .collect();
    pairs.sort();
    pairs
}

/// ftcat on `dir/p.extract.dat` must print `dir/p.trace.txt`; its line count.
fn differential(dir: &Path, p: &str) -> usize {
    let dat = dir.join(format!("{p}.extract.dat"));
    let txt = std::fs::read_to_string(dir.join(format!("{p}.trace.txt"))).unwrap();
    let mut args: Vec<&str> = Vec::new();
    if p == "x-fgtail" {
        args.extend(["-O", "funcgraph-tail"]);
    }
    let ds = dat.to_str().unwrap();
    args.push(ds);
    let (code, out, err) = run(&args);
    assert_eq!(code, Some(0), "{p}: {err}");
    let out = String::from_utf8(out).unwrap();
    let t = compare(p, &out, &txt);
    // Headers are compared like every line; say so for the pairs that have
    // the entries-in-buffer line (nop/function tracers).
    if txt.contains("entries-in-buffer") {
        assert_eq!(out.lines().nth(2), txt.lines().nth(2), "{p}: entries line");
    }
    t.lines
}

fn run(args: &[&str]) -> (Option<i32>, Vec<u8>, String) {
    let o = Command::new(ftcat()).args(args).output().unwrap();
    (o.status.code(), o.stdout, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Replace every run of exactly 16 hex digits by `<ptr>`.
fn mask_ptrs(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| c.is_ascii_digit() || (b'a'..=b'f').contains(&c);
        if hex(b[i]) && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) {
            let mut j = i;
            while j < b.len() && hex(b[j]) {
                j += 1;
            }
            if j - i == 16 && (j == b.len() || !b[j].is_ascii_alphanumeric()) {
                out.push_str("<ptr>");
                i = j;
                continue;
            }
        }
        out.push(b[i] as char);
        i += 1;
    }
    out
}

/// The value of a `mode=` token replaced by `<mode>`.
fn mask_mode(s: &str) -> String {
    match s.find(" mode=") {
        Some(i) => {
            let v = i + 6;
            let end = s[v..].find(' ').map_or(s.len(), |e| v + e);
            format!("{}<mode>{}", &s[..v], &s[end..])
        }
        None => s.to_string(),
    }
}

/// The event name of a context line (`...: NAME: ...`), if any.
fn event_of(line: &str) -> Option<&str> {
    let i = line.find("]")?;
    let rest = &line[i..];
    let c = rest.find(": ")?;
    let after = &rest[c + 2..];
    let e = after.find(|ch: char| ch == ':' || ch == '(' || ch == ' ')?;
    Some(&after[..e])
}

/// Events whose print fmt names unresolved enum constants (see module doc).
const UNRESOLVED_ENUMS: &[&str] = &["hrtimer_start", "hrtimer_init", "hrtimer_setup"];

struct Tally {
    lines: usize,
    identical: usize,
    hashed: usize,
    enums: usize,
}

fn compare(name: &str, ours: &str, theirs: &str) -> Tally {
    let a: Vec<&str> = ours.split('\n').collect();
    let b: Vec<&str> = theirs.split('\n').collect();
    assert_eq!(a.len(), b.len(), "{name}: {} lines from ftcat, {} from the kernel", a.len(), b.len());
    let mut t = Tally { lines: b.len(), identical: 0, hashed: 0, enums: 0 };
    let mut bad = Vec::new();
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x == y {
            t.identical += 1;
        } else if mask_ptrs(x) == mask_ptrs(y) && y.contains("00000000") {
            t.hashed += 1;
        } else if event_of(y).is_some_and(|e| UNRESOLVED_ENUMS.contains(&e)) && x.contains(" mode=0x") && mask_ptrs(&mask_mode(x)) == mask_ptrs(&mask_mode(y)) {
            t.enums += 1;
        } else {
            bad.push(format!("line {}:\n  ftcat:  {}\n  kernel: {}", i + 1, x, y));
        }
    }
    eprintln!(
        "{name}: {} lines compared: {} identical, {} identical but for hashed pointers, {} with unresolved enums (excluded), {} differ",
        t.lines,
        t.identical,
        t.hashed,
        t.enums,
        bad.len()
    );
    assert!(bad.is_empty(), "{name}: {} lines differ:\n{}", bad.len(), bad.iter().take(20).cloned().collect::<Vec<_>>().join("\n"));
    t
}

#[test]
fn fixture_differential() {
    let dir = fixtures();
    let pairs = pairs_in(&dir);
    assert!(pairs.len() >= 6, "expected the 6 x-* pairs, found {:?}", pairs);
    let total: usize = pairs.iter().map(|p| differential(&dir, p)).sum();
    eprintln!("fixture differential: {} pairs, {} lines", pairs.len(), total);
}

/// The VM lab's pairs in the repo (fixtures/vm-6.12: kprobe + kretprobe
/// with s32/x64/u64/string/ustring args, a stacktrace trigger, markers;
/// function tracer with func_repeats): every line must match.
#[test]
fn vm_fixture_differential() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12");
    let pairs = pairs_in(&dir);
    for want in ["x-funcrepeats", "x-kstack"] {
        assert!(pairs.iter().any(|p| p == want), "fixtures/vm-6.12/{want} missing");
    }
    let total: usize = pairs.iter().map(|p| differential(&dir, p)).sum();
    eprintln!("vm fixture differential: {} pairs, {} lines", pairs.len(), total);
}

#[test]
fn truncated_file_prints_the_intact_part() {
    let dir = fixtures();
    // v6: the per-CPU data sits at the end of the file, CPU 0 before CPU 1.
    let src = std::fs::read(dir.join("events-v6.dat")).unwrap();
    let full = run(&[dir.join("events-v6.dat").to_str().unwrap()]);
    assert_eq!(full.0, Some(0), "{}", full.2);
    let cut = std::env::temp_dir().join(format!("ftcat-trunc-{}.dat", std::process::id()));
    std::fs::write(&cut, &src[..src.len() - 3000]).unwrap();
    let (code, out, err) = run(&[cut.to_str().unwrap()]);
    let _ = std::fs::remove_file(&cut);
    assert_eq!(code, Some(1), "exit status; stderr: {err}");
    assert!(err.contains("truncated"), "error names the problem: {err}");
    assert!(err.starts_with("ftcat: "), "{err}");
    let out = String::from_utf8_lossy(&out);
    let full_out = String::from_utf8_lossy(&full.1);
    // What was printed is the CPU 0 part of the full output, in order.
    let records: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(!records.is_empty(), "the intact CPU's records are printed");
    for r in &records {
        assert!(r.contains("[000]"), "only CPU 0 is intact: {r}");
        assert!(full_out.contains(r), "a line of the full output: {r}");
    }
}

#[test]
fn byte_flipped_file_prints_the_intact_part() {
    let dir = fixtures();
    let src = dir.join("x-events.extract.dat");
    let mut d = std::fs::read(&src).unwrap();
    let n = d.len();
    // Inside the last CPU's compressed data.
    let mut o = n - 30000;
    while o < n - 29000 {
        d[o] ^= 0xff;
        o += 97;
    }
    let bad = std::env::temp_dir().join(format!("ftcat-flip-{}.dat", std::process::id()));
    std::fs::write(&bad, &d).unwrap();
    let (code, out, err) = run(&[bad.to_str().unwrap()]);
    let _ = std::fs::remove_file(&bad);
    assert_eq!(code, Some(1), "exit status; stderr: {err}");
    assert!(err.contains("corrupt"), "{err}");
    let out = String::from_utf8_lossy(&out);
    let kernel = std::fs::read_to_string(dir.join("x-events.trace.txt")).unwrap();
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(lines.len() > 100, "the intact part is printed ({} lines)", lines.len());
    // Every printed record is one the kernel printed too (pointers aside).
    let k: std::collections::HashSet<String> = kernel.lines().map(mask_ptrs).collect();
    let unknown = lines.iter().filter(|l| !k.contains(&mask_ptrs(l))).filter(|l| !event_of(l).is_some_and(|e| UNRESOLVED_ENUMS.contains(&e))).count();
    assert_eq!(unknown, 0, "printed records all come from the intact data");
}

#[test]
fn help_and_usage_errors() {
    let (code, out, _) = run(&["-h"]);
    assert_eq!(code, Some(0));
    assert!(String::from_utf8_lossy(&out).starts_with("Usage: ftcat"));
    let (code, _, err) = run(&["--style", "bogus", "x.dat"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--style"), "{err}");
    let (code, _, err) = run(&["--bogus"]);
    assert_eq!(code, Some(2), "{err}");
    let (code, _, err) = run(&["/nonexistent/trace.dat"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("/nonexistent/trace.dat"), "{err}");
    let (code, _, err) = run(&["-c", "x", "a.dat"]);
    assert_eq!(code, Some(2), "{err}");
}

/// A mistake in `-F` (syntax, a field no named event has) is a usage
/// error before any output, in both styles; a field that only some of the
/// named events have is a filter (the others compare false).
#[test]
fn filter_errors_come_before_output() {
    let f = fixtures().join("x-events.extract.dat");
    let f = f.to_str().unwrap();
    for style in ["kernel", "trace-cmd", "trace-cmd-3.1"] {
        for (spec, why) in [("sched_switch: nosuch == 1", "no event it names has a field 'nosuch'"), ("sched_switch: prev_pid ==", "expected a value"), ("nosuchevent", "no event matches")] {
            let (code, out, err) = run(&["--style", style, "-F", spec, f]);
            assert_eq!(code, Some(2), "{style} -F {spec}: {err}");
            assert!(out.is_empty(), "{style} -F {spec}: printed {} bytes before the error", out.len());
            assert!(err.contains(why), "{style} -F {spec}: {err}");
        }
    }
    let (code, out, err) = run(&["-F", "sched: prev_pid > 0", f]);
    assert_eq!(code, Some(0), "{err}");
    assert!(String::from_utf8_lossy(&out).contains("sched_switch:"));
}

#[test]
fn filters_and_stat() {
    let dir = fixtures();
    let f = dir.join("x-events.extract.dat");
    let fs = f.to_str().unwrap();
    let kernel = std::fs::read_to_string(dir.join("x-events.trace.txt")).unwrap();
    let (code, out, err) = run(&["-c", "1", "-e", "sched_*", fs]);
    assert_eq!(code, Some(0), "{err}");
    let out = String::from_utf8(out).unwrap();
    let want: Vec<&str> = kernel.lines().filter(|l| l.contains("[001]") && event_of(l).is_some_and(|e| e.starts_with("sched_"))).collect();
    let got: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(got, want);
    let (code, out, _) = run(&["--pid", "143", "--comm", "s?", "--from", "160.01", "--to", "160.02", fs]);
    assert_eq!(code, Some(0));
    let out = String::from_utf8(out).unwrap();
    for l in out.lines().filter(|l| !l.starts_with('#')) {
        assert!(l.contains(" sh-143 "), "{l}");
    }
    let (code, out, _) = run(&["--stat", fs]);
    assert_eq!(code, Some(0));
    let out = String::from_utf8(out).unwrap();
    let n = kernel.lines().filter(|l| !l.starts_with('#')).count();
    assert!(out.contains(&format!("records: {n}\n")), "{out}");
    assert!(out.contains("syscalls:sys_exit_newfstatat"), "{out}");
    assert!(out.contains("lost events: 0"), "{out}");
}

#[test]
fn stdin_input() {
    let dir = fixtures();
    let f = std::fs::File::open(dir.join("x-func.extract.dat")).unwrap();
    let o = Command::new(ftcat()).arg("-").stdin(f).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let want = std::fs::read(dir.join("x-func.trace.txt")).unwrap();
    assert!(o.stdout == want, "ftcat - differs from the kernel's text");
    // A FIFO named as FILE (a shell's <(...)) cannot be read at offsets:
    // it is read whole, as stdin is.
    let fifo = std::env::temp_dir().join(format!("ftcat-fifo-{}", std::process::id()));
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", fifo.display());
    let writer = {
        let (src, fifo) = (dir.join("x-func.extract.dat"), fifo.clone());
        std::thread::spawn(move || std::fs::write(&fifo, std::fs::read(src).unwrap()).unwrap())
    };
    let o = Command::new(ftcat()).arg(&fifo).output().unwrap();
    writer.join().unwrap();
    let _ = std::fs::remove_file(&fifo);
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout == want, "ftcat FIFO differs from the kernel's text");
}

/// No -B and an empty top buffer: ftcat prints the instance that has the
/// data (what `cat instances/lab/trace` printed), not an empty trace.
#[test]
fn empty_top_buffer_falls_back_to_instance() {
    let want = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12/x-kstack.trace.txt")).unwrap();
    let dir = std::env::temp_dir().join(format!("ftcat-fixt-inst-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for version in [7, 6] {
        let f = dir.join(format!("lab-v{version}.dat"));
        std::fs::write(&f, support::with_instances(version, &[("", false), ("lab", true)])).unwrap();
        let fs = f.to_str().unwrap();
        for args in [&[fs][..], &["-B", "lab", fs][..]] {
            let (code, out, err) = run(args);
            assert_eq!(code, Some(0), "v{version} {args:?}: {err}");
            compare(&format!("v{version} {args:?}"), &String::from_utf8(out).unwrap(), &want);
        }
        // The top buffer is still there when asked for by name.
        let (code, out, _) = run(&["-B", "", fs]);
        if code == Some(0) {
            assert!(!String::from_utf8(out).unwrap().contains("openat"), "v{version}: -B '' printed the instance");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
