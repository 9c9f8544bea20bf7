//! `ftcat --export FORMAT [FILE]`: a recording's merged records through
//! ftcat's filters into an exporter, the bytes to stdout.

use alloc::vec::Vec;

use super::{jsonl::Jsonl, perfetto::Perfetto, CpuStat, Export, Meta, Row};
use crate::applets::ftcat::Args;
use crate::applets::source;
use crate::cli::{Error, Result};
use crate::format;
use crate::ksyms::{Ksyms, Printk};
use crate::merge::{Item, Merge};
use crate::sys;
use crate::text::tracecmd::filter::{glob, EventFilter};
use crate::text::{env::Decoder, kernel::rec_type, Classes, Cmdlines, Kernel, Opts};
use crate::tracedat::{Buffer, TraceDat};
use crate::tracefs::state::stat_num;
use crate::{fail, usage_err};

/// The formats, by the name `--export` takes.
pub const FORMATS: &str = "perfetto|jsonl";

/// Output is written in pieces of about this size.
const OUT_CHUNK: usize = 1 << 20;

/// Is `fd` a terminal? Asked of /proc (the device its link names), which
/// needs no ioctl.
fn is_tty(fd: i32) -> bool {
    let path = alloc::format!("/proc/self/fd/{fd}");
    let Ok(t) = sys::readlink(&sys::cpath(&path).unwrap_or_default()) else { return false };
    t.starts_with(b"/dev/pts/") || t.starts_with(b"/dev/tty") || t == b"/dev/console"
}

/// Run `--export NAME` (one of [`FORMATS`]) over the file of `a`.
pub fn run(a: &Args, name: &str) -> Result<()> {
    let Some(which) = crate::util::word_index(FORMATS, name) else {
        usage_err!("--export {}: one of perfetto, jsonl", name);
    };
    if a.live {
        usage_err!("--export reads a FILE (or - for stdin), not --live");
    }
    if which == 0 && is_tty(1) {
        usage_err!("--export perfetto writes binary: redirect stdout to a file");
    }
    let path = a.file.as_deref().unwrap_or("trace.dat");
    let input = source::Input::open(path).map_err(Error::Fail)?;
    let size = match &input {
        source::Input::File(f) => f.len(),
        source::Input::Memory(v) => v.len() as u64,
    };
    let td = match TraceDat::open(input.read_at()) {
        Ok(t) => t,
        Err(e) => fail!("{}: {}", path, e),
    };
    let full = |b: &&Buffer| b.latency || b.cpus.iter().any(|c| c.size > 0);
    let found = match &a.instance {
        Some(n) => td.buffer(n),
        None => td.top().filter(full).or_else(|| td.buffers.iter().find(full)).or(td.top()).or(td.buffers.first()),
    };
    let Some(buf) = found else {
        match &a.instance {
            Some(n) => fail!("{}: no buffer named '{}'", path, n),
            None => fail!("{}: no trace data", path),
        }
    };
    let mut events = Vec::new();
    for f in &td.formats {
        match format::parse_event(&f.system, &f.text) {
            Ok(e) => events.push(e),
            Err(e) => sys::eprintln(format_args!("ftcat: trace.dat: format of {}: {}", f.system, e)),
        }
    }
    let dec = Decoder::new(events, Ksyms::parse(td.kallsyms.as_bytes()), Printk::parse(td.printk.as_bytes()), td.endian, td.kernel_long_size() as usize);
    let mut cmd = Cmdlines::parse(td.cmdlines.as_bytes());
    cmd.add_tgids(td.options.tgids.as_deref().unwrap_or("").as_bytes());
    let mut top = 0;
    for c in &buf.cpus {
        top = top.max(c.cpu + 1);
    }
    let ncpus = td.options.cpu_count.unwrap_or(0).max(top.max(1));
    let cls = Classes::new(dec.events());
    let mut k = Kernel::new(&dec, &cmd, &cls, Opts::default(), ncpus);
    k.endian = dec.endian;
    k.long = dec.long_size;
    let uname = td.options.uname.as_deref().unwrap_or("");
    let (sysname, release, machine) = Meta::uname_words(uname);
    let layout = td.layout(buf);
    let m = Meta {
        sysname,
        release,
        machine,
        clock: buf.clock.as_deref().or(td.options.clock()).unwrap_or("local"),
        ncpus,
        page_size: layout.page_size,
        endian: td.endian,
        long_size: dec.long_size,
        cmd: &cmd,
        saved: td.cmdlines.as_bytes(),
        env: &dec,
        events: dec.events(),
    };
    let mut f = Filter::new(a, dec.events())?;
    let mut ex: alloc::boxed::Box<dyn Export> = if which == 0 { alloc::boxed::Box::new(Perfetto::new()) } else { alloc::boxed::Box::new(Jsonl::new()) };
    let mut out = Vec::with_capacity(OUT_CHUNK + (64 << 10));
    ex.begin(&mut out, &m);
    let mut stats: Vec<CpuStat> = Vec::new();
    for c in 0..ncpus {
        let st = td.options.cpustat.get(c as usize).map_or("", |s| s.as_str());
        let n = |k| stat_num(st, k);
        stats.push(CpuStat {
            cpu: c,
            entries: n("entries:"),
            overrun: n("overrun:"),
            commit_overrun: n("commit overrun:"),
            bytes: n("bytes:"),
            dropped: n("dropped events:"),
            read: n("read events:"),
            ..CpuStat::default()
        });
    }
    // Event by id, straight from a table: looked up once per record.
    let mut by_id: Vec<Option<&format::Event>> = Vec::new();
    for e in dec.events() {
        let i = e.id as usize;
        if by_id.len() <= i {
            by_id.resize(i + 1, None);
        }
        by_id[i] = Some(e);
    }
    let progress = is_tty(2) && size > (64 << 20);
    let mut merge = Merge::from_pages(layout, td.all_cpu_pages(buf));
    let (mut lat, mut errors, mut shown) = (super::buf::Buf::new(), 0u64, 0u64);
    while let Some(it) = merge.next() {
        match it {
            Item::Record { cpu, ts, data } => {
                let pid = k.pid(data);
                match f.pass(a, cpu, ts, data, pid, &cmd, m.endian) {
                    Pass::Yes => {}
                    Pass::No => continue,
                    Pass::Stop => break,
                }
                lat.clear();
                let _ = k.lat_fmt(&mut lat, data);
                let lat = core::str::from_utf8(lat.as_slice()).unwrap_or("");
                let r = Row { cpu, ts, data, event: by_id.get(rec_type(data, m.endian) as usize).copied().flatten(), pid, comm: cmd.comm(pid), lat };
                ex.record(&mut out, &m, &r);
            }
            Item::Lost { cpu, ts, count } => {
                let i = cpu as usize;
                if i < stats.len() {
                    match count {
                        Some(n) => stats[i].lost += n,
                        None => stats[i].lost_unknown += 1,
                    }
                }
                if a.cpus.as_ref().is_none_or(|l| in_list(l, cpu)) {
                    ex.lost(&mut out, cpu, ts, count);
                }
            }
            Item::Error { cpu, error } => {
                errors += 1;
                sys::eprintln(format_args!("ftcat: {}: CPU {}: {}", path, cpu, error));
            }
        }
        if out.len() >= OUT_CHUNK {
            sys::write_all(sys::fd(1), &out)?;
            out.clear();
            shown += 1;
            if progress && shown % 16 == 0 {
                let done = merge.pages_read() * layout.page_size as u64;
                let mut e = sys::stderr();
                e.bytes(alloc::format!("\rftcat: export: {}% ", (done * 100 / size.max(1)).min(100)).as_bytes());
                let _ = e.flush();
            }
        }
    }
    if progress && shown >= 16 {
        let mut e = sys::stderr();
        e.bytes(b"\r\x1b[K");
        let _ = e.flush();
    }
    ex.finish(&mut out, &m, &stats);
    sys::write_all(sys::fd(1), &out)?;
    if errors > 0 {
        return Err(Error::Exit(1));
    }
    Ok(())
}

fn in_list(l: &[(u32, u32)], x: u32) -> bool {
    l.iter().any(|&(a, b)| a <= x && x <= b)
}

enum Pass {
    Yes,
    No,
    /// Past `--to`: no later record can pass.
    Stop,
}

/// ftcat's record filters, in the order the text output applies them.
struct Filter {
    /// -e: the event ids that match (None: all).
    allowed: Option<Vec<u16>>,
    ef: EventFilter,
}

impl Filter {
    fn new(a: &Args, events: &[format::Event]) -> Result<Filter> {
        let allowed = if a.events.is_empty() {
            None
        } else {
            let mut v = Vec::new();
            for e in events {
                let full = alloc::format!("{}:{}", e.system, e.name);
                if a.events.iter().any(|g| glob(g.as_bytes(), e.name.as_bytes()) || glob(g.as_bytes(), full.as_bytes())) {
                    v.push(e.id);
                }
            }
            crate::util::sort_by_key(&mut v, |&id| id);
            Some(v)
        };
        let mut ef = EventFilter::default();
        for spec in &a.filters {
            if let Err(e) = ef.add(spec, events) {
                usage_err!("-F {}: {}", spec, e);
            }
        }
        Ok(Filter { allowed, ef })
    }

    #[allow(clippy::too_many_arguments)]
    fn pass(&mut self, a: &Args, cpu: u32, ts: u64, d: &[u8], pid: i32, cmd: &Cmdlines, endian: crate::cursor::Endian) -> Pass {
        if !self.ef.is_empty() && !self.ef.pass(cpu, d, &mut |f: &dyn Fn(&[u8]) -> bool| f(cmd.comm(pid).as_bytes()), endian) {
            return Pass::No;
        }
        if a.from.is_some_and(|f| ts < f) {
            return Pass::No;
        }
        if a.to.is_some_and(|t| ts > t) {
            return Pass::Stop;
        }
        let flags = d.get(2).copied().unwrap_or(0);
        let ok = a.cpus.as_ref().is_none_or(|l| in_list(l, cpu))
            && !(a.no_hardirq && flags & 0x08 != 0)
            && !(a.no_softirq && flags & 0x10 != 0)
            && a.pids.as_ref().is_none_or(|l| pid >= 0 && in_list(l, pid as u32))
            && (a.comms.is_empty() || a.comms.iter().any(|g| glob(g.as_bytes(), cmd.comm(pid).as_bytes())))
            && self.allowed.as_ref().is_none_or(|al| al.binary_search(&rec_type(d, endian)).is_ok());
        if ok {
            Pass::Yes
        } else {
            Pass::No
        }
    }
}
