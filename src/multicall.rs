//! argv[0] dispatch, BusyBox style: the basename picks the applet; `ftbox
//! APPLET ARGS` and `ftbox --install` make it usable before links exist.

use crate::applets::{Applet, APPLETS};
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::vec::Vec;
use std::{format, fs, io, println};

const USAGE: &str = "\
Usage: ftbox APPLET [ARGS...]
       ftbox --list
       ftbox --install [-s] DIR
       ftbox --help | --version

ftrace in one small static binary. Applets (also reached through links
named after them, which `ftbox --install` makes):
";

fn find(name: &OsStr) -> Option<&'static Applet> {
    APPLETS.iter().find(|a| a.name.as_bytes() == name.as_bytes())
}

fn basename(p: &OsStr) -> &OsStr {
    let b = p.as_bytes();
    let start = b.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
    OsStr::from_bytes(&b[start..])
}

pub fn main(mut args: Vec<OsString>) -> i32 {
    let argv0 = if args.is_empty() { OsString::from("ftbox") } else { args.remove(0) };
    let name = basename(&argv0);
    if let Some(a) = find(name) {
        return (a.main)(args);
    }
    if !name.as_bytes().starts_with(b"ftbox") {
        return not_found(name);
    }
    let Some(first) = args.first().cloned() else {
        print_help();
        return 2;
    };
    match first.as_bytes() {
        b"--help" | b"-h" => {
            print_help();
            0
        }
        b"--version" => {
            println!("ftbox {}", env!("CARGO_PKG_VERSION"));
            0
        }
        b"--list" => {
            let mut out = io::stdout().lock();
            for a in APPLETS {
                if writeln!(out, "{}", a.name).is_err() {
                    break;
                }
            }
            0
        }
        b"--install" => install(&argv0, &args[1..]),
        _ => {
            args.remove(0);
            match find(&first) {
                Some(a) => (a.main)(args),
                None => not_found(&first),
            }
        }
    }
}

fn not_found(name: &OsStr) -> i32 {
    eprintln_lossy(format_args!("ftbox: applet not found: {}", name.to_string_lossy()));
    127
}

fn eprintln_lossy(a: std::fmt::Arguments) {
    let _ = writeln!(io::stderr(), "{a}");
}

fn print_help() {
    let mut out = io::stdout().lock();
    let _ = out.write_all(USAGE.as_bytes());
    for a in APPLETS {
        let _ = writeln!(out, "  {:<6} {}", a.name, a.summary);
    }
}

/// The running binary: /proc/self/exe, else argv[0] made absolute.
fn self_path(argv0: &OsStr) -> Option<PathBuf> {
    if let Ok(p) = fs::read_link("/proc/self/exe") {
        return Some(p);
    }
    let p = Path::new(argv0);
    if p.is_absolute() {
        return Some(p.to_path_buf());
    }
    if argv0.as_bytes().contains(&b'/') {
        return std::env::current_dir().ok().map(|d| d.join(p));
    }
    None
}

fn install(argv0: &OsStr, rest: &[OsString]) -> i32 {
    let (symbolic, dir) = match rest {
        [d] if d.as_bytes() != b"-s" => (false, d),
        [s, d] if s.as_bytes() == b"-s" => (true, d),
        _ => {
            eprintln_lossy(format_args!("ftbox: usage: ftbox --install [-s] DIR"));
            return 2;
        }
    };
    let Some(target) = self_path(argv0) else {
        eprintln_lossy(format_args!("ftbox: --install: cannot find the running binary (no /proc/self/exe, relative argv[0])"));
        return 1;
    };
    let dir = Path::new(dir);
    if !dir.is_dir() {
        eprintln_lossy(format_args!("ftbox: --install: {}: not a directory", dir.display()));
        return 1;
    }
    let mut status = 0;
    for a in APPLETS {
        let link = dir.join(a.name);
        match install_one(&target, &link, symbolic) {
            Ok(()) => {}
            Err(msg) => {
                eprintln_lossy(format_args!("ftbox: --install: {}: {}", link.display(), msg));
                status = 1;
            }
        }
    }
    status
}

fn install_one(target: &Path, link: &Path, symbolic: bool) -> Result<(), std::string::String> {
    use std::os::unix::fs::MetadataExt;
    if let Ok(meta) = fs::symlink_metadata(link) {
        let correct = if symbolic {
            meta.file_type().is_symlink() && fs::read_link(link).map(|t| t == target).unwrap_or(false)
        } else {
            let t = fs::metadata(target).ok();
            t.is_some_and(|t| !meta.file_type().is_symlink() && t.ino() == meta.ino() && t.dev() == meta.dev())
        };
        return if correct { Ok(()) } else { Err(format!("exists and is not a link to {}; skipped", target.display())) };
    }
    let r = if symbolic { std::os::unix::fs::symlink(target, link) } else { fs::hard_link(target, link) };
    r.map_err(|e| {
        if e.raw_os_error() == Some(libc::EXDEV) {
            format!("{e}; use -s for symbolic links across filesystems")
        } else {
            format!("{e}")
        }
    })
}
