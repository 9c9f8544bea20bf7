//! pid → comm (from `saved_cmdlines` or the trace.dat CMDLINES section) and
//! pid → tgid (`saved_tgids`): sorted vectors with binary search, the way
//! the kernel's own `trace_find_cmdline()` answers `<...>` when it has no
//! name and `<idle>` for pid 0.

use alloc::string::String;
use alloc::vec::Vec;
use core::cell::Cell;

#[derive(Default)]
pub struct Cmdlines {
    /// (pid, start, end) into `names`, sorted by pid.
    pids: Vec<(i32, u32, u32)>,
    names: String,
    /// `saved_tgids` text, parsed at the first `tgid` lookup: only the
    /// record-tgid option shows tgids, and the file lists every pid.
    tgid_text: Vec<u8>,
    /// The same as a table like this one (pid → the tgid's digits): one
    /// parser and one sort for both files.
    tgids: core::cell::OnceCell<alloc::boxed::Box<Cmdlines>>,
    /// The last lookup (pid, index+1 into `pids`, 0 = none): records come in
    /// runs of the same task.
    last: Cell<(i32, u32)>,
}

impl Cmdlines {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse `PID COMM` lines. Malformed lines are skipped: the file is a
    /// cache the kernel fills best-effort, not a contract.
    pub fn parse(text: &[u8]) -> Self {
        let mut c = Cmdlines::new();
        c.add_cmdlines(text);
        c
    }

    pub fn add_cmdlines(&mut self, text: &[u8]) {
        for line in text.split(|&b| b == b'\n') {
            let Some(sp) = line.iter().position(|&b| b == b' ') else { continue };
            let (p, name) = (&line[..sp], &line[sp + 1..]);
            let Some(pid) = parse_i32(p) else { continue };
            let start = self.names.len() as u32;
            // Plain ASCII names (nearly all) as they are, the rest through
            // put_all's escapes.
            let mut hi = 0;
            for &c in name {
                hi |= c;
            }
            match core::str::from_utf8(name) {
                Ok(s) if hi < 0x80 => self.names.push_str(s),
                _ => {
                    let _ = super::put_all(&mut self.names, name);
                }
            }
            self.pids.push((pid, start, self.names.len() as u32));
        }
        // Appended, then sorted once: inserting each line in place moved
        // the table for every line (a quarter of ftcat's start-up).
        self.pids = sorted_last_wins(core::mem::take(&mut self.pids));
        self.last.set((0, 0));
    }

    /// Record one name; a later one for the same pid wins (a newer comm).
    pub fn insert(&mut self, pid: i32, name: &[u8]) {
        let start = self.names.len() as u32;
        // Names are bytes; keep non-UTF-8 ones exact (see text::put_all).
        let _ = super::put_all(&mut self.names, name);
        let end = self.names.len() as u32;
        match self.pids.binary_search_by_key(&pid, |e| e.0) {
            Ok(i) => self.pids[i] = (pid, start, end),
            Err(i) => self.pids.insert(i, (pid, start, end)),
        }
        self.last.set((0, 0));
    }

    pub fn add_tgids(&mut self, text: &[u8]) {
        self.tgid_text.extend_from_slice(text);
        self.tgid_text.push(b'\n');
        self.tgids = core::cell::OnceCell::new();
    }

    /// The recorded name, without the kernel's placeholders.
    pub fn get(&self, pid: i32) -> Option<&str> {
        let (lp, li) = self.last.get();
        let i = if lp == pid && li > 0 {
            li as usize - 1
        } else {
            let i = self.pids.binary_search_by_key(&pid, |e| e.0).ok()?;
            self.last.set((pid, i as u32 + 1));
            i
        };
        let (_, s, e) = *self.pids.get(i)?;
        self.names.get(s as usize..e as usize)
    }

    /// What the kernel prints for `pid`: `<idle>` for 0, `<XXX>` for a
    /// negative pid, `<...>` when no name was saved.
    pub fn comm(&self, pid: i32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        if pid < 0 {
            return "<XXX>";
        }
        self.get(pid).unwrap_or("<...>")
    }

    /// 0 when unknown, as `trace_find_tgid()`.
    pub fn tgid(&self, pid: i32) -> i32 {
        let t = crate::util::once(&self.tgids, || alloc::boxed::Box::new(Cmdlines::parse(&self.tgid_text)));
        t.get(pid).and_then(|s| parse_i32(s.as_bytes())).unwrap_or(0)
    }

    pub fn len(&self) -> usize {
        self.pids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty()
    }
}

/// (pid, start, end) entries in line order, sorted by pid keeping the last
/// entry of each pid: a later line for a pid wins, as with `insert`.
fn sorted_last_wins(mut v: Vec<(i32, u32, u32)>) -> Vec<(i32, u32, u32)> {
    // The kernel's files are often in pid order already. The sort is
    // stable: each pid's lines keep their order.
    if v.windows(2).any(|w| w[0].0 > w[1].0) {
        crate::sort::sort_by(&mut v, |a, b| a.0.cmp(&b.0));
    }
    let mut out: Vec<(i32, u32, u32)> = Vec::with_capacity(v.len());
    for e in v {
        match out.last_mut() {
            Some(l) if l.0 == e.0 => *l = e,
            _ => out.push(e),
        }
    }
    out
}

pub(super) fn parse_i32(s: &[u8]) -> Option<i32> {
    // What `str::parse::<i32>` accepts: an optional sign, then digits, in
    // range (surrounding whitespace trimmed).
    let s = core::str::from_utf8(s).ok()?.trim_ascii().as_bytes();
    let (neg, d) = match s.split_first() {
        Some((b'-', d)) => (true, d),
        Some((b'+', d)) => (false, d),
        _ => (false, s),
    };
    if d.is_empty() {
        return None;
    }
    let mut v = 0i64;
    for &c in d {
        if !c.is_ascii_digit() || v > 1 << 31 {
            return None;
        }
        v = v * 10 + (c - b'0') as i64;
    }
    i32::try_from(if neg { -v } else { v }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_i32_is_strs() {
        for t in ["0", "-0", "+7", "-2147483648", "2147483647", "2147483648", "-2147483649", "", "-", "+", "+-1", " 12 ", "1 2", "99999999999999999999", "0012"] {
            assert_eq!(parse_i32(t.as_bytes()), t.trim_ascii().parse::<i32>().ok(), "{t:?}");
        }
    }

    #[test]
    fn lookups() {
        let mut c = Cmdlines::parse(b"143 sh\n238 trace-cmd\nbad line\n18 rcu_preempt\n143 bash\n");
        assert_eq!(c.comm(143), "bash");
        assert_eq!(c.comm(18), "rcu_preempt");
        assert_eq!(c.comm(0), "<idle>");
        assert_eq!(c.comm(-3), "<XXX>");
        assert_eq!(c.comm(99), "<...>");
        c.add_tgids(b"143 143\n150 143\n");
        assert_eq!(c.tgid(150), 143);
        assert_eq!(c.tgid(7), 0);
    }
}
