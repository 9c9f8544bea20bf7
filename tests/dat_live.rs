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
    live_once(None);
}

/// Sub-buffers larger than a page (buffer_subbuf_size_kb, 6.8+).
#[test]
fn live_once_with_8k_sub_buffers() {
    live_once(Some(8));
}

fn live_once(subbuf_kb: Option<u32>) {
    let top = match Tracefs::open() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("SKIP: no tracefs: {e}");
            return;
        }
    };
    let name = format!("ftbox-dat-{}-{}", std::process::id(), subbuf_kb.unwrap_or(0));
    let path = PathBuf::from(&top.mount).join("instances").join(&name);
    if let Err(e) = std::fs::create_dir(&path) {
        eprintln!("SKIP: cannot create instance {}: {e}", path.display());
        return;
    }
    let _guard = Instance { path };
    let inst = top.instance(&name).unwrap();
    inst.write("buffer_size_kb", b"512").unwrap();
    if let Some(kb) = subbuf_kb {
        if inst.write("buffer_subbuf_size_kb", kb.to_string().as_bytes()).is_err() {
            eprintln!("SKIP: buffer_subbuf_size_kb not supported");
            return;
        }
        assert_eq!(inst.read_str("buffer_subbuf_size_kb").unwrap().trim(), kb.to_string());
    }
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
    if let Some(kb) = subbuf_kb {
        assert_eq!(live.layout.page_size, kb * 1024);
    }
    let layout_kb = live.layout.page_size / 1024;
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
    eprintln!("live ({} KiB sub-buffers): {} records on {} CPUs identical in CPU, time and order to the trace file", layout_kb, got.len(), ncpu);
}

/// An overwritten (overrun) buffer: the first page read says events were
/// lost and how many; that count is the kernel's own overrun figure.
#[test]
fn live_lost_events_match_the_overrun_count() {
    let top = match Tracefs::open() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("SKIP: no tracefs: {e}");
            return;
        }
    };
    let name = format!("ftbox-dat-lost-{}", std::process::id());
    let path = PathBuf::from(&top.mount).join("instances").join(&name);
    if let Err(e) = std::fs::create_dir(&path) {
        eprintln!("SKIP: cannot create instance {}: {e}", path.display());
        return;
    }
    let _guard = Instance { path };
    let inst = top.instance(&name).unwrap();
    inst.write("buffer_size_kb", b"8").unwrap();
    inst.write("tracing_on", b"1").unwrap();
    let mut set = rustix::thread::CpuSet::new();
    set.set(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            rustix::thread::sched_setaffinity(None, &set).unwrap();
            for i in 0..3000 {
                let _ = inst.write("trace_marker", format!("ftbox dat lost {i}").as_bytes());
            }
        });
    });
    inst.write("tracing_on", b"0").unwrap();
    let stats = inst.read_str("per_cpu/cpu0/stats").unwrap();
    let overrun: u64 = stats.lines().find_map(|l| l.strip_prefix("overrun: ")).unwrap().trim().parse().unwrap();
    assert!(overrun > 0, "no overrun: {stats}");
    let live = open_live(&top, &inst, true).unwrap();
    let mut m = Merge::new(live.layout, live.sources);
    let (mut lost, mut markers, mut last) = (0u64, 0u64, None);
    while let Some(it) = m.next() {
        match it {
            Item::Record { cpu: 0, data, .. } => {
                if let Some(p) = data.windows(15).position(|w| w == b"ftbox dat lost ") {
                    let digits: Vec<u8> = data[p + 15..].iter().copied().take_while(u8::is_ascii_digit).collect();
                    let n: u64 = std::str::from_utf8(&digits).unwrap().parse().unwrap();
                    if let Some(prev) = last {
                        assert_eq!(n, prev + 1, "markers in order after the loss");
                    }
                    last = Some(n);
                    markers += 1;
                }
            }
            Item::Record { .. } => {}
            Item::Lost { cpu, count, .. } => {
                assert_eq!(cpu, 0);
                lost += count.expect("the kernel stores the count when it fits");
            }
            Item::Error { cpu, error } => panic!("CPU {cpu}: {error}"),
        }
    }
    assert_eq!(lost, overrun, "lost count equals the overrun figure");
    assert_eq!(last, Some(2999));
    assert_eq!(markers + lost, 3000, "every marker either decoded or counted lost");
    eprintln!("lost: {markers} markers decoded, {lost} counted lost, as the kernel's overrun says");
}
