//! Evaluating compiled argument expressions over one record, and printing
//! them through the parsed format.

use alloc::vec::Vec;

use super::parse::{Expr, Func, Op, Ty, UnOp};
use super::printf::{self, Num, Out, Pad, Piece, Spec};
use super::Env;
use crate::format::{sext, Event, FieldKind};

/// A value during evaluation: an integer with its C type, bytes in the
/// record or the program (a `char *` or array), or a string a helper built
/// in the scratch buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val<'a> {
    Int(u64, Ty),
    Bytes(&'a [u8]),
    Scratch(usize, usize),
}

pub(crate) type EResult<T> = Result<T, super::Msg>;

pub(crate) struct Ctx<'a, 'e> {
    pub ev: &'a Event,
    pub rec: &'a [u8],
    pub env: &'a Env<'e>,
    /// Strings built by helpers (`__print_flags`, ...), referenced by `Val::Scratch`.
    pub scratch: Vec<u8>,
    /// Values the recording does not know that evaluation has used so far
    /// (a kernel variable, an enumerator, a struct size): a conversion
    /// whose argument raised it prints a stand-in (see `format`).
    pub unknowns: u32,
    /// Some part of the line printed as a stand-in, not as the kernel did.
    pub partial: bool,
}

/// A value of type `t` in bytes.
pub(crate) fn tsize(t: Ty, env: &Env) -> usize {
    if t.size == 0 || t.ptr {
        env.long_size
    } else {
        t.size as usize
    }
}

/// Truncate `v` to the type's width and extend it back to 64 bits.
pub(crate) fn norm(v: u64, t: Ty, env: &Env) -> u64 {
    let s = tsize(t, env);
    if s >= 8 {
        return v;
    }
    let v = v & ((1u64 << (8 * s)) - 1);
    if t.signed {
        sext(v, s)
    } else {
        v
    }
}

/// C's usual arithmetic conversions, simplified to the widths that matter:
/// everything is at least int; the wider type wins; at equal width unsigned wins.
fn common(a: Ty, b: Ty, env: &Env) -> Ty {
    let sa = tsize(a, env).max(4);
    let sb = tsize(b, env).max(4);
    let ua = !a.signed && tsize(a, env) >= 4;
    let ub = !b.signed && tsize(b, env) >= 4;
    if sa > sb {
        Ty { size: sa as u8, signed: !ua, ptr: false }
    } else if sb > sa {
        Ty { size: sb as u8, signed: !ub, ptr: false }
    } else {
        Ty { size: sa as u8, signed: !(ua || ub), ptr: false }
    }
}

fn promote(t: Ty, env: &Env) -> Ty {
    if tsize(t, env) < 4 {
        Ty::INT
    } else {
        Ty { size: tsize(t, env) as u8, signed: t.signed, ptr: false }
    }
}

/// A binary operator's C arithmetic on two integers (usual conversions,
/// wrapping, signed shifts): `eval`'s, the re-associated (libtraceevent)
/// evaluation's and the plans' one copy (which also takes the result's
/// type from it at their build).
#[inline(never)]
pub(crate) fn binop(env: &Env, op: Op, (x, tx): (u64, Ty), (y, ty): (u64, Ty)) -> EResult<(u64, Ty)> {
    let op = &op;
    match op {
        Op::AndAnd => return Ok(((x != 0 && y != 0) as u64, Ty::INT)),
        Op::OrOr => return Ok(((x != 0 || y != 0) as u64, Ty::INT)),
        _ => {}
    }
            if matches!(op, Op::Shl | Op::Shr) {
                let t = promote(tx, env);
                let sh = (y & 63) as u32;
                let r = if *op == Op::Shl {
                    x.wrapping_shl(sh)
                } else if t.signed {
                    ((x as i64) >> sh) as u64
                } else {
                    x >> sh
                };
                return Ok((norm(r, t, env), t));
            }
            let t = common(tx, ty, env);
            let (x, y) = (norm(x, t, env), norm(y, t, env));
            let cmp = |lt: bool| (lt as u64, Ty::INT);
            let slt = if t.signed { (x as i64) < (y as i64) } else { x < y };
            let sgt = if t.signed { (x as i64) > (y as i64) } else { x > y };
            let r = match op {
                Op::Add => x.wrapping_add(y),
                Op::Sub => x.wrapping_sub(y),
                Op::Mul => x.wrapping_mul(y),
                Op::Div | Op::Rem => {
                    if y == 0 {
                        return Err(msg!("division by zero"));
                    }
                    match (*op, t.signed) {
                        (Op::Div, true) => (x as i64).wrapping_div(y as i64) as u64,
                        (Op::Div, false) => x / y,
                        (_, true) => (x as i64).wrapping_rem(y as i64) as u64,
                        _ => x % y,
                    }
                }
                Op::And => x & y,
                Op::Or => x | y,
                Op::Xor => x ^ y,
                Op::Eq => return Ok(cmp(x == y)),
                Op::Ne => return Ok(cmp(x != y)),
                Op::Lt => return Ok(cmp(slt)),
                Op::Gt => return Ok(cmp(sgt)),
                Op::Le => return Ok(cmp(!sgt)),
                Op::Ge => return Ok(cmp(!slt)),
                _ => return Err(msg!("unsupported operator")),
            };
            Ok((norm(r, t, env), t))
}

/// A flag or symbol table (`__print_flags(v, "|", { 1, "A" }, ...)`,
/// `__print_symbolic(v, { 1, "A" }, ...)`) as the kernel's loops walk it:
/// its entries one at a time, and where the names go. The evaluator's
/// (`EvalTable`) evaluates each entry when the walk reaches it; the plan's
/// (`plan::Table`) has them resolved at its build.
pub(crate) trait SeqTable {
    /// An entry's name as the table holds it.
    type Name;
    /// The next entry: its value (as the helper's type sees it) and name;
    /// None past the last, or at a NULL name, which ends the table as it
    /// ends the kernel's loop.
    fn next(&mut self) -> EResult<Option<(u64, Self::Name)>>;
    /// Print a name, after the delimiter if `delim`.
    fn name(&mut self, delim: bool, name: Self::Name) -> EResult<()>;
    /// Print what no entry named, `0x%lx`, after the delimiter if `delim`.
    fn hex(&mut self, delim: bool, v: u64);
}

/// trace_print_flags_seq(): the name of each entry whose bits are all
/// still in `v` (taking them off), delimited, then the bits no entry
/// named, in hex.
pub(crate) fn flags_seq<T: SeqTable>(t: &mut T, v: u64) -> EResult<()> {
    let mut rest = v;
    let mut first = true;
    // Flags stop when none are left.
    while rest != 0 {
        let Some((m, name)) = t.next()? else { break };
        if rest & m == m {
            rest &= !m;
            t.name(!first, name)?;
            first = false;
        }
    }
    if rest != 0 {
        t.hex(!first, rest);
    }
    Ok(())
}

/// trace_print_symbols_seq(): the name of the first entry whose value is
/// `v`, else `v` in hex.
pub(crate) fn symbols_seq<T: SeqTable>(t: &mut T, v: u64) -> EResult<()> {
    while let Some((m, name)) = t.next()? {
        if m == v {
            return t.name(false, name);
        }
    }
    t.hex(false, v);
    Ok(())
}

/// The table of a `Ctx::call`: entries evaluated only when the walk
/// reaches them (one past where the kernel's loop stops may be unknown
/// or bad, and the kernel never looks at it), names into the scratch buffer.
struct EvalTable<'c, 'a, 'e> {
    ctx: &'c mut Ctx<'a, 'e>,
    entries: core::slice::Iter<'a, Expr>,
    /// What of an entry's value counts (see `Ctx::call`).
    mask: u64,
    /// A string, or a number (a NULL delimiter) that prints nothing.
    delim: Val<'a>,
    /// An entry used a value the recording does not know: the walk
    /// ended there.
    unknown: bool,
}

impl<'a> SeqTable for EvalTable<'_, 'a, '_> {
    type Name = Val<'a>;

    fn next(&mut self) -> EResult<Option<(u64, Val<'a>)>> {
        let (m, name) = match self.entries.next() {
            None => return Ok(None),
            // Resolved by `specialize` (kmem's ~50 gfp flags): nothing to evaluate.
            Some(Expr::Entry(m, n)) => (*m, Val::Bytes(n)),
            // A slice pattern, not l[i]: at opt-level z indexing a Vec is a call.
            Some(Expr::List(l)) => {
                let [m, n] = l.as_slice() else { return Ok(None) };
                let unknowns = self.ctx.unknowns;
                let name = self.ctx.eval(n)?;
                let m = if matches!(name, Val::Int(0, _)) { None } else { Some(self.ctx.int(m)?.0) };
                if self.ctx.unknowns != unknowns {
                    self.ctx.unknowns = unknowns;
                    self.unknown = true;
                    return Ok(None);
                }
                let Some(m) = m else { return Ok(None) };
                (m, name)
            }
            Some(_) => return Err(msg!("bad flag/symbol entry")),
        };
        Ok(Some((m & self.mask, name)))
    }

    fn name(&mut self, delim: bool, name: Val<'a>) -> EResult<()> {
        if matches!(name, Val::Int(..)) {
            return Err(msg!("flag/symbol name is not a string"));
        }
        if delim {
            self.ctx.push_str(&self.delim);
        }
        self.ctx.push_str(&name);
        Ok(())
    }

    fn hex(&mut self, delim: bool, v: u64) {
        if delim {
            self.ctx.push_str(&self.delim);
        }
        self.ctx.put_num(v, true);
    }
}

impl<'a, 'e> Ctx<'a, 'e> {
    pub fn bytes(&self, v: &Val<'a>) -> Option<&[u8]> {
        match *v {
            Val::Bytes(b) => Some(b),
            Val::Scratch(s, e) => self.scratch.get(s..e),
            Val::Int(..) => None,
        }
    }

    /// Append `0x%llx` (`hex`) or `%llu` of `v` to the scratch buffer.
    fn put_num(&mut self, v: u64, hex: bool) {
        printf::append(&mut self.scratch, &mut |o| if hex { printf::hex0x(o, v) } else { printf::dec(o, v) });
    }

    /// Append a string value (up to its NUL) to the scratch buffer; a
    /// number (a NULL delimiter) appends nothing.
    fn push_str(&mut self, v: &Val<'a>) {
        let (s, e) = match *v {
            Val::Bytes(b) => {
                let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                self.scratch.extend_from_slice(&b[..n]);
                return;
            }
            Val::Scratch(s, e) => (s, e),
            Val::Int(..) => return,
        };
        let n = self.scratch.get(s..e).and_then(|b| b.iter().position(|&c| c == 0)).unwrap_or(e - s);
        if e <= self.scratch.len() {
            self.scratch.extend_from_within(s..s + n);
        }
    }

    pub fn int(&mut self, e: &'a Expr) -> EResult<(u64, Ty)> {
        match self.eval(e)? {
            Val::Int(v, t) => Ok((v, t)),
            _ => Err(msg!("a pointer where a number was expected")),
        }
    }

    fn truth(&mut self, e: &'a Expr) -> EResult<bool> {
        Ok(match self.eval(e)? {
            Val::Int(v, _) => v != 0,
            _ => true,
        })
    }

    /// `binop` in this recording's dialect.
    #[inline(always)]
    pub(crate) fn binop(&self, op: Op, x: (u64, Ty), y: (u64, Ty)) -> EResult<(u64, Ty)> {
        binop(self.env, op, x, y)
    }

    /// libtraceevent's parser keeps no parentheses: `a OP (l OP2 r)` is
    /// `(a OP l) OP2 r`, down the left spine of OP2s of `b`.
    fn rotated(&mut self, op: Op, a: &'a Expr, b: &'a Expr, op2: Op) -> EResult<(u64, Ty)> {
        let (o, x, r) = match b {
            Expr::Bin(o, l, r) if *o == op2 => (op2, self.rotated(op, a, l, op2)?, &**r),
            _ => (op, self.int(a)?, b),
        };
        let y = self.int(r)?;
        self.binop(o, x, y)
    }

    pub fn eval(&mut self, e: &'a Expr) -> EResult<Val<'a>> {
        let env = self.env;
        Ok(match e {
            Expr::Num(v, t) => Val::Int(norm(*v, *t, env), *t),
            Expr::LongSize => Val::Int(env.long_size as u64, Ty::ULONG),
            Expr::Str(s) => Val::Bytes(s),
            Expr::Unknown(name) => match resolve(name, env) {
                Some((v, t)) => Val::Int(v, t),
                // Evaluated on as libtraceevent does, so that a pointer
                // built on it keeps its offset (see `format`).
                None => {
                    self.unknowns += 1;
                    Val::Int(0, Ty::ULONG)
                }
            },
            Expr::StructPtr(_, a) => self.eval(a)?,
            // The index added to a `struct X *`, in bytes: times the
            // struct's size when the recording knows it. libtraceevent
            // adds it unscaled (kmem's `page=0x12ad55`).
            Expr::Scale(key, a) => {
                let (v, t) = self.int(a)?;
                match env.enums.and_then(|e| e.get(key)) {
                    Some(n) if !env.tep => Val::Int(v.wrapping_mul(n), t),
                    _ => {
                        self.unknowns += !env.tep as u32;
                        Val::Int(v, t)
                    }
                }
            }
            // One lookup of the field for every way a format reads it.
            Expr::Field(i) | Expr::AddrOf(i) | Expr::Dyn(i) | Expr::DynLen(i) | Expr::Bitmask(i) => {
                let (ev, rec) = (self.ev, self.rec);
                let f = ev.fields.get(*i).ok_or(msg!("REC used without ->field"))?;
                let beyond = msg!("field beyond the record");
                match e {
                    Expr::AddrOf(_) => Val::Bytes(rec.get(f.offset..f.offset.saturating_add(f.size)).ok_or(beyond)?),
                    Expr::DynLen(_) => {
                        let w = f.int(rec, env.endian).ok_or(beyond)? as u32;
                        Val::Int((w >> 16) as u64, Ty::UINT)
                    }
                    // libtraceevent reads every field as an unsigned 64-bit
                    // number (tep_read_number()) and evaluates on in
                    // unsigned long long: a negative `int` is not `< 0`, an
                    // `s8` of -1 prints 255 under `%d`.
                    Expr::Field(_) if !matches!(f.kind, FieldKind::Array(_)) && cfg!(feature = "trace-cmd-style") && env.tep => {
                        let v = crate::cursor::read_uint(rec, f.offset, f.size, env.endian).map_err(|_| beyond)?;
                        Val::Int(v, Ty { size: 8, signed: false, ptr: f.is_ptr })
                    }
                    Expr::Field(_) if !matches!(f.kind, FieldKind::Array(_)) => {
                        let v = f.int(rec, env.endian).ok_or(beyond)?;
                        Val::Int(v, Ty { size: f.size.min(8) as u8, signed: f.signed, ptr: f.is_ptr })
                    }
                    _ => {
                        let d = f.data(rec, env.endian).ok_or(beyond)?;
                        if !matches!(e, Expr::Bitmask(_)) {
                            return Ok(Val::Bytes(d));
                        }
                        let s = self.scratch.len();
                        printf::append(&mut self.scratch, &mut |o| printf::bitmap_hex(o, d, d.len() * 8, env));
                        Val::Scratch(s, self.scratch.len())
                    }
                }
            }
            Expr::Unary(op, a) => {
                if *op == UnOp::Not {
                    return Ok(Val::Int(!self.truth(a)? as u64, Ty::INT));
                }
                let (v, t) = self.int(a)?;
                let t = promote(t, env);
                let r = match op {
                    UnOp::Neg => v.wrapping_neg(),
                    UnOp::BitNot => !v,
                    _ => return Err(msg!("unsupported unary operator")),
                };
                Val::Int(norm(r, t, env), t)
            }
            Expr::Bin(op, a, b) if env.tep && tep_rotates(*op, b) => {
                // libtraceevent's parser keeps no parentheses: `x & (A | B)`
                // becomes `(x & A) | B` when the right side's operator binds
                // looser. Do the same so the output matches trace-cmd's.
                // (The board build, without trace-cmd's styles, leaves this out.)
                #[cfg(feature = "trace-cmd-style")]
                if let Expr::Cond(c, p, q) = &**b {
                    // `?` binds loosest: `x < (c ? p : q)` is `(x < c) ? p : q`.
                    let t = match op {
                        Op::AndAnd => self.truth(a)? && self.truth(c)?,
                        Op::OrOr => self.truth(a)? || self.truth(c)?,
                        _ => {
                            let (x, y) = (self.int(a)?, self.int(c)?);
                            self.binop(*op, x, y)?.0 != 0
                        }
                    };
                    return self.eval(if t { p } else { q });
                }
                let Expr::Bin(op2, ..) = &**b else { return Err(msg!("bad rotation")) };
                let (v, t) = self.rotated(*op, a, b, *op2)?;
                Val::Int(v, t)
            }
            Expr::Bin(op, a, b) => {
                if matches!(op, Op::AndAnd | Op::OrOr) {
                    // Short-circuit: `b` only when `a` does not decide.
                    let x = self.truth(a)?;
                    let r = if x == (*op == Op::OrOr) { x } else { self.truth(b)? };
                    return Ok(Val::Int(r as u64, Ty::INT));
                }
                let (x, tx) = self.int(a)?;
                let (y, ty) = self.int(b)?;
                let (v, t) = self.binop(*op, (x, tx), (y, ty))?;
                Val::Int(v, t)
            }
            Expr::Cond(c, a, b) => {
                if self.truth(c)? {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::Cast(t, a) => match self.eval(a)? {
                Val::Int(v, _) => Val::Int(norm(v, *t, env), *t),
                // (char *)__get_dynamic_array(x), (void *)REC->buf: still the bytes.
                other if t.ptr => other,
                _ => return Err(msg!("cast of a pointer to an integer")),
            },
            Expr::Index(a, i) => {
                let (i, _) = self.int(i)?;
                // REC->args[i] of a fixed array: an element of its own type.
                if let Expr::Field(fi) = **a {
                    if let Some(f) = self.ev.fields.get(fi) {
                        if matches!(f.kind, FieldKind::Array(_)) && !f.is_char {
                            let el = f.elem_size(env.long_size);
                            let off = (i as usize).checked_mul(el).ok_or(msg!("index beyond the array"))?;
                            if off.saturating_add(el) > f.size && f.size != 0 {
                                return Err(msg!("index beyond the array"));
                            }
                            let v = crate::cursor::read_uint(self.rec, f.offset.saturating_add(off), el, env.endian)
                                .map_err(|_| msg!("index beyond the record"))?;
                            let v = if f.signed { sext(v, el) } else { v };
                            return Ok(Val::Int(v, Ty { size: el as u8, signed: f.signed, ptr: false }));
                        }
                    }
                }
                let v = self.eval(a)?;
                let d = self.bytes(&v).ok_or(msg!("index into a number"))?;
                let c = *d.get(i as usize).ok_or(msg!("index beyond the array"))?;
                // Only byte arrays (strings) are indexed in practice.
                Val::Int(c as i8 as i64 as u64, Ty { size: 1, signed: true, ptr: false })
            }
            Expr::List(_) | Expr::Entry(..) => return Err(msg!("{ } outside a helper")),
            Expr::Call(f, args) => self.call(*f, args)?,
        })
    }

    #[inline(never)]
    fn call(&mut self, f: Func, args: &'a [Expr]) -> EResult<Val<'a>> {
        let env = self.env;
        let long_mask = |v: u64| if env.long_size >= 8 { v } else { v & 0xffff_ffff };
        match f {
            Func::Expect => self.eval(&args[0]),
            Func::JiffiesToMsecs => {
                let (j, _) = self.int(&args[0])?;
                // trace-cmd: libtraceevent's jbd2 plugin defines the
                // function as returning its argument (jiffies unchanged).
                if cfg!(feature = "trace-cmd-style") && env.tep {
                    return Ok(Val::Int(j & 0xffff_ffff, Ty::UINT));
                }
                let hz = env.hz as u64;
                if hz == 0 {
                    return Err(msg!("jiffies_to_msecs() needs the kernel's HZ"));
                }
                let ms = if 1000 % hz == 0 { j.wrapping_mul(1000 / hz) } else { j.wrapping_mul(1000).div_ceil(hz) };
                Ok(Val::Int(ms & 0xffff_ffff, Ty::UINT))
            }
            Func::McEventErrorType => {
                let (v, _) = self.int(&args[0])?;
                // include/ras/ras_event.h mc_event_error_type(): enum hw_event_mc_err_type.
                let s: &'static [u8] = match v as u32 {
                    0 => b"Corrected",
                    1 => b"Uncorrected",
                    2 => b"Deferred",
                    3 => b"Fatal",
                    _ => b"Info",
                };
                Ok(Val::Bytes(s))
            }
            Func::PrintFlags | Func::PrintFlagsU64 | Func::PrintSymbolic | Func::PrintSymbolicU64 => {
                let flags = matches!(f, Func::PrintFlags | Func::PrintFlagsU64);
                let mask = if matches!(f, Func::PrintFlags | Func::PrintSymbolic) { long_mask(u64::MAX) } else { u64::MAX };
                let v = self.int(&args[0])?.0 & mask;
                // Flags take a delimiter before the table.
                let (delim, table) = if flags { (self.eval(&args[1])?, &args[2..]) } else { (Val::Int(0, Ty::INT), &args[1..]) };
                let start = self.scratch.len();
                let mut t = EvalTable { ctx: self, entries: table.iter(), mask, delim, unknown: false };
                if flags {
                    flags_seq(&mut t, v)?;
                } else {
                    symbols_seq(&mut t, v)?;
                }
                if t.unknown {
                    // An entry the recording cannot resolve (an enum
                    // without TRACE_DEFINE_ENUM): the kernel may have
                    // matched it, so the whole value prints as the
                    // kernel prints one that no entry matches.
                    self.partial = true;
                    self.scratch.truncate(start);
                    self.put_num(v, true);
                }
                Ok(Val::Scratch(start, self.scratch.len()))
            }
            Func::PrintHex | Func::PrintHexStr | Func::PrintArray => {
                let b = self.eval(&args[0])?;
                let (n, _) = self.int(&args[1])?;
                let hex = f != Func::PrintArray;
                let (n, el) = if hex { ((n as i64).max(0) as u64, 1) } else { (n, self.int(&args[2])?.0 as usize) };
                let d = self.bytes(&b).ok_or(msg!("__print_hex/array of a number"))?;
                let len = (n as usize).checked_mul(el.max(1)).ok_or(msg!("__print_array too long"))?;
                let d: Vec<u8> = d.get(..len).ok_or(msg!("__print_hex/array beyond the array"))?.to_vec();
                let start = self.scratch.len();
                if hex {
                    // trace_print_hex_seq(): 16-byte chunks of %*ph (spaced) or %*phN.
                    for (k, c) in d.chunks(16).enumerate() {
                        if f == Func::PrintHex && k > 0 {
                            self.scratch.push(b' ');
                        }
                        printf::append(&mut self.scratch, &mut |o| printf::hex_string(o, c, c.len() as i32, if f == Func::PrintHex { b"h" } else { b"hN" }));
                    }
                    return Ok(Val::Scratch(start, self.scratch.len()));
                }
                // libtraceevent before 1.8.4 (trace-cmd 3.1/3.2): `%u`s
                // apart, no braces; the kernel's (and 1.8.4's) `{0x1,0x2}`.
                let old = cfg!(feature = "trace-cmd-style") && env.tep && env.tep_1_7;
                if !old {
                    self.scratch.push(b'{');
                }
                // trace_print_array_seq()
                let mut p = 0;
                let mut el = el;
                while p < d.len() {
                    if p > 0 {
                        self.scratch.push(if old { b' ' } else { b',' });
                    }
                    match el {
                        1 | 2 | 4 | 8 => {
                            let v = crate::cursor::read_uint(&d, p, el, env.endian).map_err(|_| msg!("short array"))?;
                            if old {
                                self.put_num(v, false);
                            } else {
                                self.put_num(v, true);
                            }
                        }
                        _ => {
                            self.scratch.extend_from_slice(b"BAD SIZE:");
                            self.put_num(el as u64, false);
                            self.scratch.push(b' ');
                            self.put_num(d[p] as u64, true);
                            el = 1;
                        }
                    }
                    p += el;
                }
                if !old {
                    self.scratch.push(b'}');
                }
                Ok(Val::Scratch(start, self.scratch.len()))
            }
        }
    }
}

/// An identifier's value for the recording: libtraceevent reads an
/// unknown name with strtoull(), 0; else the value `Env::enums` has, an
/// int unless it needs more.
fn resolve(name: &str, env: &Env) -> Option<(u64, Ty)> {
    if env.tep {
        return Some((0, Ty::ULONG));
    }
    let v = env.enums?.get(name)?;
    Some((v, if v as i64 >= i32::MIN as i64 && v as i64 <= i32::MAX as i64 { Ty::INT } else { Ty { size: 8, signed: true, ptr: false } }))
}

/// Fold an operator or cast whose operands are constants of a fixed width
/// (not `long`, whose width only the recording knows) into a constant:
/// sched_switch's state mask is ~30 operations on literals per record.
pub(crate) fn fold(e: Expr) -> Expr {
    // A constant, or a constant tree kept for the tep dialect (below).
    fn fixed(e: &Expr) -> bool {
        match e {
            Expr::Num(_, t) => t.size != 0 && !t.ptr,
            Expr::Bin(_, a, b) => fixed(a) && fixed(b),
            _ => false,
        }
    }
    let ok = match &e {
        // A constant `A | B` (and other loose operators) is folded only as
        // part of a tighter one: libtraceevent's parser re-associates
        // `x & (A | B)` as `(x & A) | B`, which the tep dialect reproduces
        // from the tree (see tep_rotates).
        Expr::Bin(op, a, b) => tep_prio(*op) <= 7 && fixed(a) && fixed(b),
        Expr::Unary(_, a) => matches!(**a, Expr::Num(..)) && fixed(a),
        Expr::Cast(t, a) => fixed(a) && t.size != 0 && !t.ptr,
        _ => false,
    };
    if !ok {
        return e;
    }
    match const_int(&e, &Env::new(crate::cursor::Endian::Little, 8)) {
        Some((v, t)) if t.size != 0 && !t.ptr => Expr::Num(v, t),
        _ => e,
    }
}

/// The value of an expression over no record (a constant), if it has one.
fn const_int(e: &Expr, env: &Env) -> Option<(u64, Ty)> {
    let mut ctx = Ctx { ev: &crate::format::NO_EVENT, rec: &[], env, scratch: Vec::new(), unknowns: 0, partial: false };
    match ctx.eval(e) {
        Ok(Val::Int(v, t)) => Some((v, t)),
        _ => None,
    }
}

/// Is `e` a constant of the recording (no record data, no lookups)?
fn is_const(e: &Expr) -> bool {
    match e {
        Expr::Num(..) | Expr::LongSize => true,
        Expr::Unary(_, a) | Expr::Cast(_, a) => is_const(a),
        Expr::Bin(_, a, b) => is_const(a) && is_const(b),
        Expr::Cond(c, a, b) => is_const(c) && is_const(a) && is_const(b),
        _ => false,
    }
}

/// Fold what `fold` could not at compile time, now that the recording's
/// `long` and dialect are known: every constant subtree becomes a number and
/// flag/symbol tables become `Entry`s. kmem's gfp_flags tables are ~50
/// entries of `(unsigned long)(A | B | ...)` each, otherwise evaluated for
/// every record. `keep`: this node is on the left spine of a subtree the
/// tep dialect re-associates (see `tep_rotates`), which must stay a tree.
pub(crate) fn specialize(e: &mut Expr, env: &Env, keep: bool) {
    match e {
        Expr::Bin(op, a, b) => {
            if keep {
                let o = *op;
                specialize(a, env, matches!(**a, Expr::Bin(x, ..) if x == o));
                specialize(b, env, false);
                return;
            }
            let rot = env.tep && tep_rotates(*op, b);
            specialize(a, env, false);
            specialize(b, env, rot);
        }
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::StructPtr(_, a) | Expr::Scale(_, a) => specialize(a, env, false),
        Expr::Cond(c, a, b) => {
            specialize(c, env, false);
            specialize(a, env, false);
            specialize(b, env, false);
        }
        Expr::Index(a, i) => {
            specialize(a, env, false);
            specialize(i, env, false);
        }
        Expr::Call(f, args) => {
            let table = matches!(f, Func::PrintFlags | Func::PrintFlagsU64 | Func::PrintSymbolic | Func::PrintSymbolicU64);
            for a in args.iter_mut() {
                specialize(a, env, false);
                if let (true, Expr::List(l)) = (table, &*a) {
                    if let [Expr::Num(..), Expr::Str(n)] = &l[..] {
                        if let Some((v, _)) = const_int(&l[0], env) {
                            *a = Expr::Entry(v, n.clone());
                        }
                    }
                }
            }
        }
        Expr::List(l) => {
            for a in l.iter_mut() {
                specialize(a, env, false);
            }
        }
        // A name the recording resolves (kmem's `vmemmap_base`, an enum
        // without TRACE_DEFINE_ENUM): no lookup for each record, and the
        // tree around it folds or becomes a plan's step.
        Expr::Unknown(name) => {
            if let Some((v, t)) = resolve(name, env) {
                *e = Expr::Num(v, t);
            }
        }
        _ => {}
    }
    if !keep && !matches!(e, Expr::Num(..)) && is_const(e) {
        if let Some((v, t)) = const_int(e, env) {
            *e = Expr::Num(v, t);
        }
    }
}

/// Where a conversion's argument comes from: the print fmt's expressions,
/// or a vbin_printf buffer.
pub(crate) trait Args<'a> {
    /// Next argument as an integer of `size` bytes (for `*`, %d, %c...).
    fn int(&mut self, ctx: &mut Ctx<'a, '_>, size: usize, signed: bool) -> EResult<u64>;
    /// Next argument for %s / %p: integer or bytes.
    fn val(&mut self, ctx: &mut Ctx<'a, '_>, spec: &Spec, ext: &[u8]) -> EResult<Val<'a>>;
}

/// Widths and precisions are capped here (a trace_seq page holds 4096 bytes).
pub(crate) const MAX_WIDTH: i32 = 4096;

/// Print `pieces` of format `f` with `args` into `out`.
pub(crate) fn format<'a>(
    ctx: &mut Ctx<'a, '_>,
    f: &[u8],
    pieces: &[Piece],
    args: &mut dyn Args<'a>,
    out: &mut Out<'_>,
) -> EResult<()> {
    let env = ctx.env;
    for p in pieces {
        let s = match p {
            Piece::Lit(a, b) => {
                out.extend_from_slice(f.get(*a as usize..*b as usize).unwrap_or(b""));
                continue;
            }
            Piece::Conv(s) => s,
        };
        let unknowns = ctx.unknowns;
        let mut flags = s.flags;
        let width = match s.width {
            Num::None => -1,
            Num::N(n) => n,
            Num::Star => {
                let w = args.int(ctx, 4, true)? as i64 as i32;
                if w < 0 {
                    flags |= printf::LEFT;
                    w.saturating_neg()
                } else {
                    w
                }
            }
        };
        let prec = match s.prec {
            Num::None => -1,
            Num::N(n) => n,
            Num::Star => (args.int(ctx, 4, true)? as i64 as i32).max(0),
        };
        // The kernel prints into a one-page trace_seq; a width from a corrupt
        // record must not make us pad gigabytes.
        let pad = Pad { flags, width: width.min(MAX_WIDTH), prec: prec.min(MAX_WIDTH) };
        let ext = f.get(s.ext.0 as usize..(s.ext.0 + s.ext.1) as usize).unwrap_or(b"");
        match s.conv {
            b'd' | b'i' | b'u' | b'o' | b'x' | b'X' => {
                let signed = matches!(s.conv, b'd' | b'i');
                let size = printf::qual_size(s.qual, s.conv, env.long_size);
                let v = args.int(ctx, size, signed)?;
                if ctx.unknowns != unknowns {
                    unknowable(ctx, out, &pad);
                    continue;
                }
                printf::int_conv(out, v, size, s.conv, &pad);
            }
            b'c' => {
                let c = args.int(ctx, 4, false)? as u8;
                if ctx.unknowns != unknowns {
                    unknowable(ctx, out, &pad);
                    continue;
                }
                printf::pad(out, &[c], flags, pad.width);
            }
            b's' => {
                let v = args.val(ctx, s, ext)?;
                if ctx.unknowns != unknowns {
                    unknowable(ctx, out, &pad);
                    continue;
                }
                let d: &[u8] = match v {
                    Val::Int(0, _) => b"(null)",
                    // tracepoint_string()s and trace_printk formats are listed
                    // in printk_formats: the kernel's text for the pointer.
                    Val::Int(a, _) => env
                        .printk
                        .and_then(|p| p.lookup(a))
                        .ok_or(msg!("%s of a kernel pointer (its text is not in the record)"))?
                        .as_bytes(),
                    ref v => ctx.bytes(v).unwrap_or(b""),
                };
                printf::string(out, d, &pad);
            }
            b'p' => {
                let v = args.val(ctx, s, ext)?;
                if ctx.unknowns != unknowns {
                    match v {
                        // A pointer computed from an unknown kernel
                        // variable (kmem's `vmemmap_base + pfn`): its offset
                        // from that variable, as libtraceevent prints it
                        // (`page=0x12ad55`, the pfn).
                        Val::Int(a, _) if matches!(ext.first(), None | Some(b'x' | b'K')) => {
                            ctx.partial = true;
                            printf::hex0x(out, if env.long_size < 8 { a & 0xffff_ffff } else { a });
                        }
                        _ => unknowable(ctx, out, &pad),
                    }
                    continue;
                }
                pointer(ctx, out, v, ext, &pad)?;
            }
            _ => return Err(msg!("unsupported conversion")),
        }
    }
    Ok(())
}

/// A conversion whose argument used a value the recording does not know
/// (a kernel variable such as `jiffies`): `?`, padded as a string.
fn unknowable(ctx: &mut Ctx<'_, '_>, out: &mut Out<'_>, pad: &Pad) {
    ctx.partial = true;
    printf::string(out, b"?", &Pad { prec: -1, ..*pad });
}

/// One `%p` conversion with extension `ext` (the alphanumerics after `p`).
#[inline(never)]
pub(crate) fn pointer<'a>(
    ctx: &Ctx<'a, '_>,
    out: &mut Out<'_>,
    v: Val<'a>,
    ext: &[u8],
    pad: &Pad,
) -> EResult<()> {
    let env = ctx.env;
    let first = ext.first().copied().unwrap_or(0);
    // Extensions that print the pointer value itself.
    if matches!(first, 0 | b'S' | b's' | b'B' | b'F' | b'f' | b'x' | b'K') {
        let addr = match v {
            Val::Int(a, _) => a,
            _ => return Err(msg!("%p of data inside the record (its address is unknown)")),
        };
        let addr = if env.long_size < 8 { addr & 0xffff_ffff } else { addr };
        if env.tep {
            return tep_pointer(env, out, addr, first);
        }
        if matches!(first, b'S' | b's' | b'B' | b'F' | b'f') {
            printf::symbol_conv(out, env.ksyms, addr, first, pad);
        } else {
            // Plain %p, %px, %pK: the raw value (see the module docs on hash-ptr).
            printf::pointer_string(out, addr, pad, env.long_size);
        }
        return Ok(());
    }
    // Everything else dereferences: it needs the bytes, not an address.
    let d: &[u8] = match v {
        Val::Int(0, _) => {
            printf::string(out, b"(null)", pad);
            return Ok(());
        }
        Val::Int(..) => return Err(msg!("%p extension of a kernel pointer (the data is not in the record)")),
        ref v => ctx.bytes(v).unwrap_or(b""),
    };
    // Formatted in place at the end of `out`, then padded like a string.
    let start = out.len();
    let tmp = &mut *out;
    match first {
        b'h' => {
            printf::hex_string(out, d, pad.width, ext);
            return Ok(());
        }
        b'b' => {
            // Never past the bytes we have (the kernel would read on in memory).
            let nbits = (pad.width.max(0) as usize).min(d.len() * 8);
            if ext.get(1) == Some(&b'l') {
                printf::bitmap_list(out, d, nbits, env);
            } else {
                printf::bitmap_hex(out, d, nbits, env);
            }
            return Ok(());
        }
        b'M' | b'm' => printf::mac(tmp, d, ext)?,
        b'I' | b'i' => match ext.get(1) {
            Some(b'4') => printf::ip4(tmp, d.get(..4).ok_or(msg!("short IPv4 address"))?, first == b'i'),
            Some(b'6') => {
                if d.len() < 16 {
                    return Err(msg!("short IPv6 address"));
                }
                printf::ip6(tmp, d, first == b'I', first == b'I' && ext.get(2) == Some(&b'c'))
            }
            Some(b'S') => printf::sockaddr(tmp, d, ext, env)?,
            _ => return Err(msg!("unsupported %pI variant")),
        },
        b'U' => printf::uuid(tmp, d, ext)?,
        _ => return Err(msg!("unsupported %p extension")),
    }
    printf::pad_tail(out, start, &Pad { prec: -1, ..*pad });
    Ok(())
}

/// libtraceevent's print_arg_pointer() for the value-printing `%p`s:
/// `func` (`%ps`), `func+0x1c` (`%pS`), `(nil)`, or `0x...`.
fn tep_pointer(env: &crate::printfmt::Env, out: &mut Out<'_>, addr: u64, first: u8) -> EResult<()> {
    let func = matches!(first, b'S' | b's' | b'B' | b'F' | b'f');
    let sym = if func { env.ksyms.and_then(|k| k.lookup(addr)) } else { None };
    match sym {
        Some(k) => {
            out.extend_from_slice(k.name.as_bytes());
            if !matches!(first, b's' | b'f') {
                out.push(b'+');
                printf::hex0x(out, k.offset);
            }
        }
        None if addr == 0 && !func => out.extend_from_slice(b"(nil)"),
        None => printf::hex0x(out, addr),
    }
    Ok(())
}

/// libtraceevent's get_op_prio() (bigger binds looser).
fn tep_prio(op: Op) -> u8 {
    match op {
        Op::Mul | Op::Div | Op::Rem => 6,
        Op::Add | Op::Sub => 7,
        Op::Shl | Op::Shr => 8,
        Op::Lt | Op::Gt | Op::Le | Op::Ge => 9,
        Op::Eq | Op::Ne => 10,
        Op::And => 11,
        Op::Xor => 12,
        Op::Or => 13,
        Op::AndAnd => 14,
        Op::OrOr => 15,
    }
}

/// Would libtraceevent re-associate `x OP right`? (A `?:` on the right
/// always: get_op_prio() gives `?` 16, looser than every binary operator.)
fn tep_rotates(op: Op, right: &Expr) -> bool {
    // (Only trace-cmd's styles use the dialect: the board build leaves
    // the conditional's case out.)
    matches!(right, Expr::Bin(o2, ..) if tep_prio(*o2) > tep_prio(op)) || (cfg!(feature = "trace-cmd-style") && matches!(right, Expr::Cond(..)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printfmt::Program;
    use alloc::boxed::Box;
    use alloc::string::String;

    fn ev(fmt: &str) -> Event {
        let t = alloc::format!(
            "name: t\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int a;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: {fmt}\n"
        );
        crate::format::parse_event("test", &t).unwrap()
    }

    fn render(e: &Event, a: i32, env: &Env) -> String {
        let mut r = alloc::vec![1u8, 0, 0, 0, 0, 0, 0, 0];
        r.extend_from_slice(&a.to_le_bytes());
        let mut s = String::new();
        Program::compile(e).unwrap().render(e, &r, env, &mut s).unwrap();
        s
    }

    fn render_f(e: &Event, a: i32, env: &Env) -> (String, crate::printfmt::Fidelity) {
        let mut r = alloc::vec![1u8, 0, 0, 0, 0, 0, 0, 0];
        r.extend_from_slice(&a.to_le_bytes());
        let mut s = String::new();
        let f = Program::compile(e).unwrap().render(e, &r, env, &mut s).unwrap();
        (s, f)
    }

    /// A value the recording lacks prints a stand-in, the rest of the line
    /// as the kernel prints it; with the value, the kernel's text.
    #[test]
    fn unknown_values_render_partially() {
        use crate::printfmt::Fidelity::{Exact, Partial};
        let env = Env::new(crate::cursor::Endian::Little, 8);
        let mut known = crate::ksyms::Enums::new();
        known.push("MODE_ABS", 0);
        known.push("MODE_REL", 1);
        known.push("vmemmap_base", 0xffd4_0000_0000_0000);
        known.push("sizeof(struct page)", 64);
        known.finish();
        let mut full = env;
        full.enums = Some(&known);
        let mut tep = env;
        tep.tep = true;

        // 6.1's hrtimer mode: no entry resolves, so the kernel's unmatched form.
        let sym = ev(r#""a=%d mode=%s", REC->a, __print_symbolic(REC->a, { MODE_ABS, "ABS" }, { MODE_REL, "REL" })"#);
        assert_eq!(render_f(&sym, 9, &env), ("a=9 mode=0x9".into(), Partial));
        assert_eq!(render_f(&sym, 1, &full), ("a=1 mode=REL".into(), Exact));
        // An entry before the first unknown one decides exactly.
        let sym = ev(r#""%s", __print_symbolic(REC->a, { 3, "THREE" }, { MODE_REL, "REL" })"#);
        assert_eq!(render_f(&sym, 3, &env), ("THREE".into(), Exact));
        assert_eq!(render_f(&sym, 4, &env), ("0x4".into(), Partial));
        let flags = ev(r#""%s", __print_flags(REC->a, "|", { 1, "A" }, { MODE_REL, "R" }, { 4, "C" })"#);
        assert_eq!(render_f(&flags, 1, &env), ("A".into(), Exact));
        assert_eq!(render_f(&flags, 5, &env), ("0x5".into(), Partial));
        assert_eq!(render_f(&flags, 0, &env), ("".into(), Exact));

        // kmem's page pointer: vmemmap_base + pfn * sizeof(struct page).
        let page = ev(r#""page=%p pfn=0x%x", (((struct page *)vmemmap_base) + (REC->a)), REC->a"#);
        assert_eq!(render_f(&page, 0x12ad55, &full), ("page=ffd4000004ab5540 pfn=0x12ad55".into(), Exact));
        assert_eq!(render_f(&page, 0x12ad55, &env), ("page=0x12ad55 pfn=0x12ad55".into(), Partial));
        assert_eq!(render_f(&page, 0x12ad55, &tep), ("page=0x12ad55 pfn=0x12ad55".into(), Exact));
        let mut base_only = crate::ksyms::Enums::new();
        base_only.push("vmemmap_base", 0xffd4_0000_0000_0000);
        base_only.finish();
        let mut half = env;
        half.enums = Some(&base_only);
        assert_eq!(render_f(&page, 0x10, &half).1, Partial);
        // The sum stays a `struct page *`: each index is scaled.
        let chain = ev(r#""%p", ((struct page *)0x1000 - 2) + REC->a"#);
        assert_eq!(render_f(&chain, 3, &full), ("0000000000001040".into(), Exact));

        // A value no recorder can keep (jiffies moves): `?`, padded.
        let age = ev(r#""age=%lu [%4lu] a=%d", jiffies - REC->a, jiffies, REC->a"#);
        assert_eq!(render_f(&age, 7, &env), ("age=? [   ?] a=7".into(), Partial));
    }

    /// Constant subtrees with `long` fold once the recording is known; flag
    /// tables become entries; the tep dialect's re-association survives.
    #[test]
    fn specialize_folds_what_the_recording_fixes() {
        let e = ev(r#""%s %d", __print_flags(REC->a, "|", { (unsigned long)(0x1 | 0x2), "AB" }, { (unsigned long)0x4, "C" }), REC->a & (0x1 | 0x2)"#);
        let env = Env::new(crate::cursor::Endian::Little, 8);
        let mut call = Program::compile(&e).unwrap().args.borrow()[0].clone();
        specialize(&mut call, &env, false);
        let Expr::Call(_, args) = &call else { panic!() };
        assert!(matches!(args[2], Expr::Entry(3, _)), "{:?}", args[2]);
        assert_eq!(render(&e, 7, &env), "AB|C 3");
        let mut tep = env;
        tep.tep = true;
        // libtraceevent: (a & 1) | 2.
        assert_eq!(render(&e, 4, &tep), "C 2");
        let mut b = Expr::Bin(Op::And, Box::new(Expr::Field(1)), Box::new(Expr::Bin(Op::Or, Box::new(Expr::Num(1, Ty::INT)), Box::new(Expr::Num(2, Ty::INT)))));
        specialize(&mut b, &tep, false);
        assert!(matches!(&b, Expr::Bin(Op::And, _, r) if matches!(**r, Expr::Bin(Op::Or, ..))));
        specialize(&mut b, &env, false);
        assert!(matches!(&b, Expr::Bin(Op::And, _, r) if matches!(**r, Expr::Num(3, _))));
    }

    /// mm_page_alloc_extfrag's `fragmenting`: libtraceevent reads
    /// `a < (9 < 10 ? 9 : 10)` as `(a < (9 < 10)) ? 9 : 10`.
    #[test]
    #[cfg(feature = "trace-cmd-style")]
    fn tep_dialect_takes_a_parenthesized_conditional_apart() {
        let e = ev(r#""%d", REC->a < (((unsigned int)(9)) < ((unsigned int)(10)) ? ((unsigned int)(9)) : ((unsigned int)(10)))"#);
        let env = Env::new(crate::cursor::Endian::Little, 8);
        let mut tep = env;
        tep.tep = true;
        assert_eq!((render(&e, 10, &env), render(&e, 3, &env)), ("0".into(), "1".into()));
        assert_eq!((render(&e, 10, &tep), render(&e, 0, &tep)), ("10".into(), "9".into()));
    }
}
