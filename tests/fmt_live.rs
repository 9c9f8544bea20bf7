//! Live tests of the format parser and print fmt interpreter against this
//! machine's kernel: every event format must parse and compile, and the text
//! we render from raw ring-buffer pages must equal the kernel's `trace` file.
//! They skip (with a message) without root and tracefs.

use ftbox::cursor::Endian;
use ftbox::format::{parse_event, Event};
use ftbox::printfmt::{Env, Program};
use std::path::{Path, PathBuf};

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
            let Ok(text) = std::fs::read_to_string(&f) else { continue };
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
