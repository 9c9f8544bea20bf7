//! trace-cmd's `-F 'SYSTEM/EVENT: FILTER'` event filters
//! (`sched/sched_switch: prev_pid > 0 && next_comm ~ "kw*"`), for both styles.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::kind::{ftrace_kind, Ftrace};
use crate::cursor::{read_uint, Endian};
use crate::format::{Event, FieldKind};
use crate::glob;
use crate::format::FieldAt;

enum Val {
    Num(i64),
    Str(String),
}

enum Ex {
    /// `||` (true) or `&&` (false).
    Bin(bool, Box<Ex>, Box<Ex>),
    Not(Box<Ex>),
    /// field (None = COMM), operator, value
    Cmp(Option<(FieldAt, FieldKind, bool)>, u8, Val),
    /// A field name this event lacks: libtraceevent makes the test false.
    False,
}

/// trace-cmd's `-F` filters: a record of an event that some filter names
/// is shown when that filter's expression holds; with any `-F`, records of
/// events no filter names are not shown.
#[derive(Default)]
pub struct EventFilter {
    /// (event id, expression; None = the whole event)
    rules: Vec<(u16, Option<Ex>)>,
    /// kernel_stack / user_stack ids: shown after a shown record of their
    /// CPU (tracecmd_filter_match()'s last_printed, which only a record
    /// that passes sets).
    stacks: Vec<u16>,
    last_printed: Vec<bool>,
}

/// libtraceevent's `=~`: a POSIX basic regex (regcomp without
/// REG_EXTENDED: `+ ? | ( )` are plain characters), case-insensitive,
/// matching anywhere. The subset: literals, `.`, `[...]` (ranges, `^`),
/// `*`, `^` `$`, `\\` escapes.
fn regex(p: &[u8], s: &[u8]) -> bool {
    if let Some(rest) = p.strip_prefix(b"^") {
        return re_here(rest, s);
    }
    (0..=s.len()).any(|i| re_here(p, &s[i..]))
}

/// One atom at the head of `p`: its length and whether it matches `c`.
fn re_atom(p: &[u8], c: u8) -> (usize, bool) {
    let lc = |x: u8| x.to_ascii_lowercase();
    match p[0] {
        b'.' => (1, true),
        b'\\' if p.len() > 1 => (2, lc(p[1]) == lc(c)),
        b'[' => {
            let mut i = 1;
            let neg = p.get(1) == Some(&b'^');
            if neg {
                i += 1;
            }
            let mut hit = false;
            let mut first = true;
            while i < p.len() && (p[i] != b']' || first) {
                first = false;
                if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
                    hit |= (lc(p[i])..=lc(p[i + 2])).contains(&lc(c));
                    i += 3;
                } else {
                    hit |= lc(p[i]) == lc(c);
                    i += 1;
                }
            }
            (i + 1, hit != neg)
        }
        x => (1, lc(x) == lc(c)),
    }
}

fn re_here(p: &[u8], s: &[u8]) -> bool {
    if p.is_empty() {
        return true;
    }
    if p == b"$" {
        return s.is_empty();
    }
    let (n, _) = re_atom(p, 0);
    let n = n.min(p.len());
    let one = |c: Option<&u8>| c.map_or(false, |&c| re_atom(p, c).1);
    match p.get(n) {
        Some(b'*') => {
            let rest = &p[n + 1..];
            let mut k = 0;
            while one(s.get(k)) {
                k += 1;
            }
            (0..=k).rev().any(|j| re_here(rest, &s[j..]))
        }
        _ => one(s.first()) && re_here(&p[n..], &s[1..]),
    }
}

/// The parser of one filter expression, for one event.
struct Parser<'s> {
    s: &'s [u8],
    i: usize,
    /// The field names the expression compares, and whether the event
    /// has each (an event without one compares false, as in libtraceevent).
    fields: Vec<(&'s str, bool)>,
}

impl<'s> Parser<'s> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    /// The run of ASCII letters, digits and `more` bytes at the cursor.
    fn token(&mut self, more: fn(u8) -> bool) -> &'s str {
        let st = self.i;
        while self.s.get(self.i).is_some_and(|&c| c.is_ascii_alphanumeric() || more(c)) {
            self.i += 1;
        }
        str_of(self.s.get(st..self.i).unwrap_or(&[]))
    }
    fn eat(&mut self, t: &str) -> bool {
        self.ws();
        if self.s[self.i..].starts_with(t.as_bytes()) {
            self.i += t.len();
            true
        } else {
            false
        }
    }
    /// `a || b ...` (or) or `a && b ...`: one loop for both levels.
    fn bin(&mut self, e: &Event, or: bool) -> Result<Ex, &'static str> {
        let mut l = self.operand(e, or)?;
        while self.eat(if or { "||" } else { "&&" }) {
            l = Ex::Bin(or, Box::new(l), Box::new(self.operand(e, or)?));
        }
        Ok(l)
    }
    fn operand(&mut self, e: &Event, or: bool) -> Result<Ex, &'static str> {
        if or {
            self.bin(e, false)
        } else {
            self.unary(e)
        }
    }
    fn unary(&mut self, e: &Event) -> Result<Ex, &'static str> {
        if self.eat("!") {
            return Ok(Ex::Not(Box::new(self.unary(e)?)));
        }
        if self.eat("(") {
            let x = self.bin(e, true)?;
            if !self.eat(")") {
                return Err("missing )");
            }
            return Ok(x);
        }
        self.ws();
        let name = self.token(|c| c == b'_');
        if name.is_empty() {
            return Err("expected a field name");
        }
        // The operators, longest first (six of two bytes, five of one);
        // each one's code at the same position in CODES.
        const OPS: &str = "==!==~!~<=>=<>&~=";
        const CODES: &[u8; 11] = b"=!rnlg<>&~=";
        let mut k = 0;
        while !self.eat(OPS.get(if k < 6 { 2 * k..2 * k + 2 } else { k + 6..k + 7 }).ok_or("expected an operator")?) {
            k += 1;
        }
        let op = CODES[k];
        self.ws();
        // (Slices of the filter end at ASCII bytes: always whole UTF-8.)
        let v = match self.s.get(self.i) {
            Some(&q @ (b'"' | b'\'')) => {
                let st = self.i + 1;
                let n = self.s[st..].iter().position(|&c| c == q).ok_or("unterminated string")?;
                self.i = st + n + 1;
                Val::Str(String::from(str_of(&self.s[st..st + n])))
            }
            _ => {
                let t = self.token(|c| matches!(c, b'-' | b'_' | b'/' | b'*' | b'?' | b'.' | b':'));
                let (neg, t2) = match t.strip_prefix('-') {
                    Some(r) => (true, r),
                    None => (false, t),
                };
                match number(t2) {
                    Some(n) => Val::Num(if neg { (n as i64).wrapping_neg() } else { n as i64 }),
                    None if !t.is_empty() => Val::Str(String::from(t)),
                    None => return Err("expected a value"),
                }
            }
        };
        if name == "COMM" {
            return Ok(Ex::Cmp(None, op, v));
        }
        self.fields.push((name, e.field(name).is_some()));
        Ok(match e.field(name) {
            Some(f) => {
                let is_str = f.is_char && !matches!(f.kind, FieldKind::Scalar);
                Ex::Cmp(Some((e.field_at(name).unwrap_or_default(), f.kind.clone(), is_str)), op, v)
            }
            None => Ex::False,
        })
    }
}

fn str_of(b: &[u8]) -> &str {
    core::str::from_utf8(b).unwrap_or("")
}

/// A decimal or `0x` hex u64 (None on overflow, as `parse`).
pub fn number(t: &str) -> Option<u64> {
    let (base, digits) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (16, h),
        None => (10, t),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for c in digits.bytes() {
        let x = match c {
            b'0'..=b'9' => c - b'0',
            _ if base == 16 && (c | 0x20).wrapping_sub(b'a') < 6 => (c | 0x20) - b'a' + 10,
            _ => return None,
        };
        v = v.checked_mul(base)?.checked_add(x as u64)?;
    }
    Some(v)
}

fn field_str<'d>(d: &'d [u8], f: FieldAt, kind: &FieldKind, e: Endian) -> &'d [u8] {
    let (o, n) = f.loc(d, kind, e, false);
    let b = d.get(o..(o + n).min(d.len())).unwrap_or(&[]);
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

/// The task's comm, given to a test: looked up only when a COMM test is
/// reached (libtraceevent's get_comm(), whose first lookup can build its
/// comm table: see tracecmd::Comms).
pub type WithComm<'c> = &'c mut dyn FnMut(&dyn Fn(&[u8]) -> bool) -> bool;

fn eval(x: &Ex, d: &[u8], comm: WithComm, e: Endian) -> bool {
    match x {
        // `||` decided by a true left side, `&&` by a false one.
        Ex::Bin(or, a, b) => {
            let l = eval(a, d, comm, e);
            if l == *or {
                l
            } else {
                eval(b, d, comm, e)
            }
        }
        Ex::Not(a) => !eval(a, d, comm, e),
        Ex::False => false,
        Ex::Cmp(f, op, v) => match (f, v) {
            (None, Val::Str(p)) => comm(&|s| str_test(*op, p, s)),
            (Some((f, k, true)), Val::Str(p)) => str_test(*op, p, field_str(d, *f, k, e)),
            (Some((f, _, false)), Val::Num(n)) => {
                let a = f.get(d, e) as i64;
                let n = *n;
                match op {
                    b'=' => a == n,
                    b'!' => a != n,
                    b'<' => a < n,
                    b'>' => a > n,
                    b'l' => a <= n,
                    b'g' => a >= n,
                    b'&' => a & n != 0,
                    _ => false,
                }
            }
            _ => false,
        },
    }
}

fn str_test(op: u8, p: &str, s: &[u8]) -> bool {
    match op {
        b'~' => glob::matches_bytes(p.as_bytes(), s),
        b'r' => regex(p.as_bytes(), s),
        b'n' => !regex(p.as_bytes(), s),
        b'=' => s == p.as_bytes(),
        b'!' => s != p.as_bytes(),
        _ => false,
    }
}

impl EventFilter {
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Add one `-F` argument: `[SYSTEM/]EVENT[,EVENT...][: FILTER]`, names
    /// as globs.
    #[inline(never)]
    pub fn add(&mut self, spec: &str, events: &[Event]) -> Result<(), String> {
        let (names, expr) = match spec.split_once(':') {
            Some((n, x)) => (n, Some(x.trim_ascii())),
            None => (spec, None),
        };
        let mut any = false;
        // Each field the expression names, and whether any event it
        // applies to has it: a field none has is a mistake, not a filter
        // that matches nothing.
        let mut known: Vec<(&str, bool)> = Vec::new();
        if self.stacks.is_empty() {
            for e in events {
                if matches!(ftrace_kind(e), Some(Ftrace::KernelStack | Ftrace::UserStack)) {
                    self.stacks.push(e.id);
                }
            }
        }
        for name in names.split(',').map(|n| n.trim_ascii()) {
            let (sys, ev) = match name.split_once('/') {
                Some((s, e)) => (Some(s), e),
                None => (None, name),
            };
            for e in events {
                let hit = match sys {
                    Some(s) => glob::matches(s, &e.system) && glob::matches(ev, &e.name),
                    None => glob::matches(ev, &e.name) || glob::matches(ev, &e.system),
                };
                if !hit {
                    continue;
                }
                any = true;
                let x = match expr.filter(|x| !x.is_empty()) {
                    Some(x) => {
                        let mut p = Parser { s: x.as_bytes(), i: 0, fields: Vec::new() };
                        let ex = p.bin(e, true)?;
                        p.ws();
                        if p.i != p.s.len() {
                            return Err("junk after the filter".into());
                        }
                        for &(name, has) in &p.fields {
                            match known.iter_mut().find(|k| k.0 == name) {
                                Some(k) => k.1 |= has,
                                None => known.push((name, has)),
                            }
                        }
                        Some(ex)
                    }
                    None => None,
                };
                self.rules.push((e.id, x));
            }
        }
        if !any {
            return Err("no event matches".into());
        }
        if let Some((name, _)) = known.iter().find(|k| !k.1) {
            return Err(alloc::format!("no event it names has a field '{}'", name));
        }
        Ok(())
    }

    /// Does a record pass? `comm` gives its task's name (for COMM).
    #[inline(never)]
    pub fn pass(&mut self, cpu: u32, d: &[u8], comm: WithComm, e: Endian) -> bool {
        let ty = read_uint(d, 0, 2, e).unwrap_or(0) as u16;
        let ok = self.rules.iter().any(|(id, x)| *id == ty && x.as_ref().map_or(true, |x| eval(x, d, comm, e)));
        let c = cpu as usize;
        if self.last_printed.len() <= c {
            self.last_printed.resize(c + 1, false);
        }
        if !ok && !(self.stacks.contains(&ty) && self.last_printed[c]) {
            return false;
        }
        self.last_printed[c] = true;
        true
    }
}
