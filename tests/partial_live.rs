//! Live differential for kmem's mm_page_* events, whose `page=%p` is
//! `(struct page *)vmemmap_base + pfn`: a kernel variable no record holds.
//! In an instance of our own (hash-ptr off) with `kmem` enabled under
//! memory churn (tar | gzip of /usr), each fill of the buffer is read as
//! the kernel's `trace` text first, then by one reader:
//! - `ftrec extract` + `ftcat FILE`: every mm_page_* line byte-identical
//!   (ftrec keeps vmemmap_base in its private option), and trace-cmd
//!   report still reads the file;
//! - `ftcat --live --once`: identical (read from the running kernel);
//! - `trace-cmd extract` + `ftcat FILE` (no private option): partial, never
//!   a field dump: the kernel's line with `page=0xPFN`, counted by --stat;
//!   `--style trace-cmd-3.1` equals `trace-cmd report`.
//!
//! Run it alone, under the lock the helpers share:
//! `flock /work/notes/tracefs.lock cargo test --release --test partial_live -- partial`.
//! Needs root and tracefs (skips otherwise).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::{w, Instance};

/// The applet `name` as a link to the binary under test.
fn applet(name: &str) -> PathBuf {
    support::applet_dir("partial-live", &support::ftbox(), &[name]).join(name)
}

fn run(cmd: &Path, args: &[&str]) -> String {
    let o = Command::new(cmd).args(args).output().unwrap();
    assert!(o.status.success(), "{} {args:?}: {}", cmd.display(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Churn memory for a while with kmem on, stop, and return the kernel's text.
fn fill(dir: &Path) -> String {
    w(dir, "tracing_on", "1");
    let _ = Command::new("sh").arg("-c").arg("timeout 1.5 sh -c 'tar cf - /usr 2>/dev/null | gzip -1 >/dev/null'; true").status();
    w(dir, "tracing_on", "0");
    std::fs::read_to_string(dir.join("trace")).unwrap()
}

fn page_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains(": mm_page_")).collect()
}

/// The hex number after `key` in `line`.
fn hex_after(line: &str, key: &str) -> Option<u64> {
    let v = &line[line.find(key)? + key.len()..];
    u64::from_str_radix(&v[..v.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(v.len())], 16).ok()
}

/// The kernel's mm_page_* lines against ours: each identical, or (when
/// `partial`) identical but for `page=`, which is `0xPFN` of the line's own
/// pfn. The comm before ` [CPU]` may differ where the kernel's comm cache
/// raced between the two reads (at most 1%).
fn compare(what: &str, kernel: &str, ours: &str, partial: bool) {
    let (k, o) = (page_lines(kernel), page_lines(ours));
    assert!(k.len() >= 100, "{what}: only {} mm_page_* lines recorded", k.len());
    assert_eq!(k.len(), o.len(), "{what}: mm_page_* lines, kernel vs ours");
    let (mut races, mut bad) = (0, Vec::new());
    for (k, o) in k.iter().zip(&o) {
        let want = match (partial, hex_after(k, " page="), hex_after(k, " pfn=0x")) {
            (true, Some(p), Some(pfn)) if p != 0 => {
                let at = k.find(" page=").unwrap() + 6;
                let end = at + k[at..].find(' ').unwrap();
                format!("{}0x{:x}{}", &k[..at], pfn, &k[end..])
            }
            _ => k.to_string(),
        };
        if *o == want {
            continue;
        }
        let tail = |s: &str| s.find(" [").map(|i| s[i..].to_string());
        if tail(o) == tail(&want) {
            races += 1;
        } else {
            bad.push(format!("  ours:   {o}\n  kernel: {want}"));
        }
    }
    eprintln!("{what}: {} mm_page_* lines, {} differ, {races} comm races", k.len(), bad.len());
    assert!(bad.is_empty(), "{what}: {} lines differ:\n{}", bad.len(), bad.iter().take(10).cloned().collect::<Vec<_>>().join("\n"));
    assert!(races * 100 <= k.len(), "{what}: {races} comm races");
}

#[test]
fn partial_kmem_pages_match_the_kernel() {
    let name = format!("ftbox-partial-{}", std::process::id());
    let Some(inst) = Instance::create(&name, Some("4096")) else { return };
    let dir = inst.dir.clone();
    w(&dir, "events/kmem/enable", "1");
    let tmp = std::env::temp_dir();
    let (ftrec, ftcat) = (applet("ftrec"), applet("ftcat"));

    // ftrec's file: vmemmap_base travels in its private option.
    let kernel = fill(&dir);
    let dat = tmp.join(format!("ftbox-partial-{}.dat", std::process::id()));
    run(&ftrec, &["extract", "-B", &name, "-o", dat.to_str().unwrap()]);
    let ours = run(&ftcat, &[dat.to_str().unwrap()]);
    compare("ftrec extract + ftcat", &kernel, &ours, false);
    let st = run(&ftcat, &["--stat", dat.to_str().unwrap()]);
    assert!(st.contains("not formatted by print fmt (fields printed): 0\n"), "{st}");
    let tc = Command::new("trace-cmd").args(["report", "-i"]).arg(&dat).output();
    if let Ok(tc) = &tc {
        // trace-cmd skips the option ids it does not know.
        assert!(tc.status.success(), "trace-cmd report of ftrec's file: {}", String::from_utf8_lossy(&tc.stderr));
        assert_eq!(page_lines(&String::from_utf8_lossy(&tc.stdout)).len(), page_lines(&ours).len(), "trace-cmd report of ftrec's file");
    }
    let _ = std::fs::remove_file(&dat);

    // ftcat --live reads the values from the running kernel itself.
    let kernel = fill(&dir);
    let ours = run(&ftcat, &["--live", "--once", "-B", &name]);
    compare("ftcat --live --once", &kernel, &ours, false);

    // A file without the option (trace-cmd's): partial, not a field dump.
    // (scripts/setup.sh installs trace-cmd: its absence is a failure.)
    assert!(tc.is_ok(), "trace-cmd (scripts/setup.sh test installs it)");
    let kernel = fill(&dir);
    let dat = tmp.join(format!("ftbox-partial-tc-{}.dat", std::process::id()));
    // (trace-cmd extract -B removes the instance when it is done.)
    let o = Command::new("trace-cmd").args(["extract", "-B", &name, "-o"]).arg(&dat).output().unwrap();
    assert!(o.status.success(), "trace-cmd extract: {}", String::from_utf8_lossy(&o.stderr));
    if !dir.exists() {
        std::mem::forget(inst);
    }
    let f = dat.to_str().unwrap();
    let ours = run(&ftcat, &[f]);
    compare("trace-cmd extract + ftcat", &kernel, &ours, true);
    let st = run(&ftcat, &["--stat", f]);
    let n = page_lines(&kernel).iter().filter(|l| hex_after(l, " page=").is_some_and(|p| p != 0)).count();
    let partial = st.lines().find_map(|l| l.strip_prefix("partially formatted (a value the recording lacks): ")).and_then(|v| v.parse::<usize>().ok());
    assert!(partial.is_some_and(|p| p >= n), "--stat counts the {n} partial page lines: {st}");
    let report = Command::new("trace-cmd").args(["report", "-i", f]).output().unwrap();
    let (want, got) = (String::from_utf8_lossy(&report.stdout).into_owned(), run(&ftcat, &["--style", "trace-cmd-3.1", f]));
    assert_eq!(page_lines(&got), page_lines(&want), "--style trace-cmd-3.1 vs trace-cmd report");
    let _ = std::fs::remove_file(&dat);
}
