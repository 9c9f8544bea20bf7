//! Live page sources: record into a private instance, then decode its
//! per-CPU `trace_pipe_raw` with the non-blocking `--once` sources and the
//! merge; every record the kernel's own `trace` file shows must come out,
//! on the same CPU, at the same (µs-rounded) time, in the same order.
//! Needs root and tracefs; skips with a message otherwise.

use ftbox::applets::source::open_live;
use ftbox::merge::{Item, Merge};
use ftbox::tracefs::Tracefs;
use std::path::PathBuf;

struct Instance {
    path: PathBuf,
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.path);
    }
}

/// (cpu, "sec.usec") of each record line of a `trace` file.
fn kernel_records(text: &str) -> Vec<(u32, String)> {
    let mut v = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(open) = line.find(" [") else { continue };
        let rest = &line[open + 2..];
        let Some(close) = rest.find(']') else { continue };
        let Ok(cpu) = rest[..close].parse() else { continue };
        let mut it = rest[close + 1..].split_whitespace();
        let _flags = it.next();
        let Some(ts) = it.next().and_then(|t| t.strip_suffix(':')) else { continue };
        v.push((cpu, ts.to_string()));
    }
    v
}

#[test]
fn live_once_matches_the_trace_file() {
    let top = match Tracefs::open() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("SKIP: no tracefs: {e}");
            return;
        }
    };
    let name = format!("ftbox-dat-{}", std::process::id());
    let path = PathBuf::from(&top.mount).join("instances").join(&name);
    if let Err(e) = std::fs::create_dir(&path) {
        eprintln!("SKIP: cannot create instance {}: {e}", path.display());
        return;
    }
    let _guard = Instance { path };
    let inst = top.instance(&name).unwrap();
    inst.write("buffer_size_kb", b"512").unwrap();
    for ev in ["sched/sched_switch", "sched/sched_wakeup", "irq", "timer/hrtimer_expire_entry"] {
        let _ = inst.write(&format!("events/{ev}/enable"), b"1");
    }
    inst.write("tracing_on", b"1").unwrap();
    // Markers from every CPU, so that the merge has real work to do.
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    std::thread::scope(|s| {
        for cpu in 0..ncpu {
            let inst = &inst;
            s.spawn(move || {
                let mut set = rustix::thread::CpuSet::new();
                set.set(cpu);
                let _ = rustix::thread::sched_setaffinity(None, &set);
                for i in 0..300 {
                    let _ = inst.write("trace_marker", format!("ftbox dat live {cpu} {i}").as_bytes());
                    if i % 50 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
            });
        }
    });
    inst.write("tracing_on", b"0").unwrap();
    let text = inst.read_str("trace").unwrap();
    let want = kernel_records(&text);
    assert!(want.len() >= 300, "only {} records in the trace file", want.len());

    let live = open_live(&top, &inst, true).unwrap();
    let mut m = Merge::new(live.layout, live.sources);
    let mut got = Vec::new();
    let mut markers = 0;
    while let Some(it) = m.next() {
        match it {
            Item::Record { cpu, ts, data } => {
                let us = (ts + 500) / 1000;
                got.push((cpu, format!("{}.{:06}", us / 1_000_000, us % 1_000_000)));
                markers += data.windows(14).any(|w| w == b"ftbox dat live") as usize;
            }
            Item::Lost { cpu, .. } => panic!("lost events on CPU {cpu} in a 512 KiB buffer"),
            Item::Error { cpu, error } => panic!("CPU {cpu}: {error}"),
        }
    }
    assert!(m.finished(), "--once sources end when empty");
    assert_eq!(markers, 300 * ncpu, "every trace_marker write decoded");
    assert_eq!(got.len(), want.len(), "record count");
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_eq!(a, b, "record {i}");
    }
    eprintln!("live: {} records on {} CPUs identical in CPU, time and order to the trace file", got.len(), ncpu);
}
