//! Live tests of the format parser and print fmt interpreter against this
//! machine's kernel: every event format must parse and compile, and the text
//! we render from raw ring-buffer pages must equal the kernel's `trace` file.
//! They skip (with a message) without root and tracefs.

use ftbox::cursor::Endian;
use ftbox::format::{parse_event, Event};
use ftbox::printfmt::{Env, Program};
use std::path::{Path, PathBuf};
mod support;
use support::Instance;

/// Read a tracefs file with large reads: some (events/header_page) answer a
/// first short read and then report EOF, so std's 32-byte probe read of a
/// zero-sized file loses the rest.
fn read_tracefs(p: &Path) -> std::io::Result<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(p)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
    }
    // Bytes that are not UTF-8 (the kernel prints a char field's 0xa0-0xff
    // as the byte) become the same raw-byte escapes our renderers write,
    // not U+FFFD: the comparison stays byte-exact.
    let mut s = String::new();
    ftbox::text::put_all(&mut s, &out).unwrap();
    Ok(s)
}

fn tracefs() -> Option<PathBuf> {
    for d in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let p = Path::new(d);
        if p.join("events/header_page").exists() {
            return Some(p.to_path_buf());
        }
    }
    None
}

/// Events whose print fmt we do not compile, with the reason. The target is
/// none; each entry is a print fmt that is not a C expression we can evaluate.
const COMPILE_EXCEPTIONS: &[(&str, &str)] = &[
    // GNU statement expressions `({ ... trace_seq_printf(p, ...); ... })` with
    // local variables, unions and member access on them: not an expression
    // over the record.
    ("kvmmmu/kvm_mmu_get_page", "statement expression with trace_seq_printf"),
    ("kvmmmu/kvm_mmu_prepare_zap_page", "statement expression with trace_seq_printf"),
    ("kvmmmu/kvm_mmu_sync_page", "statement expression with trace_seq_printf"),
    ("kvmmmu/kvm_mmu_unsync_page", "statement expression with trace_seq_printf"),
];

pub fn all_events(root: &Path) -> Vec<Event> {
    let mut out = Vec::new();
    let mut systems: Vec<_> = std::fs::read_dir(root.join("events")).unwrap().flatten().collect();
    systems.sort_by_key(|e| e.file_name());
    for s in systems {
        if !s.path().is_dir() {
            continue;
        }
        let sys = s.file_name().to_string_lossy().into_owned();
        let mut evs: Vec<_> = std::fs::read_dir(s.path()).unwrap().flatten().collect();
        evs.sort_by_key(|e| e.file_name());
        for e in evs {
            let f = e.path().join("format");
            let Ok(text) = read_tracefs(&f) else { continue };
            match parse_event(&sys, &text) {
                Ok(ev) => out.push(ev),
                Err(err) => panic!("{}: {}", f.display(), err),
            }
        }
    }
    out
}

#[test]
fn every_format_parses_and_compiles() {
    let Some(root) = tracefs() else {
        eprintln!("SKIP every_format_parses_and_compiles: no tracefs");
        return;
    };
    let evs = all_events(&root);
    let mut compiled = 0;
    let mut failed = Vec::new();
    for ev in &evs {
        let key = format!("{}/{}", ev.system, ev.name);
        match Program::compile(ev) {
            Ok(_) => compiled += 1,
            Err(e) => {
                if !COMPILE_EXCEPTIONS.iter().any(|(k, _)| *k == key) {
                    failed.push(format!("{key}: {e}: {}", ev.print_fmt));
                }
            }
        }
    }
    eprintln!("formats: {} parsed, {} compiled, {} listed exceptions", evs.len(), compiled, COMPILE_EXCEPTIONS.len());
    assert!(failed.is_empty(), "{} formats failed to compile:\n{}", failed.len(), failed.join("\n"));
    let _ = (Env::new(Endian::Little, 8),);
}

/// Tracing on this kernel prints these without going through their print
/// fmt, so the comparison leaves them to the `text` work's own tests:
/// - the `ftrace` system (print, bprint, bputs, function, kernel_stack, ...):
///   the kernel's built-in printers in trace_output.c;
/// - `syscalls` sys_enter_*/sys_exit_*: printed by trace_syscalls.c from the
///   syscall metadata, not from the format's print fmt.
fn printed_by_kernel_code(ev: &Event) -> bool {
    ev.system == "ftrace" || ev.system == "syscalls"
}

/// Events whose kernel text depends on something this test does not give
/// the interpreter; their lines are counted but not required to match
/// (ftcat prints them partially, or exactly when ftrec or --live supply
/// vmemmap_base: tests/partial_live.rs).
const EVAL_EXCEPTIONS: &[(&str, &str)] = &[
    // `page=%p` is `(struct page *)vmemmap_base + pfn`: the value of the
    // kernel variable vmemmap_base (randomized by KASLR) is not recorded.
    ("kmem/mm_page_alloc", "reads kernel variable vmemmap_base"),
    ("kmem/mm_page_alloc_extfrag", "reads kernel variable vmemmap_base"),
    ("kmem/mm_page_alloc_zone_locked", "reads kernel variable vmemmap_base"),
    ("kmem/mm_page_free", "reads kernel variable vmemmap_base"),
    ("kmem/mm_page_free_batched", "reads kernel variable vmemmap_base"),
    ("kmem/mm_page_pcpu_drain", "reads kernel variable vmemmap_base"),
    ("vmscan/mm_vmscan_write_folio", "reads kernel variable vmemmap_base"),
    // `age=(jiffies - REC->dirtied_when) / HZ`: jiffies when the trace file
    // is read, not when the event happened.
    ("writeback/writeback_sb_inodes_requeue", "uses jiffies at read time"),
    ("writeback/writeback_single_inode", "uses jiffies at read time"),
    ("writeback/writeback_single_inode_start", "uses jiffies at read time"),
];

/// Read every page of a per-CPU `trace_pipe_raw` without blocking.
fn read_raw(path: &Path, page_size: usize) -> Vec<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path).unwrap();
    let mut pages = Vec::new();
    loop {
        let mut buf = vec![0u8; page_size];
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                buf.truncate(n);
                pages.push(buf);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    pages
}

/// Split a `trace` line into (cpu, event name, event text): the context is
/// `COMM-PID [CPU] FLAGS SECS.USECS: `, then `NAME: TEXT`.
fn split_trace_line(line: &str) -> Option<(usize, &str, &str)> {
    let b = line.as_bytes();
    let mut i = 0;
    while i + 5 < b.len() {
        if b[i] == b'[' && b[i + 4] == b']' && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) && b[i + 5] == b' ' {
            let cpu: usize = line[i + 1..i + 4].parse().ok()?;
            let rest = &line[i + 6..];
            let colon = rest.find(": ")?;
            let rest = &rest[colon + 2..];
            let (name, text) = match rest.find(": ") {
                Some(c) => (&rest[..c], &rest[c + 2..]),
                None => (rest.strip_suffix(':').unwrap_or(rest), ""),
            };
            return Some((cpu, name, text));
        }
        i += 1;
    }
    None
}

#[test]
fn differential_against_kernel_trace() {
    differential(false);
}

/// The same with the instance's `fields` option on: the kernel prints every
/// field as name=value (print_fields()), which `render_fields` mirrors.
#[test]
fn differential_fields_option() {
    differential(true);
}

fn differential(fields: bool) {
    use ftbox::format::Events;
    use ftbox::ksyms::Ksyms;
    use ftbox::ring::{Page, PageLayout};
    let Some(root) = tracefs() else {
        eprintln!("SKIP differential_against_kernel_trace: no tracefs");
        return;
    };
    let dir = root.join(format!("instances/ftbox-fmt-{}{}", std::process::id(), if fields { "-fields" } else { "" }));
    if std::fs::create_dir(&dir).is_err() {
        eprintln!("SKIP differential_against_kernel_trace: cannot create an instance (not root?)");
        return;
    }
    let inst = Instance { dir: dir.clone() };
    let w = |f: &str, v: &str| std::fs::write(dir.join(f), v).unwrap_or_else(|e| panic!("{f}: {e}"));
    w("tracing_on", "0");
    w("buffer_size_kb", "8192");
    // Plain %p prints raw values only with hash-ptr off (see printfmt docs).
    w("options/hash-ptr", "0");
    if fields {
        w("options/fields", "1");
    }
    w("events/enable", "1");
    w("tracing_on", "1");
    let sh = "for i in 1 2 3; do ls -la /usr/bin >/dev/null; cat /proc/self/status >/dev/null; done; \
              dd if=/dev/zero of=/tmp/ftbox-fmt-$$ bs=64k count=8 conv=fsync 2>/dev/null; rm -f /tmp/ftbox-fmt-$$; \
              sleep 0.05; (sleep 1 & kill $!); wait; sync; ping -c 1 -W 1 127.0.0.1 >/dev/null 2>&1; \
              ping -6 -c 1 -W 1 ::1 >/dev/null 2>&1; (trap '' USR1; kill -USR1 $$ 2>/dev/null); \
              mkdir -p /tmp/ftbox-fmt-d-$$ && touch /tmp/ftbox-fmt-d-$$/a && mv /tmp/ftbox-fmt-d-$$/a /tmp/ftbox-fmt-d-$$/b; \
              rm -rf /tmp/ftbox-fmt-d-$$; true";
    std::process::Command::new("sh").arg("-c").arg(sh).status().unwrap();
    // Loopback TCP over IPv4 and IPv6 for the sock/tcp/skb/net events
    // (%pI4, %pI6c, %pISpc, MAC and hex helpers).
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        if let Ok(l) = std::net::TcpListener::bind(addr) {
            let a = l.local_addr().unwrap();
            if let Ok(mut c) = std::net::TcpStream::connect(a) {
                use std::io::{Read, Write};
                let (mut s, _) = l.accept().unwrap();
                let _ = c.write_all(b"ping");
                let mut b = [0u8; 4];
                let _ = s.read_exact(&mut b);
            }
        }
    }
    if let Ok(u) = std::net::UdpSocket::bind("127.0.0.1:0") {
        let _ = u.send_to(b"x", u.local_addr().unwrap());
    }
    std::fs::write(dir.join("trace_marker"), "ftbox fmt differential\n").unwrap();
    w("tracing_on", "0");

    let text = read_tracefs(&dir.join("trace")).unwrap();
    let mut events = Events::new();
    for ev in all_events(&root) {
        events.insert(ev);
    }
    let programs: Vec<_> = events.list().iter().map(Program::compile).collect();
    let kall = std::fs::read("/proc/kallsyms").unwrap_or_default();
    let ksyms = Ksyms::parse(&kall);
    let hp = read_tracefs(&root.join("events/header_page")).unwrap();
    let he = read_tracefs(&root.join("events/header_event")).unwrap_or_default();
    let endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };
    let layout = PageLayout::parse(&hp, &he, endian, 0).unwrap_or_else(|e| panic!("{e:?}\n{hp:?}\n{he:?}"));
    let long_size = std::mem::size_of::<usize>();
    let printk = ftbox::ksyms::Printk::parse(read_tracefs(&root.join("printk_formats")).unwrap_or_default().as_bytes());
    let enums = ftbox::ksyms::Enums::parse_btf(&std::fs::read("/sys/kernel/btf/vmlinux").unwrap_or_default());
    eprintln!("kallsyms: {} symbols, printk_formats: {}, BTF enumerators: {}", ksyms.len(), printk.len(), enums.len());
    let mut env = Env::new(endian, long_size);
    env.ksyms = Some(&ksyms);
    env.printk = Some(&printk);
    env.enums = Some(&enums);

    // Kernel lines per CPU, in order.
    let ncpu = std::fs::read_dir(dir.join("per_cpu")).unwrap().count();
    let mut klines: Vec<Vec<(String, String)>> = vec![Vec::new(); ncpu];
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some((cpu, name, t)) = split_trace_line(line) {
            if cpu < ncpu {
                klines[cpu].push((name.to_string(), t.to_string()));
            }
        }
    }

    let (mut compared, mut identical, mut skipped, mut failed_eval, mut excepted) = (0usize, 0usize, 0usize, 0usize, 0usize);
    let mut types = std::collections::BTreeMap::<String, (usize, usize)>::new();
    let mut diffs: Vec<String> = Vec::new();
    for cpu in 0..ncpu {
        let pages = read_raw(&dir.join(format!("per_cpu/cpu{cpu}/trace_pipe_raw")), layout.page_size as usize);
        let mut k = klines[cpu].iter();
        for p in &pages {
            let page = Page::parse(&layout, p).unwrap();
            for r in page.records() {
                let r = r.unwrap();
                let id = u16::from_ne_bytes([r.data[0], r.data[1]]);
                let Some(i) = events.index_of(id) else { panic!("cpu{cpu}: record of unknown event id {id}") };
                let ev = &events.list()[i];
                let Some((kname, ktext)) = k.next() else { panic!("cpu{cpu}: more raw records than trace lines") };
                // With `fields` the kernel prints syscalls through print_fields()
                // too; the ftrace system's built-in events it prints as
                // "UNKNOWN TYPE n" (they are not in its event list).
                if if fields { ev.system == "ftrace" } else { printed_by_kernel_code(ev) } {
                    skipped += 1;
                    continue;
                }
                assert_eq!(kname, &ev.name, "cpu{cpu}: raw and trace out of step");
                let key = format!("{}/{}", ev.system, ev.name);
                // With `fields`, a `char *` field prints as `(0xADDR:text)` where
                // 6.18 takes ADDR from its own iterator buffer: not in any recording.
                let ptr_string = fields && ev.fields.iter().any(|f| f.is_ptr && f.ctype.contains("char"));
                if ptr_string || !fields && EVAL_EXCEPTIONS.iter().any(|(k, _)| *k == key) {
                    excepted += 1;
                    continue;
                }
                compared += 1;
                let ent = types.entry(key).or_default();
                ent.0 += 1;
                let mut out = String::new();
                let res = if fields {
                    ftbox::printfmt::render_fields(ev, r.data, &env, &mut out).map_err(|e| e.what)
                } else {
                    match &programs[i] {
                        Ok(p) => p.render(ev, r.data, &env, &mut out).map(|_| ()).map_err(|e| e.what),
                        Err(e) => Err(e.what),
                    }
                };
                match res {
                    Ok(()) if out == *ktext => {
                        identical += 1;
                        ent.1 += 1;
                    }
                    Ok(()) => {
                        if diffs.iter().filter(|d| d.starts_with(&format!("{}:", ev.name))).count() < 2 {
                            diffs.push(format!("{}:\n  kernel: {ktext}\n  ours:   {out}", ev.name));
                        }
                    }
                    Err(e) => {
                        failed_eval += 1;
                        if diffs.iter().filter(|d| d.starts_with(&format!("{}:", ev.name))).count() < 2 {
                            diffs.push(format!("{}: ERROR {e}\n  kernel: {ktext}", ev.name));
                        }
                    }
                }
            }
        }
    }
    drop(inst);
    eprintln!(
        "differential{}: {compared} lines compared over {} event types, {identical} identical, {failed_eval} not evaluable, \
         {skipped} skipped (ftrace/syscalls printers), {excepted} excluded (EVAL_EXCEPTIONS; with fields: events with char * fields)",
        if fields { " (fields option)" } else { "" },
        types.len()
    );
    let mut systems = std::collections::BTreeMap::<&str, usize>::new();
    for t in types.keys() {
        *systems.entry(t.split('/').next().unwrap_or("")).or_default() += 1;
    }
    eprintln!("event types per system: {systems:?}");
    for (t, (n, ok)) in &types {
        if n != ok {
            eprintln!("  {t}: {ok}/{n}");
        }
    }
    assert!(compared > 0, "the workload produced no events");
    assert!(diffs.is_empty(), "{} events differ:\n{}", diffs.len(), diffs.join("\n"));
}
