//! Helpers shared by the integration tests (each test file is its own
//! crate; `mod support;` pulls this in, and uses what it needs).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// x-kstack (stack traces: `=>` lines) rewritten with instance buffers, the
/// way `trace-cmd extract -B` lays a file out: `bufs` names the buffers
/// ("" = top) and says which carry the records (the same records in each:
/// equal timestamps show the merge's tie order).
pub fn with_instances(version: u32, bufs: &[(&str, bool)]) -> Vec<u8> {
    use ftbox::tracedat::write::{self, Buffer, Meta, Seg};
    let orig = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12/x-kstack.extract.dat")).unwrap();
    let td = ftbox::tracedat::TraceDat::open(&orig).unwrap();
    let (mut ftrace, mut systems) = (Vec::new(), Vec::<(String, Vec<Vec<u8>>)>::new());
    for f in &td.formats {
        let text = f.text.clone().into_bytes();
        match systems.last_mut() {
            _ if f.system == "ftrace" => ftrace.push(text),
            Some((s, v)) if *s == f.system => v.push(text),
            _ => systems.push((f.system.clone(), vec![text])),
        }
    }
    let b = td.top().unwrap();
    let cpus = td.options.cpu_count.unwrap();
    let mut data = vec![Vec::new(); cpus as usize];
    for c in &b.cpus {
        let mut cp = td.cpu_pages(b, c);
        while let Some(p) = cp.next_page() {
            data[c.cpu as usize].extend_from_slice(p.unwrap());
        }
    }
    let clock = b.clock.clone().or_else(|| td.options.clock().map(String::from)).unwrap_or_else(|| "local".into());
    let buffers = bufs
        .iter()
        .map(|&(n, full)| Buffer { name: n.into(), clock: clock.clone(), page_size: b.page_size, cpu_sizes: data.iter().map(|d| if full { d.len() as u64 } else { 0 }).collect() })
        .collect();
    let meta = Meta {
        version,
        compression: write::Compression::None,
        big_endian: false,
        long_size: td.long_size,
        page_size: td.page_size,
        header_page: td.header_page.clone().into_bytes(),
        header_event: td.header_event.clone().into_bytes(),
        ftrace_formats: ftrace,
        systems,
        kallsyms: td.kallsyms.as_bytes().to_vec(),
        printk_formats: td.printk.clone().into_bytes(),
        cmdlines: td.cmdlines.clone().into_bytes(),
        cpus,
        options: Vec::new(),
        buffers,
    };
    let mut out = Vec::new();
    for s in write::layout(&meta) {
        match s {
            Seg::Bytes(b) => out.extend_from_slice(&b),
            Seg::Data { buffer, cpu, .. } => out.extend_from_slice(if bufs[buffer].1 { &data[cpu] } else { &[] }),
        }
    }
    out
}

/// The binary under test: FTBOX_BIN (make test points it at the shipped
/// build, test-cross at the target's) or cargo's own build.
pub fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// A new directory holding `applets` as links to `bin`, the way ftbox is
/// installed (argv[0] picks the applet). New on every call, never reused:
/// a directory an earlier run left under the same pid (pids repeat across
/// CI runs) may hold links to a binary that is gone, and running one then
/// fails with ENOENT. Tests of one process call this in parallel: the
/// counter keeps their directories apart.
pub fn applet_dir(tag: &str, bin: &Path, applets: &[&str]) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("ftbox-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
    for a in applets {
        let l = d.join(a);
        std::os::unix::fs::symlink(bin, &l).unwrap_or_else(|e| panic!("{}: {e}", l.display()));
    }
    d
}

/// The linux-6.12 recordings in fixtures/linux-6.12 (provenance in
/// fixtures/README.md). A missing `marker` file fails the test, naming
/// the path: a fresh clone checks the kernel-text fidelity, never skips it.
pub fn fixtures(marker: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/linux-6.12");
    let want = dir.join(marker);
    assert!(want.exists(), "fixture missing: {}", want.display());
    dir
}

/// A private tracefs instance of a live test: tracing and its events off,
/// then removed when the test ends (retrying while a reader we started still
/// holds one of its files).
pub struct Instance {
    pub dir: PathBuf,
}

impl Instance {
    /// A fresh instance `/sys/kernel/tracing/instances/NAME`, tracing off,
    /// `buffer_kb` per CPU (the kernel's default for None) and `hash-ptr` off (plain %p prints raw values);
    /// None, after a SKIP message, without tracefs or the right to create it.
    pub fn create(name: &str, buffer_kb: Option<&str>) -> Option<Instance> {
        let root = Path::new("/sys/kernel/tracing");
        if !root.join("trace").exists() {
            eprintln!("SKIP: no tracefs at {}", root.display());
            return None;
        }
        let dir = root.join("instances").join(name);
        if let Err(e) = std::fs::create_dir(&dir) {
            eprintln!("SKIP: cannot create instance {} ({e}); needs root", dir.display());
            return None;
        }
        let inst = Instance { dir };
        w(&inst.dir, "tracing_on", "0");
        if let Some(kb) = buffer_kb {
            w(&inst.dir, "buffer_size_kb", kb);
        }
        w(&inst.dir, "options/hash-ptr", "0");
        Some(inst)
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("tracing_on"), "0");
        remove_instance(&self.dir);
    }
}

/// Remove a test's tracefs instance, its events off first, retrying for
/// five seconds while the kernel refuses: a reader a test started may
/// still hold one of its files for a moment, and an instance left behind
/// keeps a ring buffer per CPU until reboot.
pub fn remove_instance(dir: &Path) {
    let _ = std::fs::write(dir.join("events/enable"), "0");
    for _ in 0..50 {
        if std::fs::remove_dir(dir).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    eprintln!("warning: could not remove {}", dir.display());
}

/// Write a control file of `dir`, or fail the test naming it.
pub fn w(dir: &Path, f: &str, v: &str) {
    std::fs::write(dir.join(f), v).unwrap_or_else(|e| panic!("write {}: {e}", dir.join(f).display()));
}

/// Capture and compare up to three times while the kernel's comm cache
/// races (see comm_race in tests/ftcat_live.rs): `once` returns None to
/// skip (no tracefs), Some(None) when more than 1% of the lines raced,
/// Some(Some(x)) when the comparison held. Fails the test naming `what`
/// after three raced captures.
pub fn retry_races<T>(what: &str, mut once: impl FnMut() -> Option<Option<T>>) -> Option<T> {
    for _ in 0..3 {
        if let Some(x) = once()? {
            return Some(x);
        }
    }
    panic!("{what}: more than 1% comm-cache races three times");
}
