//! Live differential of the output options that change the whole layout:
//! `latency-format` (alone and with verbose, record-tgid, irq-info,
//! context-info, fields, raw), `hex` and `bin` (alone, without
//! context-info, and against raw/latency-format/each other, as
//! print_trace_line() ranks them). For each set a fresh private instance
//! records a short workload with trace_marker writes, tracing stops, the
//! kernel's `trace` file is saved and `ftcat --live --once -B INSTANCE`
//! decodes the same buffer: every line must be identical, byte for byte
//! (`bin`: the whole output). Needs root and tracefs; skips with a message
//! otherwise.

use std::path::PathBuf;
use std::process::Command;
mod support;
use support::{retry_races, Instance, w};

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}


const SYSTEMS: &[&str] = &["sched", "syscalls", "irq", "timer", "signal", "task"];

/// (kernel `trace`, ftcat's output) for one option set, None to skip.
fn capture(i: usize, opts: &[(&str, &str)]) -> Option<(Vec<u8>, Vec<u8>)> {
    let name = format!("ftcat-opts{i}-{}", std::process::id());
    let inst = Instance::create(&name, Some("2048"))?;
    let dir = inst.dir.clone();
    for (o, v) in opts {
        w(&dir, &format!("options/{o}"), v);
    }
    for s in SYSTEMS {
        let _ = std::fs::write(dir.join(format!("events/{s}/enable")), "1");
    }
    w(&dir, "tracing_on", "1");
    std::fs::write(dir.join("trace_marker"), "ftcat opts test\n").unwrap();
    let st = Command::new("sh").arg("-c").arg("ls /usr/bin > /dev/null; sleep 0.02; ls /etc > /dev/null").status().unwrap();
    assert!(st.success());
    std::fs::write(dir.join("trace_marker"), b"bytes \xff\xfe and \xc3\xa9\n").unwrap();
    w(&dir, "tracing_on", "0");
    let kernel = std::fs::read(dir.join("trace")).unwrap();
    let o = Command::new(ftbox()).args(["ftcat", "--live", "--once", "-B", &name]).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "ftcat failed: {}", String::from_utf8_lossy(&o.stderr));
    drop(inst);
    Some((kernel, o.stdout))
}

/// The event name of a latency-format line: after the first ": " past the
/// context columns.
fn lat_event(line: &[u8]) -> Option<&[u8]> {
    let at = 24 + line.get(24..)?.windows(2).position(|w| w == b": ")? + 2;
    let rest = &line[at..];
    let e = rest.iter().position(|&c| c == b':' || c == b' ' || c == b'(')?;
    Some(&rest[..e])
}

/// Compare line by line; `comm` is the width of the comm column (lines
/// differing only there are saved_cmdlines races of the live setup, see
/// tests/ftcat_live.rs). Returns the number of lines, or None when more
/// than 1% raced (a busy machine evicts the cache faster: capture again).
fn compare(set: &[(&str, &str)], kernel: &[u8], ours: &[u8], comm: usize) -> Option<usize> {
    let a: Vec<&[u8]> = ours.split(|&c| c == b'\n').collect();
    let b: Vec<&[u8]> = kernel.split(|&c| c == b'\n').collect();
    let (mut races, mut excluded) = (0, 0);
    for (n, (x, y)) in a.iter().zip(&b).enumerate() {
        if x == y {
            continue;
        }
        if comm > 0 && x.len() > comm && y.len() > comm && x[comm..] == y[comm..] {
            races += 1;
            continue;
        }
        // The event name after latency columns, or at the line's start
        // (without context-info); an excluded line must be the same event.
        let ev = |l: &'_ [u8]| -> Vec<u8> {
            match lat_event(l) {
                Some(e) if comm > 0 => e.to_vec(),
                _ => l.split(|&c| c == b':').next().unwrap_or(&[]).to_vec(),
            }
        };
        // With `fields`, a `char *` field prints as `(0x%px)` of the
        // kernel's copy of the record (a heap address not in the recording).
        let ptr = set.iter().any(|o| o.0 == "fields") && y.windows(9).any(|w| w == b"=(0xffff8");
        // (hrtimer_* were excluded here until ftcat --live resolved their
        // enum names from BTF; no event of SYSTEMS is now.)
        if ptr && ev(x) == ev(y) {
            excluded += 1;
            continue;
        }
        panic!("{set:?} line {}:\n  ftcat:  {}\n  kernel: {}", n + 1, String::from_utf8_lossy(x), String::from_utf8_lossy(y));
    }
    assert_eq!(a.len(), b.len(), "{set:?}: line counts");
    eprintln!("{set:?}: {} lines, {} excluded, {} comm races", b.len(), excluded, races);
    (races * 100 <= b.len()).then_some(b.len())
}

/// Capture and compare up to three times while the comm cache races.
fn capture_compare(i: usize, set: &[(&str, &str)], comm: usize) -> Option<(Vec<u8>, usize)> {
    retry_races(&format!("{set:?}"), || {
        let (kernel, ours) = capture(i, set)?;
        Some(compare(set, &kernel, &ours, comm).map(|n| (kernel, n)))
    })
}

#[test]
fn live_latency_hex_bin() {
    // (options, width of the comm column: 8 for "%8.8s", 16 for verbose's
    // "%16s", 0 when the lines have no comm or must match whole).
    let sets: &[(&[(&str, &str)], usize)] = &[
        (&[("latency-format", "1")], 8),
        (&[("latency-format", "1"), ("verbose", "1")], 16),
        (&[("latency-format", "1"), ("record-tgid", "1")], 8),
        (&[("latency-format", "1"), ("irq-info", "0")], 8),
        (&[("latency-format", "1"), ("context-info", "0")], 0),
        (&[("latency-format", "1"), ("fields", "1")], 8),
        (&[("latency-format", "1"), ("raw", "1")], 0),
        (&[("latency-format", "1"), ("hex", "1")], 0),
        (&[("hex", "1")], 0),
        (&[("hex", "1"), ("context-info", "0")], 0),
        (&[("hex", "1"), ("raw", "1")], 0),
        (&[("bin", "1")], 0),
        (&[("bin", "1"), ("context-info", "0")], 0),
        (&[("bin", "1"), ("hex", "1"), ("latency-format", "1")], 0),
        (&[("verbose", "1"), ("raw", "1")], 0),
    ];
    let (mut lines, mut bytes) = (0, 0);
    for (i, (set, comm)) in sets.iter().enumerate() {
        if !set.iter().any(|o| o.0 == "bin") {
            let Some((kernel, n)) = capture_compare(i, set, *comm) else { return };
            lines += n;
            let lat = set.iter().any(|o| o.0 == "latency-format") && !set.iter().any(|o| o.0 == "context-info" || o.0 == "raw" || o.0 == "hex");
            if lat {
                let has = |s: &[u8]| kernel.windows(s.len()).any(|w| w == s);
                assert!(has(b" latency trace v1.1.5 on "), "{set:?}: no latency header");
            }
            continue;
        }
        let Some((kernel, ours)) = capture(i, set) else { return };
        {
            // Binary records: no comm, nothing excluded, the whole output.
            if kernel != ours {
                let at = kernel.iter().zip(&ours).position(|(a, b)| a != b).unwrap_or(kernel.len().min(ours.len()));
                let show = |v: &[u8]| String::from_utf8_lossy(&v[at.saturating_sub(80)..(at + 80).min(v.len())]).into_owned();
                panic!("{set:?}: bin output differs at byte {at} ({} vs {} bytes)\n  ftcat:  {:?}\n  kernel: {:?}", ours.len(), kernel.len(), show(&ours), show(&kernel));
            }
            bytes += kernel.len();
        }
    }
    eprintln!("latency/hex/bin: {} option sets, {} text lines and {} bin bytes identical", sets.len(), lines, bytes);
}

/// ftrec keeps the tracer state in its trace.dat (tracer, trace_options,
/// the preemption model): `ftrec extract` of an instance recorded with
/// these options, decoded by `ftcat FILE` without any -O, prints what the
/// kernel's `trace` file printed.
#[test]
fn extract_keeps_options() {
    let sets: &[&[(&str, &str)]] = &[&[("latency-format", "1")], &[("latency-format", "1"), ("verbose", "1")], &[("hex", "1")], &[("print-parent", "0"), ("record-tgid", "1")]];
    let tmp = std::env::temp_dir();
    for (i, set) in sets.iter().enumerate() {
        // Up to three captures while the comm cache races (see compare).
        let done = retry_races(&format!("{set:?}"), || {
            let name = format!("ftcat-ext{i}-{}", std::process::id());
            let inst = Instance::create(&name, None)?;
            let dir = inst.dir.clone();
            for (o, v) in *set {
                w(&dir, &format!("options/{o}"), v);
            }
            for s in SYSTEMS {
                let _ = std::fs::write(dir.join(format!("events/{s}/enable")), "1");
            }
            w(&dir, "tracing_on", "1");
            std::fs::write(dir.join("trace_marker"), "ftrec extract test\n").unwrap();
            let st = Command::new("sh").arg("-c").arg("ls /usr/bin > /dev/null; sleep 0.02").status().unwrap();
            assert!(st.success());
            w(&dir, "tracing_on", "0");
            let kernel = std::fs::read(dir.join("trace")).unwrap();
            let file = tmp.join(format!("ftcat-ext{i}-{}.dat", std::process::id()));
            let o = Command::new(ftbox()).args(["ftrec", "extract", "-B", &name, "-o"]).arg(&file).output().unwrap();
            assert_eq!(o.status.code(), Some(0), "ftrec extract failed: {}", String::from_utf8_lossy(&o.stderr));
            drop(inst);
            let o = Command::new(ftbox()).arg("ftcat").arg(&file).output().unwrap();
            let _ = std::fs::remove_file(&file);
            assert_eq!(o.status.code(), Some(0), "ftcat failed: {}", String::from_utf8_lossy(&o.stderr));
            let comm = if set.iter().any(|o| o.0 == "verbose") { 16 } else if set[0].0 == "latency-format" { 8 } else { 16 };
            Some(compare(set, &kernel, &o.stdout, if set[0].0 == "hex" { 0 } else { comm }).map(|_| ()))
        });
        if done.is_none() {
            return;
        }
    }
}
