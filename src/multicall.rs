//! argv[0] dispatch, BusyBox style: the basename picks the applet; `ftbox
//! APPLET ARGS` and `ftbox --install` make it usable before links exist.

use crate::applets::{Applet, APPLETS};
use crate::cli;
use crate::sys::{self, lossy};
use alloc::ffi::CString;
use core::ffi::CStr;
use alloc::vec::Vec;
use core::fmt::Write;

const USAGE: &str = "\
Usage: ftbox APPLET [ARGS...]
       ftbox --list
       ftbox --install [-s] DIR
       ftbox --help | --version

ftrace in one small static binary. Applets (also reached through links
named after them, which `ftbox --install` makes):
";

fn find(name: &[u8]) -> Option<&'static Applet> {
    APPLETS.iter().find(|a| a.name.as_bytes() == name)
}

fn basename(p: &[u8]) -> &[u8] {
    let start = p.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
    &p[start..]
}

/// argv, argv[0] included, as byte strings.
#[inline(never)]
pub fn main(mut args: Vec<Vec<u8>>) -> i32 {
    let argv0 = if args.is_empty() { Vec::from(&b"ftbox"[..]) } else { args.remove(0) };
    let name = basename(&argv0);
    if let Some(a) = find(name) {
        return (a.main)(args);
    }
    if !name.starts_with(b"ftbox") {
        return not_found(name);
    }
    if args.is_empty() {
        print_help();
        return 2;
    }
    let first = args.remove(0);
    match &first[..] {
        b"--help" | b"-h" => {
            print_help();
            0
        }
        b"--version" => {
            sys::stdout().bytes(concat!("ftbox ", env!("CARGO_PKG_VERSION"), "\n").as_bytes());
            0
        }
        b"--list" => {
            let mut out = sys::stdout();
            for a in APPLETS {
                out.bytes(a.name.as_bytes());
                out.bytes(b"\n");
            }
            0
        }
        b"--install" => install(&argv0, &args),
        name => match find(name) {
            Some(a) => (a.main)(args),
            None => not_found(name),
        },
    }
}

fn not_found(name: &[u8]) -> i32 {
    cli::warn(format_args!("applet not found: {}", lossy(name)));
    127
}

fn print_help() {
    let mut out = sys::stdout();
    out.bytes(USAGE.as_bytes());
    for a in APPLETS {
        let _ = writeln!(out, "  {:<6} {}", a.name, a.summary);
    }
}

/// A path for the system calls: built once, so each call takes a `&CStr`
/// instead of converting (and maybe allocating) a byte string per call.
/// argv entries hold no NUL.
fn cstr(v: Vec<u8>) -> CString {
    CString::new(v).unwrap_or_default()
}

/// `dir/name`.
fn join(dir: &[u8], name: &[u8]) -> CString {
    let mut p = dir.to_vec();
    if !p.ends_with(b"/") {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    cstr(p)
}

/// The running binary: /proc/self/exe, else argv[0] made absolute.
#[inline(never)]
fn self_path(argv0: &[u8]) -> Option<CString> {
    if let Ok(p) = sys::readlink(c"/proc/self/exe") {
        return Some(cstr(p));
    }
    if argv0.starts_with(b"/") {
        return Some(cstr(argv0.to_vec()));
    }
    if argv0.contains(&b'/') {
        return sys::cwd().ok().map(|d| join(&d, argv0));
    }
    None
}

#[inline(never)]
fn install(argv0: &[u8], rest: &[Vec<u8>]) -> i32 {
    let (symbolic, dir) = match rest {
        [d] if d != b"-s" => (false, d),
        [s, d] if s == b"-s" => (true, d),
        _ => {
            cli::warn(format_args!("usage: ftbox --install [-s] DIR"));
            return 2;
        }
    };
    let Some(target) = self_path(argv0) else {
        cli::warn(format_args!("--install: cannot find the running binary (no /proc/self/exe, relative argv[0])"));
        return 1;
    };
    if !sys::stat(&*cstr(dir.to_vec()), true).is_ok_and(|st| sys::file_type(&st) == rustix::fs::FileType::Directory) {
        cli::warn(format_args!("--install: {}: not a directory", lossy(dir)));
        return 1;
    }
    let mut status = 0;
    for a in APPLETS {
        if !install_one(&target, &join(dir, a.name.as_bytes()), symbolic) {
            status = 1;
        }
    }
    status
}

/// One link; false (with the reason on stderr) when it could not be made.
#[inline(never)]
fn install_one(target: &CStr, link: &CStr, symbolic: bool) -> bool {
    use rustix::fs::FileType::Symlink;
    let shown = lossy(link.to_bytes());
    if let Ok(meta) = sys::stat(link, false) {
        let is_link = sys::file_type(&meta) == Symlink;
        let correct = if symbolic {
            is_link && sys::readlink(link).is_ok_and(|t| t == target.to_bytes())
        } else {
            let t = sys::stat(target, true).ok();
            t.is_some_and(|t| !is_link && t.st_ino == meta.st_ino && t.st_dev == meta.st_dev)
        };
        if !correct {
            let t = lossy(target.to_bytes());
            cli::warn(format_args!("--install: {shown}: exists and is not a link to {t}; skipped"));
        }
        return correct;
    }
    let Err(e) = sys::link(target, link, symbolic) else { return true };
    let hint = if e == sys::Errno::XDEV { "; use -s for symbolic links across filesystems" } else { "" };
    cli::warn(format_args!("--install: {shown}: {}{hint}", sys::OsError(e)));
    false
}
