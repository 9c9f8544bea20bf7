//! The trace.dat reader and the merge against real recordings: every
//! fixture in fixtures/linux-6.12 (v6, v7 uncompressed, v7 zstd,
//! `trace-cmd extract` files) decodes to the same records, in the same
//! order, with the same timestamps, as `trace-cmd report` finds.
//! Skips with a message when trace-cmd is absent; a missing fixture fails.

use ftbox::applets::source::FileAt;
use ftbox::merge::{Item, Merge};
use ftbox::tracedat::{ReadAt, TraceDat};
use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

fn fixtures() -> PathBuf {
    support::fixtures("events.dat")
}

fn dat_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "dat"))
        .collect();
    v.sort();
    v
}

/// (cpu, ts ns) of every record `trace-cmd report` prints, raw and without
/// plugins so that each record is exactly one line.
fn oracle(file: &Path) -> Option<Vec<(u32, u64)>> {
    let out = Command::new("trace-cmd").args(["report", "-N", "-R", "-t", "-i"]).arg(file).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for line in text.lines() {
        // "comm-pid [001]   102.715172548: name: ..."
        let Some(open) = line.find(" [") else { continue };
        let rest = &line[open + 2..];
        let Some(close) = rest.find(']') else { continue };
        let Ok(cpu) = rest[..close].parse::<u32>() else { continue };
        let rest = rest[close + 1..].trim_start();
        let Some(colon) = rest.find(':') else { continue };
        let Some((s, ns)) = rest[..colon].split_once('.') else { continue };
        let (Ok(s), Ok(ns)) = (s.parse::<u64>(), ns.parse::<u64>()) else { continue };
        v.push((cpu, s * 1_000_000_000 + ns));
    }
    Some(v)
}

struct Decoded {
    records: Vec<(u32, u64)>,
    errors: Vec<String>,
    lost: usize,
    /// Records too short to hold the common fields (only corruption makes them).
    short: usize,
}

fn decode(file: &dyn ReadAt) -> Result<Decoded, String> {
    let td = TraceDat::open(file).map_err(|e| e.to_string())?;
    let top = td.top().ok_or("no top buffer")?;
    // Compared with trace-cmd report: time as kbuffer reads it.
    let mut layout = td.layout(top);
    layout.padding_delta = true;
    let mut m = Merge::from_pages(layout, td.all_cpu_pages(top));
    let mut d = Decoded { records: Vec::new(), errors: Vec::new(), lost: 0, short: 0 };
    if let Some(e) = &td.damage {
        d.errors.push(e.to_string());
    }
    while let Some(it) = m.next() {
        match it {
            Item::Record { cpu, ts, data } => {
                d.records.push((cpu, ts));
                d.short += (data.len() < 8) as usize;
            }
            Item::Lost { .. } => d.lost += 1,
            Item::Error { cpu, error } => d.errors.push(format!("cpu{cpu}: {error}")),
        }
    }
    assert!(m.finished());
    Ok(d)
}

fn have_trace_cmd() -> bool {
    let ok = Command::new("trace-cmd").arg("--help").output().is_ok();
    if !ok {
        eprintln!("SKIP: trace-cmd not installed");
    }
    ok
}

#[test]
fn every_fixture_matches_trace_cmd_report() {
    let dir = fixtures();
    if !have_trace_cmd() {
        return;
    }
    let mut files = 0;
    let mut total = 0;
    for path in dat_files(&dir) {
        let f = FileAt::open(path.to_str().unwrap()).unwrap();
        let d = decode(&f).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(d.errors.is_empty(), "{}: {:?}", path.display(), d.errors);
        assert_eq!(d.short, 0, "{}: records shorter than the common fields", path.display());
        let want = oracle(&path).unwrap_or_else(|| panic!("trace-cmd report failed on {}", path.display()));
        let name = path.file_name().unwrap().to_string_lossy();
        assert_eq!(d.records.len(), want.len(), "{name}: record count");
        let cpus: std::collections::BTreeSet<u32> = want.iter().map(|r| r.0).collect();
        for cpu in cpus {
            let a = d.records.iter().filter(|r| r.0 == cpu).count();
            let b = want.iter().filter(|r| r.0 == cpu).count();
            assert_eq!(a, b, "{name}: records on CPU {cpu}");
        }
        if let (Some(a), Some(b)) = (d.records.first(), want.first()) {
            assert_eq!(a, b, "{name}: first record");
        }
        assert_eq!(d.records.last(), want.last(), "{name}: last record");
        // The whole merged order, record by record.
        for (i, (a, b)) in d.records.iter().zip(&want).enumerate() {
            assert_eq!(a, b, "{name}: record {i} (cpu, ts)");
        }
        eprintln!("{name}: {} records, {} lost markers: same as trace-cmd report", d.records.len(), d.lost);
        files += 1;
        total += d.records.len();
    }
    eprintln!("{files} fixtures, {total} records compared");
    assert!(files >= 10);
}

#[test]
fn metadata_of_each_version() {
    let dir = fixtures();
    for (name, version, compression) in [("events-v6.dat", 6, "none"), ("events-plain.dat", 7, "none"), ("events.dat", 7, "zstd")] {
        let f = FileAt::open(dir.join(name).to_str().unwrap()).unwrap();
        let td = TraceDat::open(&f).unwrap();
        assert_eq!(td.version, version, "{name}");
        assert_eq!(td.compression, compression, "{name}");
        assert_eq!(td.long_size, 8);
        assert_eq!(td.page_size, 4096);
        assert!(td.header_page.contains("field: local_t commit;"), "{name}");
        assert!(td.header_event.contains("type_len    :    5 bits"), "{name}");
        assert!(td.formats.iter().any(|f| f.system == "ftrace" && f.text.starts_with("name: function\n")), "{name}");
        assert!(td.formats.iter().any(|f| f.system == "sched" && f.text.starts_with("name: sched_switch\n")), "{name}");
        assert!(td.formats.iter().take_while(|f| f.system == "ftrace").count() > 10, "{name}: ftrace formats first");
        assert!(td.kallsyms.lines().count() > 1000, "{name}: kallsyms");
        assert!(td.cmdlines.lines().any(|l| l.ends_with(" trace-cmd")), "{name}: cmdlines {:?}", &td.cmdlines[..td.cmdlines.len().min(200)]);
        let top = td.top().unwrap();
        assert_eq!(top.cpus.len(), 2, "{name}");
        assert_eq!(td.layout(top).commit_size, 8);
        assert_eq!(td.layout(top).data_offset, 16);
        if version == 7 {
            assert_eq!(td.options.cpu_count, Some(2), "{name}");
            assert_eq!(td.options.cpustat.len(), 2, "{name}");
            assert!(td.options.cpustat[0].contains("entries:"), "{name}");
            assert!(td.options.uname.as_deref().unwrap_or("").contains("6.12"), "{name}");
            assert!(td.options.version.is_some(), "{name}");
            assert_eq!(top.clock.as_deref(), Some("local"), "{name}");
        }
        assert_eq!(td.options.clock(), Some("local"), "{name}: {:?}", td.options.trace_clock);
    }
}

/// Cut a fixture at many points, and flip bytes in it: the intact part
/// decodes, then a clear error; never a panic.
#[test]
fn truncated_and_corrupted_files() {
    let dir = fixtures();
    // events-plain.dat (v7, uncompressed, 2 CPUs) keeps its per-CPU offsets
    // in the options trace-cmd writes after the data: cut there, the CPUs
    // are found again from the page timestamps.
    for name in ["events-plain.dat", "events.dat", "events-v6.dat", "x-events.extract.dat"] {
        let full = std::fs::read(dir.join(name)).unwrap();
        let whole = decode(&full).unwrap();
        assert!(whole.errors.is_empty());
        let n = whole.records.len();
        // Truncations: inside the metadata (open fails cleanly) and inside the
        // trace data (fewer records, then an error).
        let mut seen_partial = false;
        for cut in (0..10).map(|k| full.len() * k / 10).chain((1..12).map(|k| full.len() - k * 2900)).chain([full.len() - 1, full.len() - 4097]) {
            let part = full[..cut].to_vec();
            match decode(&part) {
                Err(e) => assert!(!e.is_empty()),
                Ok(d) if d.records.is_empty() && cut < full.len() => {
                    assert!(!d.errors.is_empty() || whole.records.is_empty(), "{name} cut at {cut}: no records and no error");
                }
                Ok(d) => {
                    assert!(d.records.len() <= n, "{name} cut at {cut}");
                    if d.records.len() < n {
                        assert!(!d.errors.is_empty(), "{name} cut at {cut}: records lost without an error");
                        assert!(d.errors.iter().all(|e| e.contains("truncated") || e.contains("corrupt")), "{name}: {:?}", d.errors);
                        for cpu in 0..4 {
                            let got: Vec<_> = d.records.iter().filter(|r| r.0 == cpu).collect();
                            let all: Vec<_> = whole.records.iter().filter(|r| r.0 == cpu).collect();
                            assert_eq!(&got[..], &all[..got.len()], "{name} cut at {cut}: CPU {cpu} is an intact prefix");
                        }
                        seen_partial = true;
                    }
                }
            }
        }
        assert!(seen_partial, "{name}: no partial decode");
        // Byte flips across the whole file, including page headers and records.
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        // Most flips land in the last 64 KiB, where the trace data is.
        let tail = full.len().saturating_sub(64 << 10);
        for k in 0..40 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let mut bad = full.clone();
            let at = if k % 4 == 0 { (rng % full.len() as u64) as usize } else { tail + (rng % (full.len() - tail) as u64) as usize };
            bad[at] ^= 0xff;
            let _ = decode(&bad);
        }
    }
}


/// The kernel's own text of the same buffer (`x-NAME.trace.txt`): the merge
/// gives the same CPU and µs-rounded time for every record, in order. The
/// function_graph texts print no timestamps and are skipped here.
#[test]
fn merged_order_matches_the_kernel_trace_text() {
    let dir = fixtures();
    let mut compared = 0;
    for path in dat_files(&dir) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".extract.dat") else { continue };
        let Ok(text) = std::fs::read_to_string(dir.join(format!("{stem}.trace.txt"))) else { continue };
        let mut want: Vec<(u32, String)> = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let Some(open) = line.find(" [") else { continue };
            let rest = &line[open + 2..];
            let Some(close) = rest.find(']') else { continue };
            let Ok(cpu) = rest[..close].parse() else { continue };
            let mut it = rest[close + 1..].split_whitespace();
            let _flags = it.next();
            let Some(ts) = it.next().and_then(|t| t.strip_suffix(':')) else { continue };
            want.push((cpu, ts.to_string()));
        }
        if want.is_empty() {
            continue;
        }
        let f = FileAt::open(path.to_str().unwrap()).unwrap();
        let td = TraceDat::open(&f).unwrap();
        let top = td.top().unwrap();
        // The default layout reads time as the kernel's own readers do.
        let mut m = Merge::from_pages(td.layout(top), td.all_cpu_pages(top));
        let mut got = Vec::new();
        while let Some(it) = m.next() {
            if let Item::Record { cpu, ts, .. } = it {
                let us = (ts + 500) / 1000;
                got.push((cpu, format!("{}.{:06}", us / 1_000_000, us % 1_000_000)));
            }
        }
        assert_eq!(got, want, "{name}");
        eprintln!("{name}: {} records in the kernel's order and time", got.len());
        compared += 1;
    }
    assert!(compared >= 3);
}
