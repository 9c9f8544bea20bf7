//! The `print fmt` interpreter: parses the format string and its C argument
//! expressions once per event, then evaluates them over each record; the
//! conversions that print fields as they are go by a flat plan made at the
//! event's first record (plan.rs).
//!
//! # API (stable names)
//! ```text
//! Env::new(endian, long_size)           // + .ksyms, .printk, .enums, .hz (pub fields)
//! Program::compile(&Event) -> Result<Program, CompileError>
//! program.render(&Event, rec, &Env, &mut dyn fmt::Write) -> Result<Fidelity, RenderError>
//! render_fields(&Event, rec, &Env, &mut dyn fmt::Write) -> Result<(), RenderError>
//! bprint(fmt: &[u8], args: &[u8], &Env, &mut dyn fmt::Write) -> Result<(), RenderError>
//! ```
//! `rec` is the event payload starting at `common_type`. `render` prints the
//! event-specific text (what the kernel prints after `NAME: `), without a
//! newline. It builds the whole line first and writes nothing on error, so a
//! caller can count the failure and print `render_fields` instead. Any
//! record, however corrupt, gives text or an error, never a panic.
//!
//! # Matching the kernel's `trace` file
//! The kernel prints events with its own vsnprintf(), so this module mirrors
//! lib/vsprintf.c, not glibc (see printf.rs), and its trace helpers
//! (trace_print_flags_seq() & co). Checked by tests/fmt_live.rs: every
//! format of the running kernel compiles (4 KVM MMU formats excepted: GNU
//! statement expressions calling trace_seq_printf() on unions), and the text
//! rendered from the raw ring buffer equals `cat trace` line for line, in
//! normal and in `fields` mode. Known limits:
//! - plain `%p`: the kernel hashes pointers unless the instance's `hash-ptr`
//!   option is 0 (then `%p` becomes `%px`). A hash cannot be reproduced
//!   offline, so we always print the raw value zero-padded like `%px`; this
//!   matches the kernel exactly when hash-ptr was 0 (the live test sets it).
//!   `%pK` prints the same way.
//! - `%s` of a kernel pointer prints the string when printk_formats lists it
//!   (tracepoint_string(), trace_printk formats), else it is an error; `%p`
//!   extensions that dereference a kernel pointer are errors.
//! - identifiers a format leaves unresolved (enum names without
//!   TRACE_DEFINE_ENUM, kernel variables) take their values from
//!   `Env::enums`. ftrec and `ftcat --live` replace the enum names in the
//!   format text with their BTF values (`format::resolve_enums_btf`), as
//!   the kernel's eval maps do for TRACE_DEFINE_ENUM'd ones, and read the
//!   variables a format needs (`vmemmap_base`, `sizeof(struct page)`) from
//!   the running kernel (ftrec keeps them in the file).
//! - what depends on an identifier without a value renders partially
//!   (`Fidelity::Partial`), the rest of the line as the kernel prints it: a
//!   flag/symbol table that reaches an unresolved entry prints the value
//!   as the kernel prints one no entry matches (`mode=0x9`); a `%p` of a
//!   pointer built on an unknown variable prints its offset from it the
//!   way libtraceevent does (`page=0x12ad55`: vmemmap_base + pfn, the pfn);
//!   any other conversion of such a value prints `?` (`jiffies` in
//!   writeback's `age=`, which changes every tick: no recorder can keep it).
//! - formats calling kernel functions (Xen pte_val(), cper_*()) cannot be
//!   evaluated: errors.
//! - `jiffies_to_msecs()` needs `Env::hz`.
//! - bytes that are not UTF-8 (binary junk in a string field) go through
//!   `core::fmt::Write` as text's raw-byte escapes (`text::put_all`), which
//!   the output edge writes back as the bytes; `render_bytes` keeps them.

/// Defined before the modules that use it: `msg!("text")` is the `Msg` of
/// one of the lines of `MSGS`, found at compile time (a text not listed
/// there does not compile).
macro_rules! msg {
    ($s:literal) => {{
        const M: $crate::printfmt::Msg = $crate::printfmt::Msg::of($s);
        M
    }};
}

mod eval;
mod parse;
#[cfg(feature = "fast-print")]
mod plan;
pub(crate) use parse::is_type_word;
pub(crate) mod printf;

use alloc::vec::Vec;
use core::fmt;

use crate::cursor::{read_uint, Endian};
use crate::format::{Event, FieldKind};
use crate::ksyms::{Enums, Ksyms, Printk};
use eval::{Args, Ctx, EResult, Val};
use parse::{Expr, Parser};
use printf::{Piece, Spec};
pub use printf::{append, Out};

/// What a recording says about the machine that wrote it, plus the tables
/// printing needs.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    pub endian: Endian,
    /// Size of the recording kernel's `long` (4 or 8).
    pub long_size: usize,
    /// For `%pS` and friends; without it addresses print as `0x...`, like a
    /// kernel lookup that finds nothing.
    pub ksyms: Option<&'a Ksyms>,
    /// printk_formats: the formats of `bprint` records and the strings
    /// tracepoint_string() exports, which `%s` of a pointer prints.
    pub printk: Option<&'a Printk>,
    /// Values for identifiers a format leaves unresolved: enumerators (from
    /// the kernel's BTF), kernel variables (`vmemmap_base`) and struct sizes
    /// (`sizeof(struct page)`) a recorder read from the running kernel.
    /// Without one, what depends on it prints a stand-in (`Fidelity::Partial`).
    pub enums: Option<&'a Enums>,
    /// The kernel's CONFIG_HZ for `jiffies_to_msecs()`; 0 = unknown (an error).
    pub hz: u32,
    /// libtraceevent's dialect (ftcat --style trace-cmd): `%p` as glibc
    /// prints it (`0x..`, `(nil)`), `%pS` as `func+0x1c` (no size, module).
    pub tep: bool,
    /// With `tep`: libtraceevent 1.7's text (trace-cmd 3.1/3.2) where it
    /// differs from 1.9's: `__print_array` as `%u`s apart (`1 2`), which
    /// 1.8.4 changed to the kernel's `{0x1,0x2}`.
    pub tep_1_7: bool,
}

impl<'a> Env<'a> {
    pub fn new(endian: Endian, long_size: usize) -> Self {
        Env { endian, long_size, ksyms: None, printk: None, enums: None, hz: 0, tep: false, tep_1_7: false }
    }
}

/// Why a print fmt does not compile or a record does not render: a line of
/// `MSGS` by number. One byte in a `Result` where a `&'static str` is two
/// words, which every error site of the parser and evaluator wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Msg(u8);

/// Every message, one a line.
const MSGS: &str = "print fmt does not start with a string\n\
    unexpected token after argument\n\
    expression nested too deeply\n\
    cast to a struct\n\
    cast to an unknown type\n\
    & of something other than a field\n\
    sizeof of an expression\n\
    expected field name\n\
    member access on something other than REC\n\
    expected a variable name\n\
    helper expects a field name\n\
    wrong number of helper arguments\n\
    flag/symbol table entry is not { value, name }\n\
    unexpected token in expression\n\
    REC-> names no field of this event\n\
    statement expression without a value\n\
    helper names no field of this event\n\
    unexpected end of expression\n\
    call of an unknown function\n\
    expected ':' in ?:\n\
    expected ]\n\
    expected {\n\
    statement expression variable without initializer\n\
    expected ; after declaration\n\
    expected ; in statement expression\n\
    unterminated string or char\n\
    bad char literal\n\
    bad number\n\
    unexpected character\n\
    bad flag/symbol entry\n\
    a pointer where a number was expected\n\
    division by zero\n\
    unsupported operator\n\
    unsupported unary operator\n\
    bad rotation\n\
    cast of a pointer to an integer\n\
    index beyond the array\n\
    { } outside a helper\n\
    jiffies_to_msecs() needs the kernel's HZ\n\
    flag/symbol name is not a string\n\
    %s of a kernel pointer (its text is not in the record)\n\
    unsupported conversion\n\
    %p of data inside the record (its address is unknown)\n\
    %p extension of a kernel pointer (the data is not in the record)\n\
    short IPv6 address\n\
    unsupported %pI variant\n\
    unsupported %p extension\n\
    REC used without ->field\n\
    index into a number\n\
    __print_hex/array of a number\n\
    __print_array too long\n\
    __print_hex/array beyond the array\n\
    short IPv4 address\n\
    index beyond the record\n\
    short array\n\
    field beyond the record\n\
    fewer arguments than conversions\n\
    bprint arguments end early\n\
    bprint string without NUL\n\
    unsupported printf conversion\n\
    format ends inside a conversion\n\
    MAC address shorter than 6 bytes\n\
    short sockaddr_in\n\
    short sockaddr_in6\n\
    UUID shorter than 16 bytes\n\
    short sockaddr\n\
    expected ( after sizeof\n\
    expected ) after sizeof\n\
    expected ) after cast type\n\
    expected ) after statement expression\n\
    expected , or ) in call\n\
    expected , in { }\n\
    expected )\n\
    expected ) after field name";

/// Where each line of `MSGS` starts, and one past the end: `Msg::text` of
/// every failed record without a search.
const MSG_AT: [u16; msg_lines() + 1] = {
    let m = MSGS.as_bytes();
    let mut at = [0u16; msg_lines() + 1];
    let (mut i, mut n) = (0, 1);
    while i < m.len() {
        if m[i] == b'\n' {
            at[n] = (i + 1) as u16;
            n += 1;
        }
        i += 1;
    }
    at[n] = (m.len() + 1) as u16;
    at
};

const fn msg_lines() -> usize {
    let m = MSGS.as_bytes();
    let (mut i, mut n) = (0, 1);
    while i < m.len() {
        n += (m[i] == b'\n') as usize;
        i += 1;
    }
    n
}

impl Msg {
    /// The number of line `s` of `MSGS`; a compile-time error when it is not there.
    pub(crate) const fn of(s: &str) -> Msg {
        let s = s.as_bytes();
        let mut n = 0;
        while n + 1 < MSG_AT.len() {
            let (a, b) = (MSG_AT[n] as usize, MSG_AT[n + 1] as usize - 1);
            if b - a == s.len() {
                let mut k = 0;
                while k < s.len() && MSGS.as_bytes()[a + k] == s[k] {
                    k += 1;
                }
                if k == s.len() {
                    return Msg(n as u8);
                }
            }
            n += 1;
        }
        panic!("message not in MSGS")
    }

    pub(crate) fn text(self) -> &'static str {
        let n = self.0 as usize;
        match (MSG_AT.get(n), MSG_AT.get(n + 1)) {
            (Some(&a), Some(&b)) => MSGS.get(a as usize..b as usize - 1).unwrap_or(""),
            _ => "",
        }
    }
}

/// The print fmt cannot be compiled; the caller prints fields instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError {
    pub what: &'static str,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
}

/// A record could not be printed with its print fmt (nothing was written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RenderError {
    pub what: &'static str,
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.what)
    }
}

impl From<Msg> for RenderError {
    fn from(m: Msg) -> Self {
        RenderError { what: m.text() }
    }
}

/// A compiled print fmt.
#[derive(Clone, Debug)]
pub struct Program {
    fmt: Vec<u8>,
    pieces: Vec<Piece>,
    /// The argument trees, until the first render specializes them.
    args: core::cell::RefCell<Vec<Expr>>,
    /// `args` with the constants of one recording folded (its `long` size
    /// and dialect), made at the first render (see `eval::specialize`).
    spec: core::cell::OnceCell<Specialized>,
    /// The helpers' string buffer (`Ctx::scratch`), kept between records
    /// so that `__print_flags` & co do not allocate for each.
    scratch: core::cell::RefCell<Vec<u8>>,
}

impl Program {
    pub fn compile(ev: &Event) -> Result<Program, CompileError> {
        let e = |m: Msg| CompileError { what: m.text() };
        let (fmt, args) = parse_print_fmt(ev).map_err(e)?;
        let pieces = printf::parse_format(&fmt).map_err(e)?;
        let mut need = 0;
        for p in &pieces {
            if let Piece::Conv(s) = p {
                need += 1 + (s.width == printf::Num::Star) as usize + (s.prec == printf::Num::Star) as usize;
            }
        }
        if need > args.len() {
            return Err(e(msg!("fewer arguments than conversions")));
        }
        Ok(Program { fmt, pieces, args: core::cell::RefCell::new(args), spec: core::cell::OnceCell::new(), scratch: core::cell::RefCell::new(Vec::new()) })
    }

    /// Print one record. On error nothing has been written to `out`.
    pub fn render(&self, ev: &Event, rec: &[u8], env: &Env, out: &mut dyn fmt::Write) -> Result<Fidelity, RenderError> {
        let mut buf = Vec::new();
        let mut r = Ok(Fidelity::Exact);
        printf::append(&mut buf, &mut |o| r = self.render_bytes(ev, rec, env, o));
        let f = r?;
        write_bytes(out, &buf)?;
        Ok(f)
    }

    /// Like `render`, appending raw bytes to `buf` (no UTF-8 round trip).
    pub fn render_bytes(&self, ev: &Event, rec: &[u8], env: &Env, buf: &mut Out<'_>) -> Result<Fidelity, RenderError> {
        let mut scratch = core::mem::take(&mut *self.scratch.borrow_mut());
        scratch.clear();
        let mut ctx = Ctx { ev, rec, env, scratch, unknowns: 0, partial: false };
        let s = crate::util::once(&self.spec, || {
            let mut exprs = self.args.take();
            for e in &mut exprs {
                eval::specialize(e, env, false);
            }
            Specialized {
                long_size: env.long_size,
                tep: env.tep,
                #[cfg(feature = "fast-print")]
                steps: plan::build(ev, &self.fmt, &self.pieces, &exprs, env),
                exprs,
            }
        });
        let start = buf.len();
        let same = (s.long_size, s.tep) == (env.long_size, env.tep);
        let other;
        // (The label goes unused where plans are left out.)
        #[cfg_attr(not(feature = "fast-print"), allow(unused_labels))]
        let r = 'r: {
            #[cfg(feature = "fast-print")]
            if same {
                break 'r plan::run(&mut ctx, &self.fmt, &self.pieces, &s.exprs, &s.steps, buf);
            }
            // Without plans (the board build) the trees; for another
            // recording's `long` or dialect (tests) the trees parsed again,
            // which is smaller than code to keep or clone a copy.
            let exprs = if same {
                &s.exprs
            } else {
                other = parse_print_fmt(ev).map(|r| r.1).unwrap_or_default();
                &other
            };
            eval::format(&mut ctx, &self.fmt, &self.pieces, &mut ExprArgs { exprs, next: 0 }, buf)
        };
        *self.scratch.borrow_mut() = ctx.scratch;
        if r.is_err() {
            buf.truncate(start);
        }
        r?;
        Ok(if ctx.partial { Fidelity::Partial } else { Fidelity::Exact })
    }
}

/// A print fmt made for one recording: its `long` size and dialect, the
/// argument trees with its constants folded, and the steps that print a
/// record (see `plan`).
#[derive(Clone, Debug)]
struct Specialized {
    long_size: usize,
    tep: bool,
    exprs: Vec<Expr>,
    #[cfg(feature = "fast-print")]
    steps: Vec<plan::Step>,
}

/// How closely a rendered line follows the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fidelity {
    /// Every value was known: the kernel's text.
    Exact,
    /// Some value the recording does not hold (a kernel variable, an
    /// enumerator without TRACE_DEFINE_ENUM) printed as a stand-in: `?`,
    /// a flag/symbol table's unmatched-value form `0x9`, or a pointer's
    /// offset from the unknown base; the rest is the kernel's text.
    Partial,
}

/// The format string and the argument trees of `ev`'s print fmt.
fn parse_print_fmt(ev: &Event) -> Result<(Vec<u8>, Vec<Expr>), Msg> {
    let toks = parse::lex(ev.print_fmt.as_bytes()).map_err(|(_, w)| w)?;
    let mut p = Parser::new(toks, ev);
    let fmt = p.fmt_string()?;
    Ok((fmt, p.args()?))
}

/// The print fmt's argument trees, from the `next`th on.
pub(crate) struct ExprArgs<'a> {
    pub exprs: &'a [Expr],
    pub next: usize,
}

impl<'a> ExprArgs<'a> {
    fn next_expr(&mut self) -> EResult<&'a Expr> {
        let e = self.exprs.get(self.next).ok_or(msg!("fewer arguments than conversions"))?;
        self.next += 1;
        Ok(e)
    }
}

impl<'a> Args<'a> for ExprArgs<'a> {
    fn int(&mut self, ctx: &mut Ctx<'a, '_>, _size: usize, _signed: bool) -> EResult<u64> {
        let e = self.next_expr()?;
        Ok(ctx.int(e)?.0)
    }
    fn val(&mut self, ctx: &mut Ctx<'a, '_>, _spec: &Spec, _ext: &[u8]) -> EResult<Val<'a>> {
        let e = self.next_expr()?;
        ctx.eval(e)
    }
}

/// Arguments packed by the kernel's vbin_printf() (trace_printk → bprint):
/// integers at their natural alignment (8-byte ones at 4), strings inline
/// with their NUL, and `%p` extensions that dereference already formatted
/// into strings at record time.
struct BinArgs<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> BinArgs<'a> {
    fn get(&mut self, size: usize, env: &Env) -> EResult<u64> {
        let align = if size == 8 { 4 } else { size.max(1) };
        self.pos = self.pos.div_ceil(align) * align;
        let v = read_uint(self.buf, self.pos, size, env.endian).map_err(|_| msg!("bprint arguments end early"))?;
        self.pos += size;
        Ok(v)
    }
    fn cstr(&mut self) -> EResult<&'a [u8]> {
        let rest = self.buf.get(self.pos..).ok_or(msg!("bprint arguments end early"))?;
        let n = rest.iter().position(|&b| b == 0).ok_or(msg!("bprint string without NUL"))?;
        self.pos += n + 1;
        Ok(&rest[..n])
    }
}

/// `%p` extensions vbin_printf() leaves as pointers; all others it formats at
/// record time.
fn bin_keeps_pointer(ext: &[u8]) -> bool {
    matches!(ext.first(), None | Some(b'S' | b's' | b'x' | b'K' | b'e' | b'F' | b'f' | b'B'))
}

impl<'a> Args<'a> for BinArgs<'a> {
    fn int(&mut self, ctx: &mut Ctx<'a, '_>, size: usize, _signed: bool) -> EResult<u64> {
        self.get(size, ctx.env)
    }
    fn val(&mut self, ctx: &mut Ctx<'a, '_>, spec: &Spec, ext: &[u8]) -> EResult<Val<'a>> {
        if spec.conv == b's' {
            return Ok(Val::Bytes(self.cstr()?));
        }
        if bin_keeps_pointer(ext) {
            let v = self.get(ctx.env.long_size, ctx.env)?;
            return Ok(Val::Int(v, parse::Ty::PTR));
        }
        Ok(Val::Bytes(self.cstr()?))
    }
}

/// Format a `bprint` record: `fmt` from printk_formats, `args` the record's
/// `buf` (vbin_printf layout). Prints what trace_seq_bprintf() prints.
pub fn bprint(fmt: &[u8], args: &[u8], env: &Env, out: &mut dyn fmt::Write) -> Result<(), RenderError> {
    let mut buf = Vec::new();
    let mut r = Ok(());
    printf::append(&mut buf, &mut |o| r = bprint_bytes(fmt, args, env, o));
    r?;
    write_bytes(out, &buf)
}

/// `bprint` into bytes; nothing is appended on error.
pub fn bprint_bytes(fmt: &[u8], args: &[u8], env: &Env, buf: &mut Out<'_>) -> Result<(), RenderError> {
    let pieces = printf::parse_format(fmt)?;
    let mut ctx = Ctx { ev: &crate::format::NO_EVENT, rec: &[], env, scratch: Vec::new(), unknowns: 0, partial: false };
    let start = buf.len();
    let mut a = BinArgs { buf: args, pos: 0 };
    // Pre-formatted %p strings are copied verbatim (bstr_printf), so split
    // those conversions off from the generic path.
    let r = (|| -> EResult<()> {
        for p in &pieces {
            if let Piece::Conv(s) = p {
                let ext = fmt.get(s.ext.0 as usize..(s.ext.0 + s.ext.1) as usize).unwrap_or(b"");
                if s.conv == b'p' && !bin_keeps_pointer(ext) {
                    if s.width == printf::Num::Star {
                        a.get(4, env)?;
                    }
                    if s.prec == printf::Num::Star {
                        a.get(4, env)?;
                    }
                    buf.extend_from_slice(a.cstr()?);
                    continue;
                }
            }
            eval::format(&mut ctx, fmt, core::slice::from_ref(p), &mut a, buf)?;
        }
        Ok(())
    })();
    if r.is_err() {
        buf.truncate(start);
    }
    Ok(r?)
}

/// The kernel's isprint() (lib/ctype.c): printable ASCII and Latin-1
/// 0xa0-0xff. print_fields() shows such a 1-byte field as the byte itself
/// too (fib6_table_lookup's rt_type=255).
fn isprint(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b >= 0xa0
}

/// Every non-common field as `name=value`, separated by spaces, the way the
/// kernel's `fields` option prints them (print_fields() in trace_output.c):
/// strings as text, dynamic non-string arrays as comma-separated hex bytes,
/// 1-byte integers as `'c'(N)`, 2- and 4-byte ones as `0xH (N)`, long-sized
/// ones as `%pS (N)` (a symbol when one holds the value, else `0x...`).
pub fn render_fields(ev: &Event, rec: &[u8], env: &Env, out: &mut dyn fmt::Write) -> Result<(), RenderError> {
    let mut v = Vec::new();
    printf::append(&mut v, &mut |b| fields_into(ev, rec, env, b));
    write_bytes(out, &v)
}

fn fields_into(ev: &Event, rec: &[u8], env: &Env, b: &mut Out<'_>) {
    let mut first = true;
    for f in ev.fields.iter().skip(ev.ncommon) {
        if !first {
            b.push(b' ');
        }
        first = false;
        b.extend_from_slice(f.name.as_bytes());
        b.push(b'=');
        if f.offset.saturating_add(f.size) > rec.len() {
            b.extend_from_slice(b"<OVERFLOW>");
            continue;
        }
        // Strings (char arrays, fixed or dynamic) and dynamic arrays.
        if matches!(f.kind, FieldKind::DataLoc | FieldKind::RelLoc) || f.is_char && matches!(f.kind, FieldKind::Array(_)) {
            let Some(d) = f.data(rec, env.endian) else {
                b.extend_from_slice(b"<OVERFLOW>");
                continue;
            };
            if f.is_char {
                printf::string(b, d, &printf::NO_PAD);
                continue;
            }
            for (i, x) in d.iter().enumerate() {
                if i > 0 {
                    b.push(b',');
                }
                printf::hex2(b, *x, false);
            }
            continue;
        }
        if f.is_ptr && crate::util::find_str(&f.ctype, "char", false).is_some() {
            // FILTER_PTR_STRING: the kernel prints `(0xADDR:text)`, reading the
            // text from its memory; we know it only for strings listed in
            // printk_formats. (6.18 prints as ADDR where the field sits in its
            // iterator buffer, which no reader can reproduce; we print the
            // pointer value.)
            let v = read_uint(rec, f.offset, f.size, env.endian).unwrap_or(0);
            b.extend_from_slice(b"(0x");
            printf::pointer_string(b, v, &printf::NO_PAD, env.long_size);
            if let Some(t) = env.printk.and_then(|p| p.lookup(v)) {
                b.push(b':');
                b.extend_from_slice(t.as_bytes());
            }
            b.push(b')');
            continue;
        }
        let v = match read_uint(rec, f.offset, f.size, env.endian) {
            Ok(v) if !matches!(f.kind, FieldKind::Array(_)) || f.size <= 8 => v,
            _ => {
                b.extend_from_slice(b"<INVALID-SIZE>");
                continue;
            }
        };
        // Every form but the 1-byte one ends in ` (%d)`.
        let sv = match f.size {
            1 => {
                if isprint(v as u8) {
                    b.push(b'\'');
                    b.push(v as u8);
                    b.push(b'\'');
                }
                b.push(b'(');
                printf::dec(b, v);
                b.push(b')');
                continue;
            }
            // "0x%x (%d)": an unsigned short promotes to a positive int, an
            // unsigned int prints negative when its top bit is set.
            2 | 4 if !(f.size == 4 && env.long_size == 4) => {
                printf::hex0x(b, v);
                crate::format::sext(v, 4)
            }
            4 | 8 if f.size == env.long_size => {
                printf::symbol(b, env.ksyms, v, true, false);
                crate::format::sext(v, f.size)
            }
            8 => {
                printf::hex0x(b, v);
                v
            }
            _ => {
                b.extend_from_slice(b"<INVALID-SIZE>");
                continue;
            }
        };
        b.extend_from_slice(b" (");
        printf::sdec(b, sv);
        b.push(b')');
    }
}

/// Write bytes through `fmt::Write` exactly: bytes that are not UTF-8
/// (a Latin-1 name, a 1-byte field's 0xff) go as text's raw-byte escapes,
/// which the output edge turns back into the bytes the kernel prints.
pub fn write_bytes(out: &mut dyn fmt::Write, b: &[u8]) -> Result<(), RenderError> {
    crate::text::put_all(out, b).map_err(|_| RenderError { what: "output write failed" })
}

#[cfg(test)]
mod tests;
