//! Hand-built trace.dat files: what the fixtures cannot show (big endian,
//! a 32-bit kernel long, instance buffers in v6 and v7, 8 KiB sub-buffers,
//! zstd sections and chunks), read back through the public API.

use super::*;
use crate::merge::{Item, Merge};
use alloc::string::ToString;
use alloc::vec;

const HEADER_PAGE_32: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
const HEADER_PAGE_64: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
const FTRACE_FMT: &str = "name: function\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";
const SCHED_FMT: &str = "name: sched_switch\nID: 300\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n";

struct W {
    e: Endian,
    b: Vec<u8>,
}

impl W {
    fn new(e: Endian) -> W {
        W { e, b: Vec::new() }
    }
    fn n(&mut self, v: u64, size: usize) -> &mut Self {
        for i in 0..size {
            let shift = match self.e {
                Endian::Little => 8 * i,
                Endian::Big => 8 * (size - 1 - i),
            };
            self.b.push((v >> shift) as u8);
        }
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.n(v as u64, 2)
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.n(v as u64, 4)
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.n(v, 8)
    }
    fn raw(&mut self, s: &[u8]) -> &mut Self {
        self.b.extend_from_slice(s);
        self
    }
    fn cstr(&mut self, s: &str) -> &mut Self {
        self.raw(s.as_bytes()).raw(b"\0")
    }
    fn pos(&self) -> u64 {
        self.b.len() as u64
    }
    fn align(&mut self, a: usize) {
        while !self.b.len().is_multiple_of(a) {
            self.b.push(0);
        }
    }
    fn patch_u64(&mut self, at: u64, v: u64) {
        let mut t = W::new(self.e);
        t.u64(v);
        self.b[at as usize..at as usize + 8].copy_from_slice(&t.b);
    }
}

/// A page of `n` 8-byte records (type_len 2), deltas of 10, each tagged.
fn page(e: Endian, commit_size: usize, page_size: usize, ts: u64, n: usize, tag: u8) -> Vec<u8> {
    let mut w = W::new(e);
    w.u64(ts);
    w.n((n * 12) as u64, commit_size);
    for i in 0..n {
        let hdr = match e {
            Endian::Little => (10 << 5) | 2,
            Endian::Big => (2 << 27) | 10,
        };
        w.u32(hdr).raw(&[tag, i as u8, 0, 0, 0, 0, 0, 0]);
    }
    w.b.resize(page_size, 0);
    w.b
}

fn headers(w: &mut W, long: u8) {
    let hp = if long == 4 { HEADER_PAGE_32 } else { HEADER_PAGE_64 };
    w.raw(b"header_page\0").u64(hp.len() as u64).raw(hp.as_bytes());
    w.raw(b"header_event\0").u64(HEADER_EVENT.len() as u64).raw(HEADER_EVENT.as_bytes());
}

fn formats(w: &mut W) {
    w.u32(1).u64(FTRACE_FMT.len() as u64).raw(FTRACE_FMT.as_bytes());
}

fn events(w: &mut W) {
    w.u32(1).cstr("sched").u32(1).u64(SCHED_FMT.len() as u64).raw(SCHED_FMT.as_bytes());
}

const KALLSYMS: &str = "ffffffff81000000 T _stext\n";
const PRINTK: &str = "0xffffffff82000000 : \"hello %d\\n\"\n";
const CMDLINES: &str = "1 init\n42 worker\n";

/// A v6 file: top buffer with 2 CPUs, an instance "inst" with 2 CPUs.
fn v6(e: Endian, long: u8) -> Vec<u8> {
    let cs = long as usize;
    let ps = 4096;
    let mut w = W::new(e);
    w.raw(b"\x17\x08\x44tracing6\0").raw(&[(e == Endian::Big) as u8, long]).u32(ps as u32);
    headers(&mut w, long);
    formats(&mut w);
    events(&mut w);
    w.u32(KALLSYMS.len() as u32).raw(KALLSYMS.as_bytes());
    w.u32(PRINTK.len() as u32).raw(PRINTK.as_bytes());
    w.u64(CMDLINES.len() as u64).raw(CMDLINES.as_bytes());
    w.u32(2);
    w.raw(b"options  \0");
    let clock = "[local] global counter\0";
    w.u16(OPT_TRACECLOCK).u32(clock.len() as u32).raw(clock.as_bytes());
    w.u16(OPT_UNAME).u32(6).raw(b"Linux\0");
    w.u16(OPT_BUFFER).u32(8 + 5);
    let inst_off_at = w.pos();
    w.u64(0).cstr("inst");
    w.u16(OPT_DONE);
    w.raw(b"flyrecord\0");
    let top_at = w.pos();
    w.u64(0).u64(0).u64(0).u64(0);
    let inst_at = w.pos();
    w.patch_u64(inst_off_at, inst_at);
    w.raw(b"flyrecord\0");
    let inst_cpus_at = w.pos();
    w.u64(0).u64(0).u64(0).u64(0);
    // Data: top cpu0 two pages, cpu1 one; instance cpu0 none, cpu1 one.
    w.align(ps);
    let layout = [(top_at, 0, vec![page(e, cs, ps, 100, 3, 0), page(e, cs, ps, 1000, 2, 0)]), (top_at, 1, vec![page(e, cs, ps, 105, 4, 1)]), (inst_cpus_at, 0, vec![]), (inst_cpus_at, 1, vec![page(e, cs, ps, 7, 1, 9)])];
    for (table, cpu, pages) in layout {
        let off = w.pos();
        for p in &pages {
            w.raw(p);
        }
        w.patch_u64(table + cpu * 16, if pages.is_empty() { 0 } else { off });
        w.patch_u64(table + cpu * 16 + 8, (pages.len() * ps) as u64);
    }
    w.b
}

fn section(w: &mut W, id: u16, body: &[u8], compress: bool) -> u64 {
    let at = w.pos();
    if compress {
        let z = zstd_frame(body);
        w.u16(id).u16(SEC_FL_COMPRESS).u32(0).u64(8 + z.len() as u64).u32(z.len() as u32).u32(body.len() as u32).raw(&z);
    } else {
        w.u16(id).u16(0).u32(0).u64(body.len() as u64).raw(body);
    }
    at
}

#[cfg(feature = "zstd")]
fn zstd_frame(b: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(b, ruzstd::encoding::CompressionLevel::Fastest)
}
#[cfg(not(feature = "zstd"))]
fn zstd_frame(_: &[u8]) -> Vec<u8> {
    Vec::new()
}

/// A v7 file: top buffer (4 KiB pages, 2 CPUs) and instance "big" with
/// 8 KiB sub-buffers (1 CPU, id 3), options split over two chained sections.
fn v7(e: Endian, long: u8, compress: bool) -> Vec<u8> {
    let cs = long as usize;
    let mut w = W::new(e);
    w.raw(b"\x17\x08\x44tracing7\0").raw(&[(e == Endian::Big) as u8, long]).u32(4096);
    if compress {
        w.cstr("zstd").cstr("1.5.5");
    } else {
        w.cstr("none").cstr("");
    }
    let opt_at = w.pos();
    w.u64(0);
    let mut b = W::new(e);
    headers(&mut b, long);
    let hdr = section(&mut w, OPT_HEADER_INFO, &b.b, compress);
    let mut b = W::new(e);
    formats(&mut b);
    let ftr = section(&mut w, OPT_FTRACE_EVENTS, &b.b, compress);
    let mut b = W::new(e);
    events(&mut b);
    let evs = section(&mut w, OPT_EVENT_FORMATS, &b.b, compress);
    let mut b = W::new(e);
    b.u32(KALLSYMS.len() as u32).raw(KALLSYMS.as_bytes());
    let ksy = section(&mut w, OPT_KALLSYMS, &b.b, compress);
    let mut b = W::new(e);
    b.u32(PRINTK.len() as u32).raw(PRINTK.as_bytes());
    let prk = section(&mut w, OPT_PRINTK, &b.b, compress);
    let mut b = W::new(e);
    b.u64(CMDLINES.len() as u64).raw(CMDLINES.as_bytes());
    let cmd = section(&mut w, OPT_CMDLINES, &b.b, compress);
    // First options section: metadata pointers, CPUCOUNT; DONE → second.
    let mut o = W::new(e);
    for (id, off) in [(OPT_HEADER_INFO, hdr), (OPT_FTRACE_EVENTS, ftr), (OPT_EVENT_FORMATS, evs), (OPT_KALLSYMS, ksy), (OPT_PRINTK, prk), (OPT_CMDLINES, cmd)] {
        o.u16(id).u32(8).u64(off);
    }
    o.u16(OPT_CPUCOUNT).u32(4).u32(4);
    o.u16(OPT_DONE).u32(8);
    let next_at_in_body = o.pos();
    o.u64(0);
    let first = w.pos();
    w.patch_u64(opt_at, first);
    section(&mut w, OPT_DONE, &o.b, false);
    let next_patch = first + 16 + next_at_in_body;
    // Flyrecord sections and their data.
    type Table = Vec<(u32, u64, u64)>;
    let mut bufs: Vec<(String, u32, Table)> = Vec::new();
    for (name, ps, cpus) in [("", 4096usize, vec![(0u32, 2usize, 50u64), (1, 1, 40)]), ("big", 8192, vec![(3, 2, 5)])] {
        let sec = w.pos();
        w.u16(OPT_BUFFER).u16(if compress { SEC_FL_COMPRESS } else { 0 }).u32(0).u64(0);
        let mut table = Vec::new();
        for (cpu, npages, ts) in cpus {
            w.align(4096);
            let off = w.pos();
            let mut data = Vec::new();
            for k in 0..npages {
                data.extend(page(e, cs, ps, ts + 1000 * k as u64, 3 + k, cpu as u8));
            }
            if compress {
                // Two chunks: a page each at most.
                let chunks: Vec<&[u8]> = data.chunks(ps).collect();
                w.u32(chunks.len() as u32);
                for c in chunks {
                    let z = zstd_frame(c);
                    w.u32(z.len() as u32).u32(c.len() as u32).raw(&z);
                }
            } else {
                w.raw(&data);
            }
            // Like trace-cmd, a compressed size leaves out the chunk count.
            table.push((cpu, off, w.pos() - off - if compress { 4 } else { 0 }));
        }
        let end = w.pos();
        w.patch_u64(sec + 8, end - sec - 16);
        bufs.push((String::from(name), ps as u32, table));
        bufs.last_mut().unwrap().2.insert(0, (u32::MAX, sec, 0));
    }
    // Second options section: clocks and BUFFER options (as trace-cmd writes them last).
    let mut o = W::new(e);
    let clock = "[global] local\0";
    o.u16(OPT_TRACECLOCK).u32(clock.len() as u32).raw(clock.as_bytes());
    for (name, ps, table) in &bufs {
        let mut d = W::new(e);
        d.u64(table[0].1).cstr(name).cstr(if name.is_empty() { "global" } else { "mono" }).u32(*ps).u32(table.len() as u32 - 1);
        for &(cpu, off, size) in &table[1..] {
            d.u32(cpu).u64(off).u64(size);
        }
        o.u16(OPT_BUFFER).u32(d.b.len() as u32).raw(&d.b);
    }
    o.u16(OPT_CPUSTAT).u32(7).raw(b"CPU: 0\0");
    o.u16(OPT_DONE).u32(8).u64(0);
    let second = w.pos();
    section(&mut w, OPT_DONE, &o.b, compress);
    w.patch_u64(next_patch, second);
    w.b
}

fn records(td: &TraceDat, b: &Buffer) -> Vec<(u32, u64, u8, u8)> {
    let mut m = Merge::from_pages(td.layout(b), td.all_cpu_pages(b));
    let mut v = Vec::new();
    while let Some(it) = m.next() {
        match it {
            Item::Record { cpu, ts, data } => v.push((cpu, ts, data[0], data[1])),
            Item::Lost { .. } => panic!("lost"),
            Item::Error { error, .. } => panic!("{}", error),
        }
    }
    v
}

#[test]
fn v6_both_endians_both_longs_with_an_instance() {
    for e in [Endian::Little, Endian::Big] {
        for long in [4u8, 8] {
            let f = v6(e, long);
            let td = TraceDat::open(&f).unwrap_or_else(|err| panic!("{:?} {}: {}", e, long, err));
            assert_eq!((td.version, td.endian, td.long_size), (6, e, long));
            assert_eq!(td.layout(td.top().unwrap()).commit_size, long);
            assert_eq!(td.kernel_long_size(), long);
            assert_eq!(td.formats, vec![Format { system: "ftrace".to_string(), text: FTRACE_FMT.to_string() }, Format { system: "sched".to_string(), text: SCHED_FMT.to_string() }]);
            assert_eq!((td.kallsyms.as_str(), td.printk.as_str(), td.cmdlines.as_str()), (KALLSYMS, PRINTK, CMDLINES));
            assert_eq!(td.options.clock(), Some("local"));
            assert_eq!(td.options.uname.as_deref(), Some("Linux"));
            assert_eq!(td.buffers.len(), 2);
            let top = td.top().unwrap();
            let r = records(&td, top);
            // CPU0 page@100: 110,120,130; CPU1 page@105: 115..145; CPU0 page@1000: 1010,1020.
            let ts: Vec<(u32, u64)> = r.iter().map(|r| (r.0, r.1)).collect();
            assert_eq!(ts, vec![(0, 110), (1, 115), (0, 120), (1, 125), (0, 130), (1, 135), (1, 145), (0, 1010), (0, 1020)]);
            let inst = td.buffer("inst").unwrap();
            assert_eq!(inst.cpus.len(), 2);
            assert_eq!(records(&td, inst), vec![(1, 17, 9, 0)]);
        }
    }
}

#[test]
fn v7_plain_and_zstd_both_endians_with_a_big_sub_buffer_instance() {
    let modes: &[bool] = if cfg!(feature = "zstd") { &[false, true] } else { &[false] };
    for &compress in modes {
        for e in [Endian::Little, Endian::Big] {
            for long in [4u8, 8] {
                let f = v7(e, long, compress);
                let what = alloc::format!("{:?} long {} zstd {}", e, long, compress);
                let td = TraceDat::open(&f).unwrap_or_else(|err| panic!("{what}: {err}"));
                assert_eq!(td.version, 7);
                assert_eq!(td.compression, if compress { "zstd" } else { "none" });
                assert_eq!(td.formats.len(), 2, "{what}");
                assert_eq!(td.formats[0].system, "ftrace");
                assert_eq!((td.kallsyms.as_str(), td.printk.as_str(), td.cmdlines.as_str()), (KALLSYMS, PRINTK, CMDLINES), "{what}");
                assert_eq!(td.options.cpu_count, Some(4));
                assert_eq!(td.options.clock(), Some("global"));
                assert_eq!(td.options.cpustat, vec!["CPU: 0".to_string()]);
                assert_eq!(td.buffers.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(), vec!["", "big"]);
                let top = td.top().unwrap();
                assert_eq!((top.clock.as_deref(), top.page_size, top.compressed), (Some("global"), 4096, compress));
                let r = records(&td, top);
                assert_eq!(r.len(), 3 + 4 + 3, "{what}");
                assert_eq!(&r[..3], &[(1, 50, 1, 0), (0, 60, 0, 0), (1, 60, 1, 1)], "{what}");
                let big = td.buffer("big").unwrap();
                assert_eq!((big.page_size, big.clock.as_deref()), (8192, Some("mono")));
                assert_eq!(td.layout(big).page_size, 8192);
                let r = records(&td, big);
                let want: Vec<(u32, u64, u8, u8)> = vec![(3, 15, 3, 0), (3, 25, 3, 1), (3, 35, 3, 2), (3, 1015, 3, 0), (3, 1025, 3, 1), (3, 1035, 3, 2), (3, 1045, 3, 3)];
                assert_eq!(r, want, "{what}");
            }
        }
    }
}

#[test]
fn bad_headers_are_named_errors() {
    let e = TraceDat::open(&b"not a trace file at all".to_vec()).err().unwrap();
    assert_eq!(e.reason, Reason::BadMagic);
    assert!(e.to_string().contains("not a trace.dat file"));
    let mut f = v6(Endian::Little, 8);
    f[10] = b'9';
    assert_eq!(TraceDat::open(&f).err().unwrap().reason, Reason::Version(9));
    let f = v6(Endian::Little, 8);
    for cut in [5, 20, 100, 400, 700] {
        let e = TraceDat::open(&f[..cut].to_vec()).err().unwrap();
        assert!(matches!(e.reason, Reason::Truncated { .. }), "{cut}: {e}");
    }
    // zstd named in a build without it, or an algorithm nobody has.
    let mut f = v7(Endian::Little, 8, false);
    let at = f.windows(5).position(|w| w == b"none\0").unwrap();
    f[at..at + 4].copy_from_slice(b"lz4x");
    assert!(TraceDat::open(&f).is_ok(), "uncompressed sections need no decoder");
}

#[test]
fn v6_latency_file_gives_its_text() {
    let mut f = v6(Endian::Little, 8);
    let at = f.windows(10).position(|w| w == b"flyrecord\0").unwrap();
    f.truncate(at);
    f.extend_from_slice(b"latency  \0# tracer: irqsoff\n#\n");
    let td = TraceDat::open(&f).unwrap();
    // The instance's BUFFER option now points past the end: reported, not fatal.
    assert_eq!(td.damage.as_ref().unwrap().section, "instance buffer");
    assert_eq!(td.buffers.len(), 1);
    let top = td.top().unwrap();
    assert!(top.latency && top.cpus.is_empty());
    assert_eq!(td.latency_text(top).unwrap(), b"# tracer: irqsoff\n#\n");
}

#[test]
fn v7_latency_buffer_text_plain_and_zstd() {
    let modes: &[bool] = if cfg!(feature = "zstd") { &[false, true] } else { &[false] };
    for &compress in modes {
        // Take the uncompressed-options file and chain a third options
        // section (its DONE is the file's last 8 bytes) naming a BUFFER TEXT.
        let mut f = v7(Endian::Little, 8, false);
        let mut w = W::new(Endian::Little);
        w.b = core::mem::take(&mut f);
        let last = w.pos() - 8;
        let text = b"# tracer: wakeup\n  <idle>-0  0d... 1us : wakeup\n";
        let sec = w.pos();
        if compress {
            let z = zstd_frame(text);
            w.u16(OPT_BUFFER_TEXT).u16(SEC_FL_COMPRESS).u32(0).u64(12 + z.len() as u64);
            w.u32(1).u32(z.len() as u32).u32(text.len() as u32).raw(&z);
        } else {
            w.u16(OPT_BUFFER_TEXT).u16(0).u32(0).u64(text.len() as u64).raw(text);
        }
        let mut o = W::new(Endian::Little);
        let mut d = W::new(Endian::Little);
        d.u64(sec).cstr("lat").cstr("local");
        o.u16(OPT_BUFFER_TEXT).u32(d.b.len() as u32).raw(&d.b);
        o.u16(OPT_DONE).u32(8).u64(0);
        let third = w.pos();
        section(&mut w, OPT_DONE, &o.b, false);
        w.patch_u64(last, third);
        if compress {
            let at = w.b.windows(5).position(|x| x == b"none\0").unwrap();
            w.b[at..at + 4].copy_from_slice(b"zstd");
        }
        let td = TraceDat::open(&w.b).unwrap();
        let lat = td.buffer("lat").unwrap();
        assert!(lat.latency);
        assert_eq!(td.latency_text(lat).unwrap(), text, "zstd {compress}");
        assert!(td.latency_text(td.top().unwrap()).is_err());
    }
}

/// A file with one byte flipped, without copying it.
struct Flipped<'a> {
    data: &'a [u8],
    at: usize,
    x: u8,
}

impl ReadAt for Flipped<'_> {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        let n = self.data.read_at(off, buf)?;
        let off = off as usize;
        if self.at >= off && self.at < off + n {
            buf[self.at - off] ^= self.x;
        }
        Ok(n)
    }
}

/// Bytes of small v6/v7 files (plain and zstd) flipped: open and merge
/// report errors, never panic, never allocate absurdly.
#[test]
fn flipped_bytes_never_panic() {
    let mut files = vec![v6(Endian::Little, 8), v6(Endian::Big, 4), v7(Endian::Little, 8, false), v7(Endian::Big, 4, false)];
    if cfg!(feature = "zstd") {
        files.push(v7(Endian::Little, 8, true));
    }
    let mut opened = 0;
    for f in &files {
        // Header and metadata bytes densely; the page data sparsely.
        let meta_end = f.len().min(2048);
        let positions = (0..meta_end).step_by(2).chain((meta_end..f.len()).step_by(61));
        for at in positions {
            for x in [0xffu8, 0x01, 0x80] {
                let bad = Flipped { data: f, at, x };
                let Ok(td) = TraceDat::open(&bad) else { continue };
                opened += 1;
                for b in &td.buffers {
                    let mut m = Merge::from_pages(td.layout(b), td.all_cpu_pages(b));
                    let mut n = 0;
                    while m.next().is_some() {
                        n += 1;
                        assert!(n < 1_000_000);
                    }
                    let _ = td.latency_text(b);
                }
            }
        }
    }
    assert!(opened > 1000, "{opened}");
}

/// A build without the `zstd` feature names the algorithm it cannot read.
#[cfg(not(feature = "zstd"))]
#[test]
fn zstd_file_without_the_feature_is_a_clear_error() {
    let f = v7(Endian::Little, 8, true);
    let e = TraceDat::open(&f).err().unwrap();
    assert_eq!(e.reason, Reason::Compression("zstd".to_string()));
    assert!(e.to_string().contains("unsupported compression 'zstd'"), "{e}");
}

// ---- bounds and cut files ----

/// Records and errors of a buffer's merge.
fn records_and_errors(td: &TraceDat, b: &Buffer) -> (Vec<(u32, u64, u8, u8)>, Vec<Error>) {
    let mut m = Merge::from_pages(td.layout(b), td.all_cpu_pages(b));
    let (mut v, mut errs) = (Vec::new(), Vec::new());
    while let Some(it) = m.next() {
        match it {
            Item::Record { cpu, ts, data } => v.push((cpu, ts, data[0], data[1])),
            Item::Lost { .. } => panic!("lost"),
            Item::Error { error, .. } => errs.push(error),
        }
    }
    (v, errs)
}

/// Metadata and CPU data for the writer (ftrec's layout): 2 CPUs of 3
/// pages each, CPU c's page k at timestamp 100 * k + c holding k + 1
/// records tagged c.
fn writer_input(version: u32) -> (write::Meta, Vec<Vec<u8>>) {
    let data: Vec<Vec<u8>> = (0..2).map(|c| (0..3).flat_map(|k| page(Endian::Little, 8, 4096, 100 * k + c, k as usize + 1, c as u8)).collect()).collect();
    let meta = write::Meta {
        version,
        compression: write::Compression::None,
        big_endian: false,
        long_size: 8,
        page_size: 4096,
        header_page: HEADER_PAGE_64.into(),
        header_event: HEADER_EVENT.into(),
        ftrace_formats: vec![FTRACE_FMT.into()],
        systems: vec![(String::from("sched"), vec![SCHED_FMT.into()])],
        kallsyms: KALLSYMS.into(),
        printk_formats: PRINTK.into(),
        cmdlines: CMDLINES.into(),
        cpus: 2,
        options: Vec::new(),
        buffers: vec![write::Buffer { name: String::new(), clock: String::from("local"), page_size: 4096, cpu_sizes: data.iter().map(|d| d.len() as u64).collect() }],
    };
    (meta, data)
}

/// The file `meta` describes with `data` filled in, and where each CPU's data starts.
fn render(meta: &write::Meta, data: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let (mut f, mut starts) = (Vec::new(), Vec::new());
    for s in write::layout(meta) {
        match s {
            write::Seg::Bytes(b) => f.extend_from_slice(&b),
            write::Seg::Data { cpu, .. } => {
                starts.push(f.len() as u64);
                f.extend_from_slice(&data[cpu]);
            }
        }
    }
    (f, starts)
}

fn written(version: u32) -> (Vec<u8>, Vec<u64>) {
    let (meta, data) = writer_input(version);
    render(&meta, &data)
}

/// The records of the pages that lie whole before `cut`.
fn whole_pages_before(all: &[(u32, u64, u8, u8)], starts: &[u64], cut: u64) -> Vec<(u32, u64, u8, u8)> {
    all.iter().filter(|r| starts[r.0 as usize] + 4096 * (r.1 / 100 + 1) <= cut).copied().collect()
}

/// A recording cut anywhere in its data (power loss, full disk) prints
/// every whole page before the cut, then says it is truncated.
#[test]
fn writer_file_cut_in_its_data_keeps_every_whole_page() {
    for version in [6, 7] {
        let (f, starts) = written(version);
        let td = TraceDat::open(&f).unwrap();
        let (all, errs) = records_and_errors(&td, td.top().unwrap());
        assert!(errs.is_empty() && all.len() == 12, "v{version}: {all:?} {errs:?}");
        let data_end = starts[1] + 3 * 4096;
        let mut cut = starts[0] + 1;
        while cut < data_end {
            let short = f[..cut as usize].to_vec();
            let td = TraceDat::open(&short).unwrap_or_else(|e| panic!("v{version} cut at {cut}: {e}"));
            let (got, errs) = records_and_errors(&td, td.top().unwrap());
            assert_eq!(got, whole_pages_before(&all, &starts, cut), "v{version} cut at {cut}");
            assert!(errs.iter().any(|e| matches!(e.reason, Reason::Truncated { .. })), "v{version} cut at {cut}: {errs:?}");
            cut += 1531;
        }
    }
}

/// trace-cmd writes the CPU table after the data: a v7 uncompressed file
/// cut in its data lost it, and the per-CPU runs are found again from the
/// page timestamps.
#[test]
fn trace_cmd_layout_cut_in_its_data_rebuilds_the_cpu_table() {
    let f = v7(Endian::Little, 8, false);
    let td = TraceDat::open(&f).unwrap();
    let top = td.top().unwrap();
    let want = records(&td, top);
    let (cpu0, cpu1) = (top.cpus[0], top.cpus[1]);
    // Cut inside CPU 1's only page: CPU 0's two pages remain.
    let short = f[..(cpu1.offset + 100) as usize].to_vec();
    let td = TraceDat::open(&short).unwrap();
    assert!(td.damage.is_some());
    let (got, errs) = records_and_errors(&td, td.top().unwrap());
    assert_eq!(got, want.iter().filter(|r| r.0 == 0).copied().collect::<Vec<_>>());
    assert!(errs.iter().any(|e| matches!(e.reason, Reason::Truncated { .. })), "{errs:?}");
    // Cut after the top buffer: both CPUs, split where the time goes back.
    let short = f[..(cpu1.offset + cpu1.size + 10) as usize].to_vec();
    let td = TraceDat::open(&short).unwrap();
    let top = td.top().unwrap();
    assert_eq!(top.cpus.iter().map(|c| (c.cpu, c.offset, c.size)).collect::<Vec<_>>(), [(0, cpu0.offset, cpu0.size), (1, cpu1.offset, cpu1.size)]);
    assert_eq!(records_and_errors(&td, top), (want, Vec::new()));
}

/// The offset of the first v7 section with `id` (sections tile the file
/// from offset 32 in an uncompressed writer file).
fn section_at(f: &[u8], id: u16) -> usize {
    let mut at = 32;
    while u16::from_le_bytes([f[at], f[at + 1]]) != id {
        at += 16 + u64::from_le_bytes(f[at + 8..at + 16].try_into().unwrap()) as usize;
    }
    at
}

#[test]
fn a_section_referenced_many_times_is_read_once() {
    let (mut meta, data) = writer_input(7);
    let (f, _) = render(&meta, &data);
    let once = TraceDat::open(&f).unwrap();
    // The same file with the event formats and kallsyms named three times
    // more: the options section gets longer, the metadata before it stays.
    let (formats, kallsyms) = (section_at(&f, OPT_EVENT_FORMATS) as u64, section_at(&f, OPT_KALLSYMS) as u64);
    for _ in 0..3 {
        meta.options.push((OPT_EVENT_FORMATS, formats.to_le_bytes().to_vec()));
        meta.options.push((OPT_KALLSYMS, kallsyms.to_le_bytes().to_vec()));
    }
    let (g, _) = render(&meta, &data);
    let td = TraceDat::open(&g).unwrap();
    assert_eq!((td.formats.len(), td.kallsyms.as_str()), (once.formats.len(), KALLSYMS));
    assert_eq!(records(&td, td.top().unwrap()), records(&once, once.top().unwrap()));
}

/// CPU tables are checked against the file: no two CPUs on the same bytes,
/// each CPU once, CPU numbers in range; data past the end is a cut, not an error.
#[test]
fn cpu_tables_are_checked_against_the_file() {
    let (f, _) = written(7);
    let mut td = TraceDat::open(&f).unwrap();
    assert_eq!(td.file_size, f.len() as u64);
    let good = td.buffers[0].cpus.clone();
    let bad = |td: &TraceDat| td.check_buffers().err().map(|e| e.to_string()).unwrap_or_default();
    td.buffers[0].cpus[1].offset = good[0].offset + 4096;
    assert!(bad(&td).contains("share bytes"), "{}", bad(&td));
    td.buffers[0].cpus = vec![good[0]; 60_000];
    for (i, c) in td.buffers[0].cpus.iter_mut().enumerate() {
        c.cpu = i as u32;
    }
    assert!(bad(&td).contains("share bytes"), "{}", bad(&td));
    td.buffers[0].cpus = vec![good[0], CpuData { cpu: 0, ..good[1] }];
    assert!(bad(&td).contains("CPU number"), "{}", bad(&td));
    td.buffers[0].cpus = vec![good[0], CpuData { cpu: 70_000, ..good[1] }];
    assert!(bad(&td).contains("CPU number"), "{}", bad(&td));
    td.buffers[0].cpus = vec![good[0], CpuData { size: 1 << 40, ..good[1] }];
    assert!(td.check_buffers().is_ok());
}

#[test]
fn file_size_is_found_by_probing() {
    for n in [0usize, 1, 2, 3, 4095, 4096, 4097, 1 << 20, (1 << 20) + 12345] {
        assert_eq!(probe_size(&vec![7u8; n]), n as u64);
    }
}

/// Compressed sections and chunks cannot claim more than the file can
/// plausibly hold, and a file's streams share one memory budget.
#[cfg(feature = "zstd")]
#[test]
fn compressed_sizes_are_bounded() {
    let f = v7(Endian::Little, 8, true);
    // kallsyms claiming 256 MiB from a few bytes: refused by name, before decoding.
    let mut g = f.clone();
    let mut at = 18 + 11 + 8; // after the header, "zstd\0" "1.5.5\0" and the options offset
    while u16::from_le_bytes([g[at], g[at + 1]]) != OPT_KALLSYMS {
        at += 16 + u64::from_le_bytes(g[at + 8..at + 16].try_into().unwrap()) as usize;
    }
    g[at + 20..at + 24].copy_from_slice(&(256u32 << 20).to_le_bytes());
    let e = TraceDat::open(&g).err().unwrap();
    assert_eq!(e.section, "kallsyms");
    assert!(e.to_string().contains("64-fold"), "{e}");
    // A chunk claiming more than 64 sub-buffers.
    let td = TraceDat::open(&f).unwrap();
    let top = td.top().unwrap();
    let mut g = f.clone();
    let chunk = top.cpus[0].offset as usize + 4;
    g[chunk + 4..chunk + 8].copy_from_slice(&(65u32 * 4096).to_le_bytes());
    let td2 = TraceDat::open(&g).unwrap();
    let (_, errs) = records_and_errors(&td2, td2.top().unwrap());
    assert!(errs.iter().any(|e| e.to_string().contains("implausible chunk size")), "{errs:?}");
    // No room left in the budget: a clear error, not an allocation.
    td.held.set(pages::HELD_BUDGET);
    let (_, errs) = records_and_errors(&td, top);
    assert!(errs.iter().any(|e| e.to_string().contains("hold decompressed chunks")), "{errs:?}");
}

/// A staged file (ftrec -N) as trace-cmd's listener writes it: the head,
/// the filler sent a few zeros at a time, the tail; then the CPU data the
/// listener appends, in a BUFFER section named by a third options section
/// that the tail's last link is patched to. Every part is found.
#[test]
fn staged_file_with_the_listeners_data_reads_whole() {
    let (mut meta, data) = writer_input(7);
    let (mut f, staged) = write::staged_head(&meta, 100);
    f.resize(f.len() + 100, 0);
    meta.options.push((write::opt::CPUSTAT, b"CPU: 0\nentries: 6\n\0".to_vec()));
    let tail = staged.tail(&meta);
    let tail_at = f.len();
    f.extend_from_slice(&tail);
    let td = TraceDat::open(&f).unwrap();
    assert_eq!((td.cmdlines.as_str(), td.options.cpu_count, td.options.cpustat.len()), (CMDLINES, Some(2), 1));
    assert_eq!((td.kallsyms.as_str(), td.formats.len()), (KALLSYMS, 2));
    assert!(td.buffers.is_empty() || td.buffers.iter().all(|b| b.cpus.is_empty()));

    // The listener: page-aligned CPU data in a BUFFER section, its option
    // in a new options section that the last DONE now points to.
    let sec = f.len() as u64;
    f.extend_from_slice(&write::opt::BUFFER.to_le_bytes());
    f.extend_from_slice(&[0, 0, 0xff, 0xff, 0xff, 0xff]);
    let size_at = f.len();
    f.extend_from_slice(&[0; 8]);
    let mut cpus = Vec::new();
    for d in &data {
        f.resize(f.len().div_ceil(4096) * 4096, 0);
        cpus.push((f.len() as u64, d.len() as u64));
        f.extend_from_slice(d);
    }
    let size = (f.len() - size_at - 8) as u64;
    f[size_at..size_at + 8].copy_from_slice(&size.to_le_bytes());
    let opts = f.len() as u64;
    let mut o = Vec::new();
    o.extend_from_slice(&0u16.to_le_bytes());
    o.extend_from_slice(&[0, 0, 0xff, 0xff, 0xff, 0xff]);
    let mut body = Vec::new();
    body.extend_from_slice(&sec.to_le_bytes());
    body.extend_from_slice(b"\0local\0");
    body.extend_from_slice(&4096u32.to_le_bytes());
    body.extend_from_slice(&2u32.to_le_bytes());
    for (c, (off, len)) in cpus.iter().enumerate() {
        body.extend_from_slice(&(c as u32).to_le_bytes());
        body.extend_from_slice(&off.to_le_bytes());
        body.extend_from_slice(&len.to_le_bytes());
    }
    let mut opt_bytes = Vec::new();
    opt_bytes.extend_from_slice(&write::opt::BUFFER.to_le_bytes());
    opt_bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
    opt_bytes.extend_from_slice(&body);
    opt_bytes.extend_from_slice(&[0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    o.extend_from_slice(&(opt_bytes.len() as u64).to_le_bytes());
    o.extend_from_slice(&opt_bytes);
    f.extend_from_slice(&o);
    // The tail's options section ends with DONE(8) + next: patch next.
    let tail_opts_end = tail_at + 16 + u64::from_le_bytes(tail[8..16].try_into().unwrap()) as usize;
    f[tail_opts_end - 8..tail_opts_end].copy_from_slice(&opts.to_le_bytes());
    let td = TraceDat::open(&f).unwrap();
    let (all, errs) = records_and_errors(&td, td.top().unwrap());
    assert!(errs.is_empty() && all.len() == 12, "{all:?} {errs:?}");
    assert_eq!(td.cmdlines.as_str(), CMDLINES);
}
