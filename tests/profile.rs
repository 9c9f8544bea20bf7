//! `ftcat --profile` and `--compare` on the fixtures, against what the
//! text and `--stat` of the same files say: a function's calls are its
//! entries in the text, a syscall's count its enter events, and on each
//! CPU the run time of its tasks plus its idle time is the time from its
//! first record to its last.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

fn run(args: &[&str]) -> Output {
    Command::new(ftbox()).arg("ftcat").args(args).output().unwrap()
}

/// `ftcat ARGS`'s stdout; it must succeed.
fn ftcat(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "ftcat {:?}: {}", args, String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fixture(name: &str) -> String {
    support::fixtures(name).join(name).to_str().unwrap().into()
}

/// `--profile --export jsonl` as `table.key.metric` → value.
fn profile(file: &str, extra: &[&str]) -> BTreeMap<String, f64> {
    let mut args = vec!["--profile", "--export", "jsonl"];
    args.extend_from_slice(extra);
    args.push(file);
    let mut m = BTreeMap::new();
    for line in ftcat(&args).lines() {
        // {"table":T,"key":K,"metric":M,"value":V}, in that order.
        let field = |name: &str| -> &str {
            let at = line.find(&format!("\"{name}\":")).unwrap_or_else(|| panic!("{line}")) + name.len() + 3;
            let rest = &line[at..];
            let rest = rest.strip_prefix('"').unwrap_or(rest);
            &rest[..rest.find(['"', '}']).unwrap()]
        };
        let key = format!("{}.{}.{}", field("table"), field("key"), field("metric"));
        m.insert(key, field("value").parse::<f64>().unwrap());
    }
    m
}

/// The function_graph recordings: each function's calls are its lines
/// that enter it (`func() {` and `func();`), with --max-depth too.
#[test]
fn function_calls_are_the_entries_of_the_text() {
    for (name, extra) in [("fg.dat", &[][..]), ("fg-exec.dat", &[][..]), ("x-fg.extract.dat", &[][..]), ("x-fgtail.extract.dat", &[][..]), ("fg.dat", &["--max-depth", "3"][..])] {
        let file = fixture(name);
        let mut args = extra.to_vec();
        args.push(&file);
        let mut want: BTreeMap<String, f64> = BTreeMap::new();
        for line in ftcat(&args).lines() {
            let Some((_, call)) = line.split_once(" |  ") else { continue };
            let call = call.trim();
            if let Some(f) = call.strip_suffix("() {").or_else(|| call.strip_suffix("();")) {
                *want.entry(format!("functions.{f}.calls")).or_default() += 1.0;
            }
        }
        assert!(!want.is_empty(), "{name}: no calls in the text");
        let got: BTreeMap<String, f64> = profile(&file, extra).into_iter().filter(|(k, _)| k.starts_with("functions.") && k.ends_with(".calls")).collect();
        assert_eq!(got, want, "{name} {extra:?}");
    }
}

/// The function tracer with func-no-repeats: a function's hits are its
/// lines in the text plus the repeats they announce.
#[test]
fn function_hits_are_the_calls_of_the_text() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12/x-funcrepeats.extract.dat");
    let f = f.to_str().unwrap();
    let mut want: BTreeMap<String, f64> = BTreeMap::new();
    for line in ftcat(&[f]).lines().filter(|l| !l.starts_with('#')) {
        // `TIME: FUNC <-PARENT` or `TIME: FUNC <-PARENT (repeats: N, last_ts: T)`.
        let Some((_, call)) = line.split_once(": ") else { continue };
        let Some((func, rest)) = call.split_once(" <-") else { continue };
        let n = match rest.split_once("(repeats: ") {
            Some((_, r)) => r.split(',').next().unwrap().parse().unwrap(),
            None => 1.0,
        };
        *want.entry(format!("functions.{func}.hits")).or_default() += n;
    }
    assert!(!want.is_empty());
    let got: BTreeMap<String, f64> = profile(f, &[]).into_iter().filter(|(k, _)| k.starts_with("functions.")).collect();
    assert_eq!(got, want);
}

/// `--stat`'s records per event, `system:name` → count.
fn stat_counts(file: &str) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    for line in ftcat(&["--stat", file]).lines() {
        let mut w = line.split_whitespace();
        if let (Some(name), Some(n), None) = (w.next(), w.next(), w.next()) {
            if name.contains(':') && !name.ends_with(':') {
                m.insert(name.to_string(), n.parse().unwrap());
            }
        }
    }
    m
}

#[test]
fn syscall_counts_are_the_enter_events() {
    for name in ["events.dat", "events-plain.dat", "wide.dat", "x-events.extract.dat", "x-wide.extract.dat"] {
        let file = fixture(name);
        let stat = stat_counts(&file);
        let want: BTreeMap<String, f64> = stat.iter().filter_map(|(k, &n)| Some((format!("syscalls.{}.count", k.strip_prefix("syscalls:sys_enter_")?), n))).collect();
        assert!(!want.is_empty(), "{name}: no syscalls");
        let p = profile(&file, &[]);
        let got: BTreeMap<String, f64> = p.iter().filter(|(k, _)| k.starts_with("syscalls.") && k.ends_with(".count")).map(|(k, &v)| (k.clone(), v)).collect();
        assert_eq!(got, want, "{name}");
        // And the events table says what --stat says.
        for (ev, n) in &stat {
            assert_eq!(p.get(&format!("events.{ev}.count")), Some(n), "{name}: {ev}");
        }
    }
}

/// The first and last timestamp (ns, as the text prints them: us) of
/// the records of one CPU.
fn text_span(file: &str, cpu: u32) -> Option<(u64, u64)> {
    let text = ftcat(&["--cpu", &cpu.to_string(), file]);
    let ts = |l: &str| -> Option<u64> {
        let t = l.split(": ").next()?.split_whitespace().last()?;
        let (s, us) = t.split_once('.')?;
        Some(s.parse::<u64>().ok()? * 1_000_000_000 + us.parse::<u64>().ok()? * 1000)
    };
    let mut stamps = text.lines().filter(|l| !l.starts_with('#')).filter_map(ts);
    let first = stamps.next()?;
    Some((first, stamps.last().unwrap_or(first)))
}

#[test]
fn run_time_plus_idle_is_each_cpus_span() {
    for name in ["events.dat", "events-v6.dat", "wide.dat", "stack.dat", "x-events.extract.dat"] {
        let file = fixture(name);
        for cpu in 0..2 {
            let Some((first, last)) = text_span(&file, cpu) else { continue };
            let p = profile(&file, &["--cpu", &cpu.to_string()]);
            let run: f64 = p.iter().filter(|(k, _)| k.starts_with("sched.") && k.ends_with(".run")).map(|(_, v)| v).sum();
            let idle = p[&format!("cpus.cpu{cpu}.idle")];
            let span = (last - first) as f64;
            // The text's timestamps are whole microseconds.
            assert!((run + idle - span).abs() < 1000.0, "{name} CPU {cpu}: run {run} + idle {idle} != span {span}");
        }
    }
}

#[test]
fn a_recording_against_itself_changes_nothing() {
    for name in ["fg.dat", "events.dat", "wide.dat"] {
        let f = fixture(name);
        let out = ftcat(&["--compare", &f, &f]);
        assert_eq!(out.lines().count(), 2, "{name}:\n{out}");
        // -v shows them all, each with a change of 0.
        let all = ftcat(&["--compare", &f, &f, "-v"]);
        assert!(all.lines().count() > 10, "{all}");
        assert!(all.lines().skip(2).all(|l| l.contains(" +0.0% ") || l.contains(" +0.0 ")), "{all}");
    }
    // Repeated runs: the same file twice on each side.
    let f = fixture("events.dat");
    let two = format!("{f},{f}");
    assert_eq!(ftcat(&["--compare", &two, &two]).lines().count(), 2);
}

#[test]
fn two_recordings_compare_by_the_size_of_the_change() {
    let (a, b) = (fixture("events.dat"), fixture("wide.dat"));
    let out = ftcat(&["--compare", &a, &b]);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].contains("base") && lines[0].contains("%change") && lines[0].contains("new"), "{out}");
    assert!(lines.len() > 3, "{out}");
    // Only in wide.dat: its other event systems.
    assert!(lines.iter().any(|l| l.contains(" new ") && l.ends_with("events.timer:hrtimer_start.count")), "{out}");
    // A bigger threshold leaves fewer rows.
    let fewer = ftcat(&["--compare", &a, &b, "--min-change", "50"]);
    assert!(fewer.lines().count() < lines.len(), "{fewer}");
}

/// Issue #16: across kernels and architectures. A 32-bit little-endian
/// board against a 64-bit big-endian one (the foreign fixtures), and a 6.1
/// recording against a 6.12 one, with repeated runs on one side.
#[test]
fn recordings_of_other_kernels_and_architectures_compare() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let f = |p: &str| dir.join(p).to_str().unwrap().to_string();
    let out = ftcat(&["--compare", &f("foreign/i686.dat"), &f("foreign/s390x.dat")]);
    assert!(out.lines().any(|l| l.ends_with("events.sched:sched_process_exec.rate")), "{out}");
    let base = format!("{},{}", f("foreign/i686.dat"), f("foreign/malta.dat"));
    let out = ftcat(&["--compare", &base, &f("vm-6.12/x-funcrepeats.extract.dat")]);
    assert!(out.lines().count() > 2, "{out}");
    let out = ftcat(&["--compare", &f("vm-6.1/x-timer.extract.dat"), &f("linux-6.12/events-plain.dat")]);
    // Metrics of one side only say so.
    assert!(out.lines().any(|l| l.contains(" new ") && l.ends_with("cpus.cpu0.busy")), "{out}");
}

#[test]
fn text_tables_and_histograms() {
    let out = ftcat(&["--profile", "--hist", &fixture("fg.dat")]);
    assert!(out.starts_with("# profile: "), "{out}");
    assert!(out.contains("\n# functions: function_graph calls, by total time\n#      Calls        Total         Self          Avg          Max   Function\n"), "{out}");
    assert!(out.contains("\n# functions do_sys_openat2\n#   DURATION     |      COUNT | GRAPH"), "{out}");
    let out = ftcat(&["--profile", &fixture("events.dat")]);
    for t in ["syscalls", "sched", "cpus", "irqs", "events"] {
        assert!(out.contains(&format!("\n# {t}: ")), "{t}: {out}");
    }
    // The function tracer: hits, and per caller->callee.
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12/x-funcrepeats.extract.dat");
    let p = profile(f.to_str().unwrap(), &[]);
    assert!(p.keys().any(|k| k.starts_with("functions.") && k.ends_with(".hits")), "{p:?}");
    assert!(p.keys().any(|k| k.starts_with("calls.") && k.contains("->")), "{p:?}");
}

#[test]
fn options_that_do_not_go_together() {
    let f = fixture("events.dat");
    for args in [&["--hist", &f][..], &["-v", &f], &["--min-change", "3", &f], &["--profile", "--stat", &f], &["--profile", "--export", "perfetto", &f], &["--compare", &f], &["--profile", "--compare", &f, &f], &["--compare", &f, "--min-change", "x", &f]] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&o.stderr).starts_with("ftcat: "), "{args:?}");
    }
    let o = run(&["--compare", "/nonexistent.dat", &f]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent.dat"));
}

/// A stream file (`ftrec -o -`) profiles as what it holds; a cut one
/// prints the profile of everything before the cut, then fails saying so.
#[test]
fn a_stream_file_profiles_up_to_its_cut() {
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/seeds/stream");
    let whole = seeds.join("whole");
    let p = profile(whole.to_str().unwrap(), &[]);
    assert_eq!(p.get("events.t:ev.count"), Some(&12.0), "{p:?}");
    let o = run(&["--profile", seeds.join("no-late").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cut short"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("12 records"));
}
