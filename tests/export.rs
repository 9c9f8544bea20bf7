//! `ftcat --export perfetto|jsonl` over every fixture (this tree's
//! fixtures/vm-6.12, fixtures/foreign — 32-bit, big-endian, 16 KiB pages —
//! and linux-6.12), checked by Python scripts
//! with the formats' own readers: Perfetto's generated protobuf bindings
//! (tests/export/check_perfetto.py) and DuckDB (check_jsonl.py), against
//! `ftcat --stat` and `ftcat -R` of the same file.
//!
//! The Python packages are installed by `sh scripts/setup.sh test` (make
//! test runs it): a machine without them FAILS here, it does not skip.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

fn ftbox() -> PathBuf {
    std::env::var_os("FTBOX_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ftbox")))
}

/// `ftcat ARGS FILE`'s stdout into `out`.
fn ftcat(args: &[&str], file: &Path, out: &Path) {
    let o = Command::new(ftbox()).arg("ftcat").args(args).arg(file).output().unwrap();
    assert!(o.status.success(), "ftcat {:?} {}: {}", args, file.display(), String::from_utf8_lossy(&o.stderr));
    std::fs::write(out, &o.stdout).unwrap();
}

fn fixture_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dirs = [root.join("fixtures/vm-6.12"), root.join("fixtures/foreign"), support::fixtures("events.dat")];
    let mut v = Vec::new();
    for d in dirs {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "dat") {
                v.push(p);
            }
        }
    }
    v.sort();
    v
}

/// Run a checker script; its output is the failure message.
fn check(script: &str, args: &[&Path]) -> Result<String, String> {
    let py = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/export");
    let o = Command::new(py).arg(dir.join(script)).args(args).output().map_err(|e| format!("python3: {e}"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    if o.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

fn export_all(format: &str, script: &str) {
    let tmp = std::env::temp_dir().join(format!("ftbox-export-{}-{}", format, std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let files = fixture_files();
    assert!(files.len() >= 7, "fixtures missing: {files:?}");
    let mut failed = Vec::new();
    for f in &files {
        let (out, stat, raw) = (tmp.join("out"), tmp.join("stat"), tmp.join("raw"));
        ftcat(&["--export", format], f, &out);
        ftcat(&["--stat"], f, &stat);
        ftcat(&["-R"], f, &raw);
        match check(script, &[&out, &stat, &raw]) {
            Ok(msg) => eprintln!("{}: {}", f.display(), msg.trim()),
            Err(msg) => failed.push(format!("{}: {}", f.display(), msg.trim())),
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(failed.is_empty(), "{} of {} fixtures failed:\n{}", failed.len(), files.len(), failed.join("\n"));
}

#[test]
fn perfetto_bindings_read_every_fixture() {
    export_all("perfetto", "check_perfetto.py");
}

#[test]
fn duckdb_loads_every_fixture() {
    export_all("jsonl", "check_jsonl.py");
}

/// `--export perfetto-compact` says what `--export perfetto` says about
/// scheduling, read as trace processor reads compact_sched
/// (tests/export/check_compact.py), and the rest alike.
#[test]
fn compact_sched_reads_as_the_full_events() {
    let tmp = std::env::temp_dir().join(format!("ftbox-export-compact-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let mut failed = Vec::new();
    let mut compact_seen = false;
    for f in &fixture_files() {
        let (full, compact) = (tmp.join("full"), tmp.join("compact"));
        ftcat(&["--export", "perfetto"], f, &full);
        ftcat(&["--export", "perfetto-compact"], f, &compact);
        match check("check_compact.py", &[&full, &compact]) {
            Ok(msg) => {
                compact_seen |= !msg.contains("(0 compact)");
                eprintln!("{}: {}", f.display(), msg.trim());
            }
            Err(msg) => failed.push(format!("{}: {}", f.display(), msg.trim())),
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    assert!(compact_seen, "no fixture had a compact sched event");
}

/// Pages that say events were lost before them (x-kstack's pages in a
/// version 6 file, CPU 0's first page with a stored count of 7, CPU 1's
/// without one): both exports carry the losses, as `--stat` counts them.
#[test]
fn lost_events_are_carried() {
    let mut dat = support::with_instances(6, &[("", true)]);
    let td = ftbox::tracedat::TraceDat::open(&dat).unwrap();
    let b = td.top().unwrap();
    let (long, ps) = (td.long_size as usize, b.page_size as usize);
    let pages: Vec<(u32, usize)> = b.cpus.iter().map(|c| (c.cpu, c.offset as usize)).collect();
    drop(td);
    for (cpu, at) in pages {
        // The page header: u64 timestamp, then the `long` commit word
        // whose top flags say lost (bit 31) and count stored (bit 30).
        let c = at + 8;
        let commit = u32::from_le_bytes(dat[c..c + 4].try_into().unwrap());
        let used = (commit & 0xf_ffff) as usize;
        let flags = if cpu == 0 && 8 + long + used + long <= ps { 3u32 << 30 } else { 1 << 31 };
        dat[c..c + 4].copy_from_slice(&(commit | flags).to_le_bytes());
        if flags == 3 << 30 {
            let n = at + 8 + long + used;
            dat[n..n + long].copy_from_slice(&7u64.to_le_bytes()[..long]);
        }
    }
    let tmp = std::env::temp_dir().join(format!("ftbox-export-lost-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let f = tmp.join("lost.dat");
    std::fs::write(&f, &dat).unwrap();
    let (out, stat, raw) = (tmp.join("out"), tmp.join("stat"), tmp.join("raw"));
    ftcat(&["--stat"], &f, &stat);
    ftcat(&["-R"], &f, &raw);
    let st = std::fs::read_to_string(&stat).unwrap();
    assert!(st.contains("lost events: 7") && st.contains("losses of unknown size"), "{st}");
    for (format, script) in [("perfetto", "check_perfetto.py"), ("jsonl", "check_jsonl.py")] {
        ftcat(&["--export", format], &f, &out);
        let r = check(script, &[&out, &stat, &raw]);
        assert!(r.is_ok(), "{format}: {}", r.unwrap_err());
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

/// Filters apply as to the text: -e keeps only the named events.
#[test]
fn filters_apply() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/foreign/i686.dat");
    let o = Command::new(ftbox()).args(["ftcat", "--export", "jsonl", "-e", "sched_switch", "--cpu", "0"]).arg(&f).output().unwrap();
    assert!(o.status.success());
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(!text.is_empty());
    for l in text.lines() {
        assert!(l.contains("\"event\":\"sched:sched_switch\"") && l.contains("\"cpu\":0,"), "{l}");
    }
}

/// The exporter sits behind the text's own filters: with each filter set,
/// as many rows as the text has record lines (the kernel header's `#`
/// lines aside; these recordings lost nothing, so no loss rows).
#[test]
fn filters_match_the_text() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/foreign/i686.dat");
    let count = |args: &[&str], export: bool| {
        let mut c = Command::new(ftbox());
        c.arg("ftcat").args(args);
        if export {
            c.args(["--export", "jsonl"]);
        }
        let o = c.arg(&f).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().filter(|l| !l.starts_with('#')).count()
    };
    let sets: &[&[&str]] = &[&[], &["-e", "sched_switch", "--cpu", "0"], &["-e", "sys_enter*", "--pid", "1"], &["--comm", "init"], &["-F", "sched/sched_switch: prev_pid != 0"], &["-I", "-S"], &["--from", "13.5", "--to", "14"]];
    for args in sets {
        let (text, rows) = (count(args, false), count(args, true));
        assert_eq!(rows, text, "{args:?}: {rows} rows, {text} text lines");
    }
}

/// stdin goes through the same path as a file.
#[test]
fn stdin_as_a_file() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/foreign/i686.dat");
    let from_file = Command::new(ftbox()).args(["ftcat", "--export", "jsonl"]).arg(&f).output().unwrap();
    let from_stdin = Command::new(ftbox()).args(["ftcat", "--export", "jsonl", "-"]).stdin(std::fs::File::open(&f).unwrap()).output().unwrap();
    assert!(from_stdin.status.success());
    assert_eq!(from_file.stdout, from_stdin.stdout);
}

/// Binary to a terminal is refused (exit 2); text is not. Run under
/// util-linux `script`, which gives the command a terminal.
#[test]
fn no_binary_to_a_terminal() {
    // script(1) is in Debian's essential bsdutils: its absence is a broken
    // machine, not a reason to leave the check out.
    assert!(Command::new("script").arg("--version").output().is_ok(), "no `script` (util-linux) to run ftcat under a terminal");
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/foreign/i686.dat");
    let run = |format: &str| {
        let cmd = format!("'{}' ftcat --export {} '{}'", ftbox().display(), format, f.display());
        Command::new("script").args(["-qec", &cmd, "/dev/null"]).output().unwrap()
    };
    let o = run("perfetto");
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stdout));
    assert!(String::from_utf8_lossy(&o.stdout).contains("redirect stdout"));
    assert!(run("jsonl").status.success());
}

#[test]
fn unknown_format_is_a_usage_error() {
    let o = Command::new(ftbox()).args(["ftcat", "--export", "csv", "x.dat"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
}
