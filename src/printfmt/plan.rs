//! A print fmt made, at an event's first record, into a flat list of steps
//! that print straight into the line: most conversions of a recording
//! print a field as it is (`REC->ptr`, `(void *)REC->call_site`,
//! `__get_str(name)`), and walking the argument tree and the generic
//! conversion for each of them was a large part of the time per record.
//! `%s` and integers of other trees (operators, helpers, the
//! `__print_flags`/`__print_symbolic` tables) evaluate the tree and print
//! its value straight; the rest (`*` widths, `%p` of other trees, stand-ins for
//! unknown values) keeps the general conversion, decided once for the
//! event, not per record. Behind the `fast-print` feature: the board build
//! evaluates the trees alone, which prints the same (tests.rs compares
//! the two).

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::eval::{self, Ctx, EResult, SeqTable, Val};
use super::parse::{Expr, Func, Op, Ty};
use super::printf::{self, IntPrint, Num, Out, Pad, Piece, Spec, NO_PAD};
use super::{Env, ExprArgs};
use crate::cursor::Endian;
use crate::format::{Event, FieldKind};

/// A scalar field read as the evaluator reads `REC->f`, maybe through one
/// operator with a constant and a cast: `(unsigned int)((REC->dev) >> 20)`,
/// `REC->flags & 0x0001u`, `(void *)REC->call_site`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Load {
    /// (u16: fields sit in a record's first 64 KiB; one further on is left
    /// to the evaluator, and the two bytes keep a `Step` in a cache line.)
    offset: u16,
    /// 1, 2, 4 or 8: the sizes a field is read as (others are an error,
    /// left to the evaluator).
    size: u8,
    /// The value's C type as `Ctx::eval` gives it (signed: sign-extended
    /// when read; libtraceevent's dialect reads every field unsigned).
    ty: Ty,
    /// `64 - 8 * size` for a signed field, 0 for an unsigned one: the
    /// shifts that sign-extend it.
    sext: u8,
    /// The field's value shifted left by this before the operator: the
    /// index into an array of structs of `1 << shl` bytes (kmem's page).
    shl: u8,
    /// The operator's constant (0 without one; for a shift, the count).
    /// Apart from `arith`: in one tuple with the operator, its 8-byte
    /// alignment made every `Step` take more than one cache line.
    c: u64,
    /// What is done past the read, decided at the plan's build: the
    /// common operators straight, not through `Ctx::binop`'s conversions
    /// for each record (`(REC->dev) >> 20`, 2.9 M of an `-e all`
    /// recording's 1.45 M records); only the rest keeps the operator.
    arith: Arith,
    /// The result's truncation to its C type, as `eval::norm`'s: shifted
    /// up by `fin` and back, arithmetically if `fin_signed`. The cast's
    /// type when there is one (never wider than the operator's, so the
    /// one truncation does both), else the operator's result type.
    fin: u8,
    fin_signed: bool,
}

/// `Load::get`'s work past the read of the field `v`; the operators all
/// on `x = v << shl` and the constant `c`, then truncated (see `fin`).
/// (A tag byte of its own: kept in the niche of `Binop`'s operator, the
/// test and the dispatch per record took offsets and range checks, 64 B.)
#[derive(Clone, Copy, Debug)]
#[repr(u8)]
enum Arith {
    /// The field as it is read.
    Field,
    /// `x >> c`, logical or arithmetic (the promoted type's sign; the
    /// count modulo 64, as `binop` has it): MAJOR() of a `dev_t`.
    Shr,
    Sar,
    /// `+ c` (kmem's page), also a cast alone (`+ 0`).
    Add,
    /// `& c`: MINOR(), flag bits.
    And,
    /// Any other operator, the constant of type `.1`: `Ctx::binop`, with
    /// its errors.
    Binop(Op, Ty),
}

impl Load {
    /// Every field a plan prints comes through here (four a record on an
    /// `-e all` recording), so the read is inline: a call to
    /// `cursor::uint` and its checks for any size were a third of a load.
    /// (One copy for the steps that load: inline in each it was 0.7 KB.)
    #[inline(never)]
    fn get(&self, ctx: &Ctx) -> EResult<u64> {
        let v = self.field(ctx.rec, ctx.env.endian).ok_or(msg!("field beyond the record"))?;
        // Most loads are a field alone: nothing more to go through.
        if matches!(self.arith, Arith::Field) {
            return Ok(v);
        }
        self.apply(ctx, v)
    }

    /// The operator and cast: the operators of `binop` that need no
    /// conversion of their operands straight, truncated to the result
    /// type (the low bits are the same; `>>` is not, but `binop` shifts
    /// the operand as it is too).
    #[inline(never)]
    fn apply(&self, ctx: &Ctx, v: u64) -> EResult<u64> {
        let (x, c) = (v << self.shl, self.c);
        let r = match self.arith {
            Arith::Shr => x.wrapping_shr(c as u32),
            Arith::Sar => (x as i64).wrapping_shr(c as u32) as u64,
            Arith::And => x & c,
            Arith::Binop(op, t) => ctx.binop(op, (x, self.ty), (c, t))?.0,
            // (`get` takes a field alone, `c` 0, straight.)
            Arith::Add | Arith::Field => x.wrapping_add(c),
        };
        let r = r << self.fin;
        Ok(if self.fin_signed { ((r as i64) >> self.fin) as u64 } else { r >> self.fin })
    }

    /// The field's bytes as a number, sign-extended when its type is signed.
    #[inline(always)]
    fn field(&self, rec: &[u8], endian: Endian) -> Option<u64> {
        let rest = rec.get(self.offset as usize..)?;
        let v = match self.size {
            1 => *rest.first()? as u64,
            2 => endian.u16(*rest.first_chunk()?) as u64,
            4 => endian.u32(*rest.first_chunk()?) as u64,
            _ => endian.u64(*rest.first_chunk()?),
        };
        // `sext` is 0 for unsigned fields: no branch on the sign.
        Some((((v << self.sext) as i64) >> self.sext) as u64)
    }

}

/// One conversion of the format and the literal text before it: one
/// dispatch for each, not one more for each piece of text between them.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The format's text before the conversion, `fmt[lit.0..lit.1]`.
    lit: (u32, u32),
    pub(crate) conv: Conv,
    /// The conversion's flags, width and precision, `*` already excluded.
    pad: Pad,
}

// A record's steps are read one after another: each in one cache line
// (hence the boxed rare variants).
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<Step>() == 64);

#[derive(Clone, Debug)]
pub(crate) enum Conv {
    /// Nothing: the text after the last conversion.
    End,
    /// `%d`, `%u`, `%x` & co of a field, read as `.1` bytes, printed by
    /// `.2`; also a plain `%p` (its digits zero-padded).
    Int(Load, u8, IntPrint),
    /// `%p`, `%pS` & co that print a field's value (not what it points to);
    /// the extension's place in the format.
    Ptr(Load, (u32, u32)),
    /// `%s` of a string field (`__get_str(f)`, `char f[16]`): the field's index.
    Str(u32),
    /// `%s` of `COND ? "a" : "b"` (mm_lru_insertion's flags letters); the
    /// strings boxed: a rare step, and every `Step` is as large as the
    /// largest variant (the first read of each step was a cache miss).
    Pick(Load, Box<(Vec<u8>, Vec<u8>)>),
    /// `%s` of a flag or symbol table over a field (boxed as `Pick`).
    Table(Box<Table>),
    /// Conversion `.2` (read as `.1` bytes) of `G ? X : N` (ext4's `found
    /// ? pblk : 0`, kmem's `pfn != -1UL ? PAGE : NULL`: 100 k of an `-e
    /// all` recording's 1.45 M records walked the tree): G, X, N and, for
    /// `%p`, the extension's place, boxed as `Pick`.
    Guard(Box<(Load, Load, u64, (u32, u32))>, u8, u8),
    /// `%s` or an integer conversion (`.3`, read as `.2` bytes) of any
    /// other argument tree (kmem's `gfp ? __print_flags(gfp, ...) :
    /// "none"`, `found ? pblk : 0`): its value printed straight, without
    /// the general conversion's steps; a value `.3` does not print as it
    /// is (a stand-in for an unknown, a kernel pointer's `%s`) goes as `Eval`.
    Tree(u32, u32, u8, u8),
    /// Piece `.0` of the format through the general evaluator, its first
    /// argument expression at `.1`.
    Eval(u32, u32),
}

/// The steps for `pieces` with argument trees `exprs` (already
/// specialized for `env`'s recording).
pub(crate) fn build(ev: &Event, fmt: &[u8], pieces: &[Piece], exprs: &[Expr], env: &Env) -> Vec<Step> {
    let mut steps = Vec::with_capacity(pieces.len());
    let mut arg = 0;
    let mut lit = (0, 0);
    for (k, p) in pieces.iter().enumerate() {
        let s = match p {
            Piece::Lit(a, b) => {
                // Text after text (`%%` is a `%` piece of its own): a step
                // with no conversion.
                if lit.0 < lit.1 {
                    steps.push(Step { lit, conv: Conv::End, pad: NO_PAD });
                }
                lit = (*a, *b);
                continue;
            }
            Piece::Conv(s) => s,
        };
        let star = (s.width == Num::Star) as usize + (s.prec == Num::Star) as usize;
        let size = printf::qual_size(s.qual, s.conv, env.long_size) as u8;
        let tree = Conv::Tree(k as u32, arg as u32, size, s.conv);
        let pad = Pad { flags: s.flags, width: num(s.width), prec: num(s.prec) };
        let conv = match (s.conv, exprs.get(arg)) {
            _ if star > 0 => None,
            (b'd' | b'i' | b'u' | b'o' | b'x' | b'X', Some(e)) => Some(
                load(ev, e, env)
                    .map(|l| Conv::Int(l, size, IntPrint::of(s.conv, &pad)))
                    .or_else(|| guard(ev, e, env, size, s))
                    .unwrap_or(tree),
            ),
            (b'p', Some(e @ Expr::Cond(..))) => guard(ev, e, env, size, s),
            // A plain `%p`, `%px`, `%pK`: the value's digits, zero-padded
            // to a long's (as `pointer` prints them, and as a long wide).
            (b'p', Some(e)) if !env.tep && matches!(env.long_size, 4 | 8) && pad.flags == 0 && pad.width < 0 && matches!(ext(fmt, s.ext).first(), None | Some(b'x' | b'K')) => {
                let ls = env.long_size as u8;
                load(ev, e, env).map(|l| Conv::Int(l, ls, IntPrint::Hex0(2 * ls)))
            }
            // Only the extensions that print the value itself (as `pointer`).
            (b'p', Some(e)) if matches!(ext(fmt, s.ext).first(), None | Some(b'S' | b's' | b'B' | b'F' | b'f' | b'x' | b'K')) => {
                load(ev, e, env).map(|l| Conv::Ptr(l, s.ext))
            }
            (b's', Some(e)) => Some(
                pick(ev, e, env)
                    .or_else(|| Table::build(ev, e, env))
                    .or_else(|| string_field(ev, e).map(Conv::Str))
                    .unwrap_or(tree),
            ),
            _ => None,
        };
        steps.push(Step { lit, conv: conv.unwrap_or(Conv::Eval(k as u32, arg as u32)), pad });
        lit = (0, 0);
        arg += 1 + star;
    }
    steps.push(Step { lit, conv: Conv::End, pad: NO_PAD });
    steps
}

/// `REC->f`, `REC->f OP constant`, and either under a cast, as a `Load`.
fn load(ev: &Event, e: &Expr, env: &Env) -> Option<Load> {
    let (cast, e) = match e {
        Expr::Cast(t, a) => (Some(*t), &**a),
        e => (None, e),
    };
    let mut shl = 0;
    let (op, c, e) = match e {
        // A constant on the right: libtraceevent's dialect re-associates
        // only an operator there (see `eval::tep_rotates`).
        Expr::Bin(op, a, b) => match **b {
            Expr::Num(c, t) => (Some((*op, t)), eval::norm(c, t, env), &**a),
            _ => return None,
        },
        // `(struct page *)BASE + REC->pfn` (kmem's page, 45 k of an `-e
        // all` recording's 1.45 M records went through `Eval`): BASE, which
        // `eval::specialize` resolved, plus the field times the struct's
        // size (unscaled in libtraceevent's dialect), a power of two; in
        // either order the same `binop`.
        Expr::StructPtr(_, p) => match &**p {
            Expr::Bin(Op::Add, b, i) => match (&**b, &**i) {
                (Expr::Num(b, t), Expr::Scale(key, i)) => {
                    let n = if env.tep { 1 } else { env.enums?.get(key)? };
                    if !n.is_power_of_two() {
                        return None;
                    }
                    shl = n.trailing_zeros() as u8;
                    (Some((Op::Add, *t)), eval::norm(*b, *t, env), &**i)
                }
                _ => return None,
            },
            _ => return None,
        },
        e => (None, 0, e),
    };
    // `REC->f`, or `REC->args[2]` (raw_syscalls'): an element of a fixed
    // array, of its own type in either dialect, as `Ctx::eval` reads it.
    let (f, k) = match e {
        Expr::Field(i) => (ev.fields.get(*i)?, None),
        Expr::Index(a, k) => match (&**a, &**k) {
            (Expr::Field(i), Expr::Num(k, _)) => (ev.fields.get(*i)?, Some(*k as usize)),
            _ => return None,
        },
        _ => return None,
    };
    let (offset, size, ty) = match (k, &f.kind) {
        (None, FieldKind::Array(_)) => return None,
        (None, _) if cfg!(feature = "trace-cmd-style") && env.tep => (f.offset, f.size, Ty { size: 8, signed: false, ptr: f.is_ptr }),
        (None, _) => (f.offset, f.size, Ty { size: f.size as u8, signed: f.signed, ptr: f.is_ptr }),
        (Some(k), FieldKind::Array(_)) if !f.is_char => {
            let el = f.elem_size(env.long_size);
            let off = k.checked_mul(el).filter(|o| o.saturating_add(el) <= f.size)?;
            (f.offset + off, el, Ty { size: el as u8, signed: f.signed, ptr: false })
        }
        _ => return None,
    };
    if !matches!(size, 1 | 2 | 4 | 8) {
        return None;
    }
    Some(Load::new(u16::try_from(offset).ok()?, size as u8, ty, shl, op, c, cast, env))
}

impl Load {
    /// A load of the field at `offset`, `size` bytes of C type `ty`, then
    /// shifted left by `shl`, through `op` with the constant `c` (of the
    /// operator's type, normalized), then `cast`.
    #[allow(clippy::too_many_arguments)]
    fn new(offset: u16, size: u8, ty: Ty, shl: u8, op: Option<(Op, Ty)>, c: u64, cast: Option<Ty>, env: &Env) -> Load {
        let sext = if ty.signed { 64 - 8 * size } else { 0 };
        // `norm`'s truncation as shifts (the bits it clears); a 64-bit
        // type none.
        let fin = |t: Ty| (eval::norm(!0, Ty { signed: false, ..t }, env).leading_zeros() as u8, t.signed);
        // (A cast to a 64-bit type or a pointer leaves every value as it
        // is: `(void *)REC->call_site`.)
        let cast = cast.map(fin).filter(|f| f.0 != 0);
        let (arith, f) = match op {
            // A cast alone is `+ 0` (`c` is 0 without an operator).
            None => (if cast.is_some() { Arith::Add } else { Arith::Field }, (0, false)),
            Some((o, ct)) => {
                // The result's type as `binop` has it (never an error
                // with the operators done here).
                let t = eval::binop(env, o, (0, ty), (c, ct)).map_or(ty, |r| r.1);
                let a = match o {
                    Op::Shr if t.signed => Arith::Sar,
                    Op::Shr => Arith::Shr,
                    Op::Add => Arith::Add,
                    Op::And => Arith::And,
                    _ => Arith::Binop(o, ct),
                };
                // (`binop`'s result is truncated already: once more
                // leaves it as it is.)
                (a, fin(t))
            }
        };
        // A cast's truncation does the result's too: no cast is wider
        // than an operator's result (an int at least; a cast's type is
        // 1, 2 or 4 bytes here).
        let (fin, fin_signed) = cast.unwrap_or(f);
        Load { offset, size, ty, sext, shl, c, arith, fin, fin_signed }
    }
}

/// The condition of a `?:` as a `Load` whose value is not 0 when it
/// holds; a condition `1 && X` is X's truth (kmalloc's `accounted`).
fn cond(ev: &Event, c: &Expr, env: &Env) -> Option<Load> {
    let c = match c {
        Expr::Bin(Op::AndAnd, one, c) if matches!(**one, Expr::Num(v, t) if eval::norm(v, t, env) != 0) => c,
        c => c,
    };
    load(ev, c, env)
}

/// `COND ? "a" : "b"` as a `Pick`.
fn pick(ev: &Event, e: &Expr, env: &Env) -> Option<Conv> {
    let Expr::Cond(c, a, b) = e else { return None };
    let (Expr::Str(a), Expr::Str(b)) = (&**a, &**b) else { return None };
    cond(ev, c, env).map(|l| Conv::Pick(l, Box::new((a.clone(), b.clone()))))
}

/// `G ? X : N` as a `Guard` for conversion `s`.
fn guard(ev: &Event, e: &Expr, env: &Env, size: u8, s: &Spec) -> Option<Conv> {
    let Expr::Cond(g, x, n) = e else { return None };
    let Expr::Num(n, t) = **n else { return None };
    Some(Conv::Guard(Box::new((cond(ev, g, env)?, load(ev, x, env)?, eval::norm(n, t, env), s.ext)), size, s.conv))
}

/// `__print_flags(REC->f, "|", { 1, "A" }, ...)` or
/// `__print_symbolic(REC->f, { 1, "A" }, ...)`, maybe under
/// `REC->g ? TABLE : "none"` (kmem's gfp_flags, a sixth of the records of
/// an `-e all` recording), walked as `Ctx::call` walks it but without
/// evaluating the trees around it. Only tables of constants (every entry
/// resolved by `eval::specialize`), so no value can be unknown, and
/// texts without a NUL, so that what the walk prints is the string.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    /// `REC->g` of `REC->g ? TABLE : "other"`.
    guard: Option<Load>,
    value: Load,
    /// What of the value counts: the recording's `long` (the helpers but
    /// the `_u64` ones take an unsigned long); the entries' values are
    /// masked at the build.
    mask: u64,
    /// `__print_flags` (else `__print_symbolic`).
    flags: bool,
    /// The text for a zero guard ("" without a guard).
    other: Vec<u8>,
    /// Between flags' names ("" for symbols).
    delim: Vec<u8>,
    /// (value, name), up to the table's end: found once here, not in the
    /// argument tree at every record.
    entries: Vec<(u64, Vec<u8>)>,
}

impl Table {
    /// The step for the argument `e`, if it is a table of this shape.
    fn build(ev: &Event, e: &Expr, env: &Env) -> Option<Conv> {
        let (guard, other, e) = match e {
            Expr::Cond(g, e, o) => match &**o {
                Expr::Str(o) => (Some(&**g), &o[..], &**e),
                _ => return None,
            },
            e => (None, &b""[..], e),
        };
        let Expr::Call(f, args) = e else { return None };
        let (flags, long) = match f {
            Func::PrintFlags => (true, true),
            Func::PrintFlagsU64 => (true, false),
            Func::PrintSymbolic => (false, true),
            Func::PrintSymbolicU64 => (false, false),
            _ => return None,
        };
        let (delim, table) = match (flags, args.get(1..)?) {
            (true, [Expr::Str(d), table @ ..]) => (&d[..], table),
            (false, table) => (&b""[..], table),
            _ => return None,
        };
        let no_nul = |s: &[u8]| !s.contains(&0);
        if !no_nul(other) || !no_nul(delim) {
            return None;
        }
        let mask = if long && env.long_size < 8 { 0xffff_ffff } else { u64::MAX };
        let mut entries = Vec::new();
        for ent in table {
            match ent {
                Expr::Entry(m, name) if no_nul(name) => entries.push((m & mask, name.clone())),
                // A NULL name (`{ 0, ((void *)0) }`, `{ }`) ends the table.
                Expr::List(l) if l.len() != 2 || matches!(l[1], Expr::Num(0, _)) => break,
                _ => return None,
            }
        }
        let guard = match guard {
            Some(g) => Some(load(ev, g, env)?),
            None => None,
        };
        let value = load(ev, args.first()?, env)?;
        Some(Conv::Table(Box::new(Table { guard, value, mask, flags, other: other.to_vec(), delim: delim.to_vec(), entries })))
    }

    /// trace_print_flags_seq() or trace_print_symbols_seq() of the value,
    /// then padded as `%s` pads.
    fn print(&self, ctx: &Ctx, out: &mut Out<'_>, pad: &Pad) -> EResult<()> {
        let start = out.len();
        match &self.guard {
            Some(g) if g.get(ctx)? == 0 => put(out, &self.other),
            _ => {
                let v = self.value.get(ctx)? & self.mask;
                let mut w = Walk { entries: self.entries.iter(), delim: &self.delim, out };
                if self.flags {
                    eval::flags_seq(&mut w, v)?;
                } else {
                    eval::symbols_seq(&mut w, v)?;
                }
            }
        }
        if pad.width >= 0 || pad.prec >= 0 {
            printf::pad_tail(out, start, pad);
        }
        Ok(())
    }
}

/// A `Table`'s walk: the names straight into the line.
struct Walk<'t, 'o, 'b> {
    entries: core::slice::Iter<'t, (u64, Vec<u8>)>,
    delim: &'t [u8],
    out: &'o mut Out<'b>,
}

impl<'t> SeqTable for Walk<'t, '_, '_> {
    type Name = &'t [u8];

    fn next(&mut self) -> EResult<Option<(u64, &'t [u8])>> {
        Ok(self.entries.next().map(|(m, name)| (*m, &name[..])))
    }

    fn name(&mut self, delim: bool, name: &[u8]) -> EResult<()> {
        if delim {
            put(self.out, self.delim);
        }
        put(self.out, name);
        Ok(())
    }

    fn hex(&mut self, delim: bool, v: u64) {
        if delim {
            put(self.out, self.delim);
        }
        printf::hex0x(self.out, v);
    }
}

/// `Out::extend_from_slice` out of line: inline in each of the table's
/// four places it was 0.3 KB, for a copy or two a record.
#[inline(never)]
fn put(out: &mut Out<'_>, s: &[u8]) {
    out.extend_from_slice(s);
}

/// `__get_str(f)` or a `char` array field (through a pointer cast or not):
/// the field's index.
fn string_field(ev: &Event, e: &Expr) -> Option<u32> {
    let e = match e {
        Expr::Cast(Ty { ptr: true, .. }, a) => &**a,
        e => e,
    };
    let i = match *e {
        Expr::Dyn(i) => i,
        Expr::Field(i) if matches!(ev.fields.get(i)?.kind, FieldKind::Array(_)) => i,
        _ => return None,
    };
    u32::try_from(i).ok()
}

fn ext(fmt: &[u8], (at, len): (u32, u32)) -> &[u8] {
    fmt.get(at as usize..(at + len) as usize).unwrap_or(b"")
}

/// A width or precision without `*`, capped as `eval::format` caps it.
fn num(n: Num) -> i32 {
    match n {
        Num::N(n) => n.min(eval::MAX_WIDTH),
        _ => -1,
    }
}

/// Print one record by `steps`; `exprs` and `pieces` are those `build` had.
pub(crate) fn run<'a>(ctx: &mut Ctx<'a, '_>, fmt: &[u8], pieces: &[Piece], exprs: &'a [Expr], steps: &[Step], out: &mut Out<'_>) -> EResult<()> {
    let env = ctx.env;
    for st in steps {
        let (a, b) = st.lit;
        if a < b {
            out.extend_from_slice(fmt.get(a as usize..b as usize).unwrap_or(b""));
        }
        let pad = &st.pad;
        let (p, a) = match &st.conv {
            Conv::End => continue,
            Conv::Int(l, size, print) => {
                print.print(out, l.get(ctx)?, *size as usize, pad);
                continue;
            }
            Conv::Ptr(l, x) => {
                let v = l.get(ctx)?;
                eval::pointer(ctx, out, Val::Int(v, Ty::PTR), ext(fmt, *x), pad)?;
                continue;
            }
            Conv::Str(i) => {
                let f = ctx.ev.fields.get(*i as usize).ok_or(msg!("REC used without ->field"))?;
                let d = f.data(ctx.rec, env.endian).ok_or(msg!("field beyond the record"))?;
                printf::string(out, d, pad);
                continue;
            }
            Conv::Table(t) => {
                t.print(ctx, out, pad)?;
                continue;
            }
            Conv::Guard(b, size, conv) => {
                let (g, x, n, at) = &**b;
                let v = if g.get(ctx)? != 0 { x.get(ctx)? } else { *n };
                match conv {
                    b'p' => eval::pointer(ctx, out, Val::Int(v, Ty::PTR), ext(fmt, *at), pad)?,
                    _ => printf::int_conv(out, v, *size as usize, *conv, pad),
                }
                continue;
            }
            Conv::Pick(c, ab) => {
                let d = if c.get(ctx)? != 0 { &ab.0 } else { &ab.1 };
                printf::string(out, d, pad);
                continue;
            }
            Conv::Tree(p, a, size, conv) => {
                let e = exprs.get(*a as usize).ok_or(msg!("fewer arguments than conversions"))?;
                let unknowns = ctx.unknowns;
                let v = ctx.eval(e)?;
                match v {
                    _ if ctx.unknowns != unknowns => {}
                    Val::Int(v, _) if *conv != b's' => {
                        printf::int_conv(out, v, *size as usize, *conv, pad);
                        continue;
                    }
                    Val::Bytes(_) | Val::Scratch(..) if *conv == b's' => {
                        printf::string(out, ctx.bytes(&v).unwrap_or(b""), pad);
                        continue;
                    }
                    _ => {}
                }
                // Evaluated again below, as the general conversion does it.
                ctx.unknowns = unknowns;
                (p, a)
            }
            Conv::Eval(p, a) => (p, a),
        };
        let p = *p as usize;
        let mut args = ExprArgs { exprs, next: *a as usize };
        eval::format(ctx, fmt, pieces.get(p..p + 1).unwrap_or(&[]), &mut args, out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::NO_EVENT;

    /// `Load::get`'s operators straight against `Ctx::binop` and
    /// `eval::norm` (what a load did before): every field size and sign,
    /// every operator, constants of every type (negative ones, shifts by
    /// the width and beyond), every cast, both `long` sizes.
    #[test]
    fn arith_as_binop() {
        let vals = [
            0u64, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_ffff,
            0x1234_5678_9abc_def0, 1 << 63, u64::MAX,
        ];
        let consts = [0u64, 1, 3, 7, 8, 15, 16, 20, 31, 32, 33, 63, 64, 65, (1 << 20) - 1, 0x8000_0000, -1i64 as u64, -20i64 as u64];
        let ops = [
            Op::OrOr, Op::AndAnd, Op::Or, Op::Xor, Op::And, Op::Eq, Op::Ne, Op::Lt, Op::Gt, Op::Le, Op::Ge, Op::Shl,
            Op::Shr, Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Rem,
        ];
        let mut types = Vec::new();
        for size in [0, 1, 2, 4, 8] {
            for signed in [false, true] {
                types.push(Ty { size, signed, ptr: false });
            }
        }
        types.push(Ty::PTR);
        let mut n = 0;
        for long_size in [8, 4] {
            let env = Env::new(Endian::Little, long_size);
            for &ty in &types {
                let size = eval::tsize(ty, &env) as u8;
                for &v in &vals {
                    let rec = v.to_le_bytes();
                    let ctx = Ctx { ev: &NO_EVENT, rec: &rec, env: &env, scratch: Vec::new(), unknowns: 0, partial: false };
                    let x = eval::norm(v, ty, &env);
                    for shl in [0, 6] {
                        // (`load` shifts only with an operator: kmem's `+`.)
                        for op in ops.iter().map(|&o| Some(o)).chain([None]).filter(|o| o.is_some() || shl == 0) {
                            for &ct in &types {
                                for &c in &consts {
                                    // (`load` has it 0 without an operator.)
                                    let c = if op.is_some() { eval::norm(c, ct, &env) } else { 0 };
                                    for cast in types.iter().map(|&t| Some(t)).chain([None]) {
                                        let l = Load::new(0, size, ty, shl, op.map(|o| (o, ct)), c, cast, &env);
                                        let r = match op {
                                            Some(o) => ctx.binop(o, (x << shl, ty), (c, ct)).map(|r| r.0),
                                            None => Ok(x),
                                        };
                                        let r = r.map(|r| cast.map_or(r, |t| eval::norm(r, t, &env)));
                                        let got = l.get(&ctx);
                                        assert_eq!(got.is_ok(), r.is_ok(), "{l:?} {v:#x}");
                                        if let (Ok(a), Ok(b)) = (got, r) {
                                            assert_eq!(a, b, "{l:?} {v:#x}");
                                        }
                                        n += 1;
                                    }
                                    if op.is_none() {
                                        break;
                                    }
                                }
                                if op.is_none() {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(n > 1_000_000);
    }
}
