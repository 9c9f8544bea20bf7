//! tracefs access: find (or mount) the tracefs directory once, keep it open,
//! and reach every control file with `openat` relative to it. Names that come
//! from users (events, systems, instances) are validated before any path is
//! built, so `..` or `/` can never walk out of the tree.

pub mod events;
#[cfg(feature = "kvars")]
pub mod kvars;
/// (The glob is not tracefs's own: ftcat's filters share it.)
pub use crate::glob;
pub mod settings;
pub mod state;

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{openat, Mode, OFlags};
use crate::sys;
use crate::util::{find_str, split_str};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use rustix::io::Errno;

/// An open tracefs directory: the top level or one instance.
pub struct Tracefs {
    dir: OwnedFd,
    /// Where it is mounted, for messages only (never used to build paths).
    pub mount: String,
    /// `None` for the top level.
    pub instance: Option<String>,
}

/// A failed open, read or write of a control file, with what the kernel
/// said: one pointer to the `Detail`, so a `Result` of it moves in
/// registers. Fields read through it: `e.errno`, `e.file`, `e.op`.
#[derive(Debug)]
pub struct Error(alloc::boxed::Box<Detail>);

impl Error {
    #[inline(never)]
    pub fn new(op: Op, file: String, errno: Errno, log: Option<String>) -> Error {
        Error(alloc::boxed::Box::new(Detail { file, op, errno, log }))
    }
}

impl core::ops::Deref for Error {
    type Target = Detail;
    fn deref(&self) -> &Detail {
        &self.0
    }
}

/// The step that failed: the same errno means different things at each
/// (ENOENT from open: no such file; from a write: the kernel refused the
/// value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Open,
    Read,
    Write,
}

#[derive(Debug)]
pub struct Detail {
    pub file: String,
    pub op: Op,
    pub errno: Errno,
    /// The entries `error_log` gained with this write, when there are any.
    pub log: Option<String>,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.file, sys::Msg(self.errno))?;
        if let Some(log) = &self.log {
            for line in log.lines() {
                write!(f, "\n  {line}")?;
            }
        }
        Ok(())
    }
}

/// Control files of function tracing, by the start of their names
/// (`func` covers the options function-fork, func_stack_trace, ...).
const FUNCTION_FILES: &[&str] = &["set_ftrace", "set_graph", "available_filter_functions", "func", "max_graph_depth", "current_tracer"];

impl Error {
    /// The message and, on a line of its own, the hint for this failure
    /// when it has one: what every applet shows for a tracefs error.
    pub fn explained(&self) -> String {
        let mut msg = format!("{self}");
        if let Some(h) = self.hint(rustix::process::geteuid().is_root()) {
            msg.push_str("\n  ");
            msg.push_str(h);
        }
        msg
    }
}

impl Detail {
    /// What to do next, when the failure has one likely cause; `root`:
    /// whether we run as root. A write the kernel explained in `error_log`
    /// gets no guess of ours: its entry is the explanation.
    pub fn hint(&self, root: bool) -> Option<&'static str> {
        let name = split_str(&self.file, "/", true).map_or(self.file.as_str(), |(_, name)| name);
        let function = FUNCTION_FILES.iter().any(|p| name.starts_with(p));
        let write = self.op == Op::Write;
        Some(match self.errno {
            _ if self.log.is_some() => return None,
            Errno::PERM if function => "this kernel refuses function tracing (lockdown, or ftrace disabled); events still work",
            Errno::PERM | Errno::ACCESS if !root => "tracefs needs root (or CAP_SYS_ADMIN)",
            Errno::NOENT if !write => "this kernel does not have that control file",
            Errno::NOENT => "the file exists; the kernel refused what was written to it",
            Errno::BADF if name == "trace_marker" => "tracing is off here ('ftctl on' first)",
            Errno::BUSY if name == "current_tracer" => "the tracer is in use (a trace_pipe reader is open)",
            _ => return None,
        })
    }
}

pub type Result<T> = core::result::Result<T, Error>;

/// Refuse a user-supplied name component that could escape the directory or
/// corrupt a control file: empty, `.`/`..`, `/`, NUL, control characters.
pub fn check_name(kind: &str, name: &str) -> core::result::Result<(), String> {
    let bad = name.is_empty()
        || name == "."
        || find_str(name, "..", false).is_some()
        || name.bytes().any(|b| b == b'/' || b < 0x20 || b == 0x7f);
    if !bad {
        return Ok(());
    }
    // Show control characters as \xNN so the message itself stays one clean line.
    let mut shown = String::new();
    for c in name.chars() {
        if (c as u32) < 0x20 || c as u32 == 0x7f {
            // \xNN by hand: no formatting machinery for two hex digits.
            let hex = b"0123456789abcdef";
            shown.push_str("\\x");
            shown.push(hex[c as usize >> 4] as char);
            shown.push(hex[c as usize & 15] as char);
        } else {
            shown.push(c);
        }
    }
    Err(format!("invalid {kind} name '{shown}': no '/', '..', NUL or control characters allowed"))
}

const CANDIDATES: &[&str] = &["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

use sys::cpath as c;


fn is_tracefs(fd: &OwnedFd) -> bool {
    rustix::fs::accessat(fd, c"trace", rustix::fs::Access::EXISTS, rustix::fs::AtFlags::empty()).is_ok()
}

/// One candidate mount point of `search`: the answer when it is tracefs or
/// refuses us, else `None` with `p` added to the list of places tried.
#[inline(never)]
fn probe(p: String, tried: &mut String) -> Option<core::result::Result<Tracefs, (String, bool)>> {
    match sys::open_dir(&p) {
        Ok(fd) if is_tracefs(&fd) => Some(Ok(Tracefs { dir: fd, mount: p, instance: None })),
        Err(e) if e == Errno::ACCESS || e == Errno::PERM => {
            Some(Err((format!("{p}: {} (tracefs needs root)", errno_str(e)), true)))
        }
        _ => {
            if !tried.is_empty() {
                tried.push_str(", ");
            }
            tried.push_str(&p);
            None
        }
    }
}

use sys::read_fd;

impl Tracefs {
    /// Find the tracefs mount; mount it on /sys/kernel/tracing when absent and permitted.
    pub fn open() -> core::result::Result<Tracefs, String> {
        match Self::search() {
            Ok(t) => Ok(t),
            // Mounted but not ours to read: mounting again would not help.
            Err((msg, true)) => Err(msg),
            Err((_, false)) => {
                // CANDIDATES[0], as the C string mount(2) takes.
                let target = CANDIDATES[0];
                rustix::mount::mount(c"nodev", c"/sys/kernel/tracing", c"tracefs", rustix::mount::MountFlags::empty(), None::<&core::ffi::CStr>)
                    .map_err(|e| {
                        let root = if e == Errno::PERM { " (mounting needs root)" } else { "" };
                        format!("tracefs is not mounted and mounting it on {target} failed: {}{root}", errno_str(e))
                    })?;
                Self::find()
            }
        }
    }

    /// Find the tracefs mount without trying to mount it.
    pub fn find() -> core::result::Result<Tracefs, String> {
        Self::search().map_err(|(msg, _)| msg)
    }

    /// The search behind `find`; the flag says "exists but permission denied".
    /// The usual places first, then the tracefs mounts in /proc/mounts.
    fn search() -> core::result::Result<Tracefs, (String, bool)> {
        let mut tried = String::new();
        for p in CANDIDATES {
            if let Some(r) = probe(String::from(*p), &mut tried) {
                return r;
            }
        }
        let text = sys::read(c"/proc/mounts").unwrap_or_default();
        for l in String::from_utf8_lossy(&text).lines() {
            let mut it = l.split_ascii_whitespace();
            if let (Some(_dev), Some(dir), Some("tracefs")) = (it.next(), it.next(), it.next()) {
                // A space in a mount point is written \040.
                let mut p = String::new();
                let mut rest = dir;
                while let Some((before, after)) = split_str(rest, "\\040", false) {
                    p.push_str(before);
                    p.push(' ');
                    rest = after;
                }
                p.push_str(rest);
                if let Some(r) = probe(p, &mut tried) {
                    return r;
                }
            }
        }
        Err((format!("tracefs not found (tried {tried})"), false))
    }

    /// The directory fd, for `openat` by other modules.
    pub fn dir(&self) -> &OwnedFd {
        &self.dir
    }

    /// Human path of a control file, for messages.
    pub fn path_of(&self, name: &str) -> String {
        match &self.instance {
            Some(i) => format!("{}/instances/{}/{}", self.mount, i, name),
            None => format!("{}/{}", self.mount, name),
        }
    }

    /// Open an existing instance of this tracefs (validated name).
    pub fn instance(&self, name: &str) -> core::result::Result<Tracefs, String> {
        check_name("instance", name)?;
        let rel = format!("instances/{name}");
        let fd = self.open_file(&rel, OFlags::RDONLY | OFlags::DIRECTORY).map_err(|e| match e.errno {
            Errno::NOENT => format!("instance '{name}' does not exist"),
            errno => format!("{}: {}", e.file, sys::OsError(errno)),
        })?;
        Ok(Tracefs { dir: fd, mount: self.mount.clone(), instance: Some(String::from(name)) })
    }

    /// The error of a failed call on control file `name`.
    #[inline(never)]
    fn error(&self, op: Op, name: &str, errno: Errno) -> Error {
        Error::new(op, self.path_of(name), errno, None)
    }

    /// Open a control file relative to this directory.
    pub fn open_file(&self, name: &str, flags: OFlags) -> Result<OwnedFd> {
        c(name)
            .and_then(|p| openat(self.dir.as_fd(), &*p, flags | OFlags::CLOEXEC, Mode::empty()))
            .map_err(|errno| self.error(Op::Open, name, errno))
    }

    /// Read a whole control file.
    pub fn read(&self, name: &str) -> Result<Vec<u8>> {
        let fd = self.open_file(name, OFlags::RDONLY)?;
        read_fd(&fd).map_err(|errno| self.error(Op::Read, name, errno))
    }

    /// Read a control file as text.
    pub fn read_str(&self, name: &str) -> Result<String> {
        self.read(name).map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    /// Write `data` in one write(2) (the kernel parses per write), truncating
    /// or appending. When the write fails, the entries `error_log` gained
    /// are attached (the kernel logs a refused filter under EINVAL or
    /// ENOENT, depending on what it refused).
    pub fn write_with(&self, name: &str, data: &[u8], append: bool) -> Result<()> {
        let flags = OFlags::WRONLY | if append { OFlags::APPEND } else { OFlags::TRUNC };
        let fd = self.open_file(name, flags)?;
        let logs = logs_errors(name);
        // error_log before the write, to tell its new entries afterwards.
        let before = if logs { self.error_log() } else { None };
        let r = loop {
            match rustix::io::write(&fd, data) {
                Err(Errno::INTR) => continue,
                r => break r,
            }
        };
        let Err(errno) = r else { return Ok(()) };
        let mut log = None;
        if logs {
            if let Some(all) = self.error_log() {
                // Each entry starts with a `[timestamp]` header line: the
                // last one before the write marks where the new ones begin.
                let mark = before.as_deref().and_then(|b| b.lines().filter(|l| l.starts_with('[')).last());
                log = log_since(&all, mark).map(String::from);
            }
        }
        Err(Error::new(Op::Write, self.path_of(name), errno, log))
    }

    pub fn write(&self, name: &str, data: &[u8]) -> Result<()> {
        self.write_with(name, data, false)
    }

    pub fn append(&self, name: &str, data: &[u8]) -> Result<()> {
        self.write_with(name, data, true)
    }

    /// The text of `error_log` (every instance has its own), if readable.
    fn error_log(&self) -> Option<String> {
        self.read_str("error_log").ok()
    }

    /// Names in a directory relative to this tracefs, with "is a directory",
    /// sorted by name. `.` and `..` are left out.
    pub fn list_dir(&self, rel: &str) -> Result<Vec<(String, bool)>> {
        let err = |errno| self.error(Op::Read, rel, errno);
        let fd = self.open_file(rel, OFlags::RDONLY | OFlags::DIRECTORY)?;
        let mut out = Vec::new();
        sys::read_dir(&fd, &mut |name, ty| {
            let is_dir = match ty {
                rustix::fs::FileType::Directory => true,
                // Filesystems without d_type: ask.
                rustix::fs::FileType::Unknown => rustix::fs::statat(&fd, name, rustix::fs::AtFlags::empty())
                    .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory),
                _ => false,
            };
            out.push((name.to_string_lossy().into_owned(), is_dir));
            true
        })
        .map_err(err)?;
        // Insertion sort: directories here are small, and one hand-written
        // loop is far smaller than the generic slice sort.
        for i in 1..out.len() {
            let mut j = i;
            while j > 0 && out[j - 1].0 > out[j].0 {
                out.swap(j - 1, j);
                j -= 1;
            }
        }
        Ok(out)
    }

    /// Create a directory relative to this tracefs (`instances/NAME`).
    pub fn mkdir(&self, rel: &str) -> core::result::Result<(), Errno> {
        self.mkdir_or_rmdir(rel, true)
    }

    /// Remove a directory relative to this tracefs (`instances/NAME`).
    pub fn rmdir(&self, rel: &str) -> core::result::Result<(), Errno> {
        self.mkdir_or_rmdir(rel, false)
    }

    /// mkdir's and rmdir's one body: one path conversion for both, where
    /// rustix's mkdirat/unlinkat on a `&str` are a copy each.
    #[inline(never)]
    fn mkdir_or_rmdir(&self, rel: &str, make: bool) -> core::result::Result<(), Errno> {
        let p = c(rel)?;
        if make {
            rustix::fs::mkdirat(&self.dir, &*p, Mode::from_raw_mode(0o755))
        } else {
            rustix::fs::unlinkat(&self.dir, &*p, rustix::fs::AtFlags::REMOVEDIR)
        }
    }

    /// Does a control file exist here? (Kernels differ in what they build in:
    /// no `snapshot` without CONFIG_TRACER_SNAPSHOT, no `set_graph_function`
    /// without the graph tracer.)
    pub fn exists(&self, name: &str) -> bool {
        c(name).and_then(|p| rustix::fs::accessat(&self.dir, &*p, rustix::fs::Access::EXISTS, rustix::fs::AtFlags::empty())).is_ok()
    }

    /// The ring buffer's sub-buffer (page) size in bytes: buffer_subbuf_size_kb
    /// on 6.8+, else the page size. One copy for ftrec and ftcat --live.
    #[inline(never)]
    pub fn subbuf_size(&self) -> usize {
        match self.read_str("buffer_subbuf_size_kb").ok().and_then(|s| s.trim_ascii().parse::<u64>().ok()) {
            Some(kb) if kb != 0 => kb as usize * 1024,
            _ => sys::page_size(),
        }
    }
}

/// The entries of an `error_log` text after the one whose header is `mark`.
fn log_since<'a>(all: &'a str, mark: Option<&str>) -> Option<&'a str> {
    let new = match mark {
        // The log keeps a bounded number of entries, so the old mark may
        // have rotated out; then everything present is newer.
        Some(m) => split_str(all, m, true).map_or(all, |(_, after)| after),
        None => all,
    };
    // Keep only entries (from a header line on), never a stray tail of
    // the old entry (whose command may itself contain '[').
    let at = if new.starts_with('[') { 0 } else { find_str(new, "\n[", false)? + 1 };
    let new = new.get(at..)?.trim_ascii_end();
    (!new.is_empty()).then_some(new)
}

/// The entries of an `error_log` text, oldest first. Each starts with a
/// `[timestamp]` header line (`[  700.652972] event filter parse error:
/// error: Invalid value`) and goes on with indented lines (`  Command: ...`,
/// the caret under the spot).
pub fn log_entries(log: &str) -> impl Iterator<Item = &str> {
    let mut rest = log;
    core::iter::from_fn(move || {
        let at = if rest.starts_with('[') { 0 } else { find_str(rest, "\n[", false)? + 1 };
        let entry = rest.get(at..)?;
        let end = find_str(entry, "\n[", false).map_or(entry.len(), |i| i + 1);
        let (entry, after) = entry.split_at_checked(end)?;
        rest = after;
        Some(entry.trim_ascii_end())
    })
}

/// The newest entry of an `error_log` text and how many entries in a row
/// (itself included) say the same thing: one failed command may log its
/// error several times, and the log keeps older commands' entries too.
pub fn last_log_entry(log: &str) -> Option<(&str, usize)> {
    let mut last: Option<(&str, usize)> = None;
    for e in log_entries(log) {
        last = match last {
            Some((prev, n)) if untimed(prev) == untimed(e) => Some((e, n + 1)),
            _ => Some((e, 1)),
        };
    }
    last
}

/// An `error_log` entry without its `[timestamp] `.
fn untimed(entry: &str) -> &str {
    split_str(entry, "] ", false).map_or(entry, |(_, after)| after)
}

/// Files whose writes the kernel may explain in `error_log`.
fn logs_errors(name: &str) -> bool {
    name.ends_with("filter") || name.ends_with("trigger") || name.ends_with("_events")
}

/// An errno as words, without the " (os error N)" of sys::OsError.
pub fn errno_str(e: Errno) -> String {
    format!("{}", sys::Msg(e))
}

/// The running kernel's tracefs for a read-only unit test, or None after
/// saying why the test is skipped (FTBOX_NO_LIVE=1, or no tracefs).
#[cfg(test)]
pub(crate) fn live_for_test() -> Option<Tracefs> {
    if std::env::var_os("FTBOX_NO_LIVE").is_some_and(|v| v == "1") {
        std::println!("skipped: FTBOX_NO_LIVE=1");
        return None;
    }
    let t = Tracefs::find().ok();
    if t.is_none() {
        std::println!("skipped: no tracefs");
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    const E1: &str = "[  1.000000] event filter parse error: error: Field not found\n  Command: a [x] == 1\n          ^\n";
    const E2: &str = "[  2.000000] event filter parse error: error: Invalid value\n  Command: b >< 3\n          ^\n";

    #[test]
    fn newest_log_entry_once() {
        let e1b = E1.replace("1.000000", "3.000000");
        let log = std::format!("{E2}{E1}{e1b}{}", E1.replace("1.000000", "4.000000"));
        assert_eq!(log_entries(&log).count(), 4);
        assert_eq!(last_log_entry(&log), Some((E1.replace("1.000000", "4.000000").trim_ascii_end(), 3)));
        assert_eq!(last_log_entry(E2), Some((E2.trim_ascii_end(), 1)));
        let mixed = std::format!("{E1}{E2}");
        assert_eq!(last_log_entry(&mixed), Some((E2.trim_ascii_end(), 1)));
        assert_eq!(last_log_entry(""), None);
        assert_eq!(last_log_entry("no header\n"), None);
    }

    #[test]
    fn error_log_tail() {
        let both = std::format!("{E1}{E2}");
        assert_eq!(log_since(&both, Some("[  1.000000] event filter parse error: error: Field not found")), Some(E2.trim_ascii_end()));
        assert_eq!(log_since(E1, Some("[  1.000000] event filter parse error: error: Field not found")), None);
        assert_eq!(log_since(E1, None), Some(E1.trim_ascii_end()));
        assert_eq!(log_since("", None), None);
        // The mark rotated out: everything is new.
        assert_eq!(log_since(E2, Some("[  0.5] gone")), Some(E2.trim_ascii_end()));
    }

    fn hint(op: Op, file: &str, errno: Errno, log: Option<&str>) -> Option<&'static str> {
        Error::new(op, file.into(), errno, log.map(String::from)).hint(true)
    }

    #[test]
    fn hints_follow_what_failed() {
        let filter = "/sys/kernel/tracing/events/sched/sched_switch/filter";
        // A filter the kernel rejects with ENOENT ('((prev_pid == 1'): the
        // file is there, the value was refused.
        let refused = hint(Op::Write, filter, Errno::NOENT, None).unwrap();
        assert!(!refused.contains("does not have"), "{refused}");
        assert!(refused.contains("refused"), "{refused}");
        // With the kernel's own words there is nothing to guess.
        assert_eq!(hint(Op::Write, filter, Errno::NOENT, Some(E1)), None);
        assert_eq!(hint(Op::Write, filter, Errno::INVAL, Some(E1)), None);
        // Opening a file that is not there.
        assert_eq!(hint(Op::Open, filter, Errno::NOENT, None), Some("this kernel does not have that control file"));
        // Function tracing refused, by open or by write, also as root.
        for op in [Op::Open, Op::Write] {
            let h = hint(op, "/sys/kernel/tracing/set_ftrace_filter", Errno::PERM, None).unwrap();
            assert!(h.contains("refuses function tracing") && h.contains("events still work"), "{h}");
        }
        let h = Error::new(Op::Write, "/t/options/function-fork".into(), Errno::PERM, None).hint(false);
        assert!(h.is_some_and(|h| h.contains("function tracing")));
        // Not root.
        let h = Error::new(Op::Open, "/t/tracing_on".into(), Errno::ACCESS, None).hint(false);
        assert_eq!(h, Some("tracefs needs root (or CAP_SYS_ADMIN)"));
        assert_eq!(hint(Op::Write, "/t/trace_marker", Errno::BADF, None), Some("tracing is off here ('ftctl on' first)"));
        assert_eq!(hint(Op::Write, "/t/buffer_size_kb", Errno::INVAL, None), None);
    }

    #[test]
    fn names() {
        for ok in ["sched", "sched_switch", "my-inst.1", "*", "sched_*"] {
            assert!(check_name("event", ok).is_ok(), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "x..y", "a\0b", "a\nb", "a\x7fb"] {
            assert!(check_name("event", bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_name("instance", "a\nb").unwrap_err(),
            "invalid instance name 'a\\x0ab': no '/', '..', NUL or control characters allowed"
        );
    }
}
