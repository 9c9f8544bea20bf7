//! Lexer and parser for the `print fmt:` line: a C string literal followed
//! by comma-separated C argument expressions over `REC->field`.
//!
//! The grammar is the C expression subset TP_printk() arguments use after
//! the kernel's macros are expanded: arithmetic, bit ops, comparisons,
//! logic, ternary, casts, sizeof, indexing, `&`, calls of the tracing
//! helpers (`__print_flags`, `__get_str`, ...) and brace pairs `{ v, "s" }`.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::format::{type_size, Event};
use super::Msg;
use crate::util::one_of;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok<'s> {
    /// value, has an unsigned suffix, has a long/long long suffix (`ll` = 8 bytes)
    Num(u64, bool, u8),
    Str(Vec<u8>),
    Chr(u8),
    /// An identifier: a slice of the print fmt, no copy.
    Id(&'s str),
    /// A punctuator: the character itself, or `MULTI`'s code for the longer
    /// ones (one byte to compare, not a string).
    P(u8),
}

/// The punctuators longer than one character, longest first, 3 bytes each
/// (space-padded); the i-th is `P(0x80 + i)`.
const MULTI: &[u8; 42] = b"<<=>>=...-> << >> <= >= == != && || ++ -- ";
const ARROW: u8 = multi(b"->");
const SHL: u8 = multi(b"<<");
const SHR: u8 = multi(b">>");
const LE: u8 = multi(b"<=");
const GE: u8 = multi(b">=");
const EQ: u8 = multi(b"==");
const NE: u8 = multi(b"!=");
const ANDAND: u8 = multi(b"&&");
const OROR: u8 = multi(b"||");

/// The code of the two-character punctuator `p` in `MULTI`, found when
/// compiling: the codes cannot drift from the table.
const fn multi(p: &[u8; 2]) -> u8 {
    let mut k = 0;
    while k < MULTI.len() {
        if MULTI[k] == p[0] && MULTI[k + 1] == p[1] && MULTI[k + 2] == b' ' {
            return 0x80 + (k / 3) as u8;
        }
        k += 3;
    }
    panic!("not in MULTI")
}

/// The one-character punctuators.
const SINGLE: &[u8] = b"()[]{},?:;.+-*/%<>&|^!~=";

/// Decode the C escape after a backslash at `s[i]` (i points past the `\`).
fn escape(s: &[u8], i: &mut usize) -> u8 {
    let c = s.get(*i).copied().unwrap_or(b'\\');
    *i += 1;
    match c {
        b'n' => b'\n',
        b't' => b'\t',
        b'r' => b'\r',
        b'a' => 7,
        b'b' => 8,
        b'f' => 12,
        b'v' => 11,
        b'e' => 27,
        b'x' => {
            let mut v = 0u32;
            while let Some(d) = s.get(*i).and_then(|&c| (c as char).to_digit(16)) {
                v = v.wrapping_mul(16).wrapping_add(d);
                *i += 1;
            }
            v as u8
        }
        b'0'..=b'7' => {
            let mut v = (c - b'0') as u32;
            let mut n = 1;
            while n < 3 {
                match s.get(*i) {
                    Some(&d @ b'0'..=b'7') => {
                        v = v * 8 + (d - b'0') as u32;
                        *i += 1;
                        n += 1;
                    }
                    _ => break,
                }
            }
            v as u8
        }
        other => other,
    }
}

pub(crate) fn lex(s: &[u8]) -> Result<Vec<Tok<'_>>, (usize, Msg)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' || c == b'\'' {
            // A string or a character literal: the same escapes.
            let start = i;
            i += 1;
            let mut v = Vec::new();
            loop {
                match s.get(i) {
                    None => return Err((start, msg!("unterminated string or char"))),
                    Some(&q) if q == c => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') => {
                        i += 1;
                        v.push(escape(s, &mut i));
                    }
                    Some(&b) => {
                        v.push(b);
                        i += 1;
                    }
                }
            }
            if c == b'\'' {
                match v[..] {
                    [ch] => out.push(Tok::Chr(ch)),
                    _ => return Err((start, msg!("bad char literal"))),
                }
            } else if let Some(Tok::Str(prev)) = out.last_mut() {
                // Adjacent literals concatenate, as in C.
                prev.extend_from_slice(&v);
            } else {
                out.push(Tok::Str(v));
            }
        } else if c.is_ascii_digit() {
            let start = i;
            let (base, mut j) = if c == b'0' && matches!(s.get(i + 1), Some(b'x' | b'X')) {
                (16, i + 2)
            } else if c == b'0' {
                (8, i)
            } else {
                (10, i)
            };
            let mut v: u64 = 0;
            while let Some(d) = s.get(j).and_then(|&c| (c as char).to_digit(base)) {
                v = v.wrapping_mul(base as u64).wrapping_add(d as u64);
                j += 1;
            }
            let (mut uns, mut long) = (false, 0u8);
            while let Some(&c) = s.get(j) {
                match c {
                    b'u' | b'U' => uns = true,
                    b'l' | b'L' => long += 1,
                    _ => break,
                }
                j += 1;
            }
            if s.get(j).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.') {
                return Err((start, msg!("bad number")));
            }
            i = j;
            out.push(Tok::Num(v, uns || base != 10 && v > i64::MAX as u64, long));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < s.len() && (s[i].is_ascii_alphanumeric() || s[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Id(crate::util::word(&s[start..i])));
        } else {
            let mut tok = None;
            let mut k = 0;
            while k < MULTI.len() {
                let p = &MULTI[k..k + 3];
                let n = if p[2] == b' ' { 2 } else { 3 };
                if s[i..].starts_with(&p[..n]) {
                    tok = Some((0x80 + (k / 3) as u8, n));
                    break;
                }
                k += 3;
            }
            let (p, n) = match tok {
                Some(t) => t,
                None if SINGLE.contains(&c) => (c, 1),
                None => return Err((i, msg!("unexpected character"))),
            };
            i += n;
            out.push(Tok::P(p));
        }
    }
    Ok(out)
}

/// A C type in a cast: `size` 0 = as wide as the recording's `long`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ty {
    pub size: u8,
    pub signed: bool,
    pub ptr: bool,
}

impl Ty {
    pub const INT: Ty = Ty { size: 4, signed: true, ptr: false };
    pub const UINT: Ty = Ty { size: 4, signed: false, ptr: false };
    pub const ULONG: Ty = Ty { size: 0, signed: false, ptr: false };
    pub const PTR: Ty = Ty { size: 0, signed: false, ptr: true };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    PrintFlags,
    PrintFlagsU64,
    PrintSymbolic,
    PrintSymbolicU64,
    PrintHex,
    PrintHexStr,
    PrintArray,
    Expect,
    JiffiesToMsecs,
    McEventErrorType,
}

/// What a call in a print fmt's arguments means.
#[derive(Clone, Copy)]
enum Helper {
    /// A field accessor: one field name, the expression it makes.
    Field(fn(usize) -> Expr),
    /// A function, how many arguments it takes, and whether a table of
    /// `{ value, "name" }` entries follows them (flags and symbols).
    Func(Func, u8, bool),
}

/// Every helper a print fmt may call, by name.
const HELPERS: &[(&str, Helper)] = &[
    ("__get_str", Helper::Field(Expr::Dyn)),
    ("__get_rel_str", Helper::Field(Expr::Dyn)),
    ("__get_dynamic_array", Helper::Field(Expr::Dyn)),
    ("__get_rel_dynamic_array", Helper::Field(Expr::Dyn)),
    ("__get_sockaddr", Helper::Field(Expr::Dyn)),
    ("__get_rel_sockaddr", Helper::Field(Expr::Dyn)),
    ("__get_dynamic_array_len", Helper::Field(Expr::DynLen)),
    ("__get_rel_dynamic_array_len", Helper::Field(Expr::DynLen)),
    ("__get_bitmask", Helper::Field(Expr::Bitmask)),
    ("__get_rel_bitmask", Helper::Field(Expr::Bitmask)),
    ("__get_cpumask", Helper::Field(Expr::Bitmask)),
    ("__get_rel_cpumask", Helper::Field(Expr::Bitmask)),
    ("__print_flags", Helper::Func(Func::PrintFlags, 2, true)),
    ("__print_flags_u64", Helper::Func(Func::PrintFlagsU64, 2, true)),
    ("__print_symbolic", Helper::Func(Func::PrintSymbolic, 1, true)),
    ("__print_symbolic_u64", Helper::Func(Func::PrintSymbolicU64, 1, true)),
    ("__print_hex", Helper::Func(Func::PrintHex, 2, false)),
    ("__print_hex_str", Helper::Func(Func::PrintHexStr, 2, false)),
    ("__print_array", Helper::Func(Func::PrintArray, 3, false)),
    ("__builtin_expect", Helper::Func(Func::Expect, 2, false)),
    ("jiffies_to_msecs", Helper::Func(Func::JiffiesToMsecs, 1, false)),
    ("mc_event_error_type", Helper::Func(Func::McEventErrorType, 1, false)),
];

#[derive(Clone, Debug)]
pub(crate) enum Expr {
    /// An integer constant with its C type.
    Num(u64, Ty),
    /// `sizeof(long)` and friends: the recording decides.
    LongSize,
    Str(Vec<u8>),
    /// `REC->field` (index into Event::fields).
    Field(usize),
    /// `&REC->field`: the field's own bytes.
    AddrOf(usize),
    /// `__get_str(f)`, `__get_dynamic_array(f)`, `__get_sockaddr(f)` and the rel variants.
    Dyn(usize),
    /// `__get_dynamic_array_len(f)`.
    DynLen(usize),
    /// `__get_bitmask(f)` / `__get_cpumask(f)`: printed like the kernel's `%*pb`.
    Bitmask(usize),
    Unary(UnOp, Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(Ty, Box<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Call(Func, Vec<Expr>),
    /// `{ a, b }` in a helper's argument list.
    List(Vec<Expr>),
    /// A flag/symbol table entry `{ CONSTANT, "name" }` resolved at compile
    /// time (the value already extended to 64 bits).
    Entry(u64, Vec<u8>),
    /// An identifier the format leaves unresolved (an enum constant without
    /// TRACE_DEFINE_ENUM): looked up in `Env::enums`, an error if evaluation
    /// reaches it and it is not there.
    Unknown(String),
    /// A cast to `struct X *` (X named in the String, `struct page`):
    /// adding to it scales the index by the struct's size.
    StructPtr(String, Box<Expr>),
    /// The index added to a `struct X *`, times the value named by the
    /// String (`sizeof(struct page)`) in `Env::enums`.
    Scale(String, Box<Expr>),
}

pub(crate) struct Parser<'e> {
    toks: Vec<Tok<'e>>,
    pos: usize,
    ev: &'e Event,
    /// Variables of GNU statement expressions (`({ int x = e; ... })`, what
    /// the kernel's min()/max() expand to): name, type, and the position of
    /// the initializer, parsed again where the name is used (a copy of the
    /// tree without a clone of it).
    locals: Vec<(&'e str, Ty, usize)>,
    depth: u32,
    /// The struct of the last `type_name` when it was a `struct X *`.
    struct_ptr: Option<String>,
}

type PResult<T> = Result<T, Msg>;

/// Nesting limit (counting expressions and unary operators); every format of
/// a 6.18 kernel fits in 40 (24 is too few for some).
const MAX_DEPTH: u32 = 64;

/// Binary operators, resolved at compile time so evaluation does not compare strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    OrOr,
    AndAnd,
    Or,
    Xor,
    And,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Shl,
    Shr,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    Not,
    BitNot,
    Neg,
    Deref,
}

/// The C binary operators: (precedence level, loosest first, token, operator).
const BINOPS: [(u8, u8, Op); 18] = [
    (0, OROR, Op::OrOr),
    (1, ANDAND, Op::AndAnd),
    (2, b'|', Op::Or),
    (3, b'^', Op::Xor),
    (4, b'&', Op::And),
    (5, EQ, Op::Eq),
    (5, NE, Op::Ne),
    (6, b'<', Op::Lt),
    (6, b'>', Op::Gt),
    (6, LE, Op::Le),
    (6, GE, Op::Ge),
    (7, SHL, Op::Shl),
    (7, SHR, Op::Shr),
    (8, b'+', Op::Add),
    (8, b'-', Op::Sub),
    (9, b'*', Op::Mul),
    (9, b'/', Op::Div),
    (9, b'%', Op::Rem),
];
const LEVELS: u8 = 10;

impl<'e> Parser<'e> {
    pub fn new(toks: Vec<Tok<'e>>, ev: &'e Event) -> Self {
        Parser { toks, pos: 0, ev, locals: Vec::new(), depth: 0, struct_ptr: None }
    }
    pub fn at_end(&self) -> bool {
        self.pos >= self.toks.len()
    }
    fn peek(&self) -> Option<&Tok<'e>> {
        self.toks.get(self.pos)
    }
    fn peek_at(&self, n: usize) -> Option<&Tok<'e>> {
        self.toks.get(self.pos + n)
    }
    fn is_p(&self, p: u8) -> bool {
        matches!(self.peek(), Some(&Tok::P(q)) if q == p)
    }
    fn eat(&mut self, p: u8) -> bool {
        if self.is_p(p) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn expect(&mut self, p: u8, what: Msg) -> PResult<()> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(what)
        }
    }
    /// The format string: the first token.
    pub fn fmt_string(&mut self) -> PResult<Vec<u8>> {
        match self.toks.get(self.pos) {
            Some(Tok::Str(s)) => {
                self.pos += 1;
                Ok(s.clone())
            }
            _ => Err(msg!("print fmt does not start with a string")),
        }
    }
    /// `, arg, arg ...` to the end.
    pub fn args(&mut self) -> PResult<Vec<Expr>> {
        let mut v = Vec::new();
        while self.eat(b',') {
            v.push(self.expr()?);
        }
        if !self.at_end() {
            return Err(msg!("unexpected token after argument"));
        }
        Ok(v)
    }

    pub fn expr(&mut self) -> PResult<Expr> {
        // A hostile format must not exhaust the stack: real ones nest < 40 deep.
        if self.depth >= MAX_DEPTH {
            return Err(msg!("expression nested too deeply"));
        }
        self.depth += 1;
        let r = self.expr_inner();
        self.depth -= 1;
        r
    }

    fn expr_inner(&mut self) -> PResult<Expr> {
        let c = self.binary(0)?;
        if self.eat(b'?') {
            let a = self.expr()?;
            self.expect(b':', msg!("expected ':' in ?:"))?;
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binary(&mut self, level: u8) -> PResult<Expr> {
        if level >= LEVELS {
            return self.unary();
        }
        let mut l = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(&Tok::P(p)) => BINOPS.iter().find(|o| o.0 == level && o.1 == p).map(|o| o.2),
                _ => None,
            };
            let Some(op) = op else { break };
            self.pos += 1;
            let r = self.binary(level + 1)?;
            l = match l {
                // C's pointer arithmetic: kmem's `(struct page *)vmemmap_base
                // + pfn`; the sum is still a `struct page *` (arm64's
                // vmemmap subtracts an offset first).
                Expr::StructPtr(tag, p) if matches!(op, Op::Add | Op::Sub) => {
                    let scaled = Expr::Scale(alloc::format!("sizeof({tag})"), Box::new(r));
                    Expr::StructPtr(tag, Box::new(Expr::Bin(op, p, Box::new(scaled))))
                }
                l => super::eval::fold(Expr::Bin(op, Box::new(l), Box::new(r))),
            };
        }
        Ok(l)
    }

    /// Is the token at `pos + n` the start of a type name?
    fn type_start(&self, n: usize) -> bool {
        match self.peek_at(n) {
            Some(Tok::Id(s)) => is_type_word(s),
            _ => false,
        }
    }

    /// Parse a type name up to (not including) the closing `)`.
    fn type_name(&mut self) -> PResult<Ty> {
        // The words but const/volatile, space-separated (`unsigned long`).
        let mut name = String::new();
        let mut nwords = 0;
        let mut ptr = false;
        let mut tagged = false;
        loop {
            match self.peek() {
                // A typedef name may only start a type; after that only type
                // words (or a struct tag) continue it: `int x = ...` stops at x.
                Some(&Tok::Id(s)) if !ptr && (nwords == 0 || tagged && nwords == 1 || is_type_word(s)) => {
                    if one_of("struct|union|enum", s) {
                        tagged = true;
                    }
                    if !one_of("const|volatile", s) {
                        if nwords > 0 {
                            name.push(' ');
                        }
                        name.push_str(s);
                        nwords += 1;
                    }
                    self.pos += 1;
                }
                Some(Tok::P(b'*')) => {
                    ptr = true;
                    self.pos += 1;
                }
                Some(Tok::Id(s)) if ptr && one_of("const|volatile", s) => self.pos += 1,
                _ => break,
            }
        }
        if ptr {
            self.struct_ptr = tagged.then_some(name);
            return Ok(Ty::PTR);
        }
        self.struct_ptr = None;
        if tagged {
            if name == "enum" || name.starts_with("enum ") {
                return Ok(Ty::INT);
            }
            return Err(msg!("cast to a struct"));
        }
        let n = name.as_str();
        let signed = !(crate::util::find_str(n, "unsigned", false).is_some() || n.starts_with('u') || n.starts_with("__u") || n.starts_with("__be")
            || n.starts_with("__le")
            || one_of("bool|_Bool|size_t|gfp_t|dma_addr_t|phys_addr_t|pgoff_t|sector_t|dev_t|umode_t|resource_size_t", n));
        let size = if one_of(
            "long|unsigned long|long int|unsigned long int|signed long|size_t|ssize_t|pgoff_t|uintptr_t|intptr_t|ptrdiff_t|time64_t",
            n,
        ) {
            0
        } else if one_of("dma_addr_t|phys_addr_t|resource_size_t", n) {
            8
        } else if n == "void" {
            return Ok(Ty::INT);
        } else {
            match type_size(n, false) {
                0 => return Err(msg!("cast to an unknown type")),
                s => s as u8,
            }
        };
        Ok(Ty { size, signed, ptr: false })
    }

    fn unary(&mut self) -> PResult<Expr> {
        if self.depth >= MAX_DEPTH {
            return Err(msg!("expression nested too deeply"));
        }
        self.depth += 1;
        let r = self.unary_inner();
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            Some(Tok::P(p)) => b"!~-*+&".iter().position(|c| c == p),
            _ => None,
        };
        if let Some(op) = op {
            self.pos += 1;
            let e = self.unary()?;
            const OPS: [UnOp; 4] = [UnOp::Not, UnOp::BitNot, UnOp::Neg, UnOp::Deref];
            return Ok(match (OPS.get(op), e) {
                (Some(&u), e) => super::eval::fold(Expr::Unary(u, Box::new(e))),
                (None, e) if op == 4 => e,
                (None, Expr::Field(i)) => Expr::AddrOf(i),
                _ => return Err(msg!("& of something other than a field")),
            });
        }
        if matches!(self.peek(), Some(&Tok::Id(s)) if s == "sizeof") {
            self.pos += 1;
            self.expect(b'(', msg!("expected ( after sizeof"))?;
            let e = if self.type_start(0) {
                let t = self.type_name()?;
                if t.ptr || t.size == 0 {
                    Expr::LongSize
                } else {
                    Expr::Num(t.size as u64, Ty::ULONG)
                }
            } else {
                match self.expr()? {
                    Expr::Field(i) => Expr::Num(self.ev.fields.get(i).ok_or(msg!("REC used without ->field"))?.size as u64, Ty::ULONG),
                    _ => return Err(msg!("sizeof of an expression")),
                }
            };
            self.expect(b')', msg!("expected ) after sizeof"))?;
            return Ok(e);
        }
        if self.is_p(b'(') && self.type_start(1) {
            self.pos += 1;
            let t = self.type_name()?;
            let tag = self.struct_ptr.take();
            self.expect(b')', msg!("expected ) after cast type"))?;
            let e = self.unary()?;
            let e = super::eval::fold(Expr::Cast(t, Box::new(e)));
            return Ok(match tag {
                Some(tag) => Expr::StructPtr(tag, Box::new(e)),
                None => e,
            });
        }
        self.postfix()
    }

    fn postfix(&mut self) -> PResult<Expr> {
        let mut e = self.primary()?;
        loop {
            // REC (Field(usize::MAX) here) stands only before -> or .
            // (also from parentheses: `(REC)->f`), never before [.
            let rec = matches!(e, Expr::Field(usize::MAX));
            if self.eat(b'[') {
                if rec {
                    return Err(msg!("REC used without ->field"));
                }
                let i = self.expr()?;
                self.expect(b']', msg!("expected ]"))?;
                e = Expr::Index(Box::new(e), Box::new(i));
            } else if self.is_p(ARROW) || self.is_p(b'.') {
                self.pos += 1;
                let name = match self.peek() {
                    Some(&Tok::Id(s)) => s,
                    _ => return Err(msg!("expected field name")),
                };
                self.pos += 1;
                match e {
                    Expr::Field(usize::MAX) => {
                        let i = self.ev.field_index(name).ok_or(msg!("REC-> names no field of this event"))?;
                        e = Expr::Field(i);
                    }
                    _ => return Err(msg!("member access on something other than REC")),
                }
            } else {
                return Ok(e);
            }
        }
    }

    /// `({ TYPE NAME = EXPR; ... EXPR; })` after the `(`: declarations of
    /// scalar locals, then the value. Anything else (calls with side
    /// effects, struct locals) is not an expression over the record.
    fn statement_expr(&mut self) -> PResult<Expr> {
        self.expect(b'{', msg!("expected {"))?;
        let depth = self.locals.len();
        let mut last = None;
        loop {
            if self.eat(b'}') {
                break;
            }
            if self.type_start(0) {
                let t = self.type_name()?;
                let name = match self.peek() {
                    Some(&Tok::Id(s)) => s,
                    _ => return Err(msg!("expected a variable name")),
                };
                self.pos += 1;
                self.expect(b'=', msg!("statement expression variable without initializer"))?;
                let at = self.pos;
                self.expr()?;
                self.expect(b';', msg!("expected ; after declaration"))?;
                self.locals.push((name, t, at));
            } else {
                let e = self.expr()?;
                self.expect(b';', msg!("expected ; in statement expression"))?;
                last = Some(e);
            }
        }
        self.expect(b')', msg!("expected ) after statement expression"))?;
        self.locals.truncate(depth);
        last.ok_or(msg!("statement expression without a value"))
    }

    /// A bare field name as helper argument (`__get_str(name)`).
    fn field_arg(&mut self) -> PResult<usize> {
        let r = match self.peek() {
            Some(Tok::Id(s)) => self.ev.field_index(s).ok_or(msg!("helper names no field of this event")),
            _ => Err(msg!("helper expects a field name")),
        };
        self.pos += 1;
        r
    }

    fn call_args(&mut self) -> PResult<Vec<Expr>> {
        let mut v = Vec::new();
        if self.eat(b')') {
            return Ok(v);
        }
        loop {
            v.push(self.arg()?);
            if self.eat(b')') {
                return Ok(v);
            }
            self.expect(b',', msg!("expected , or ) in call"))?;
        }
    }

    fn arg(&mut self) -> PResult<Expr> {
        if self.eat(b'{') {
            let mut v = Vec::new();
            loop {
                if self.eat(b'}') {
                    break;
                }
                v.push(self.expr()?);
                if self.eat(b'}') {
                    break;
                }
                self.expect(b',', msg!("expected , in { }"))?;
            }
            return Ok(Expr::List(v));
        }
        self.expr()
    }

    fn primary(&mut self) -> PResult<Expr> {
        let t = self.toks.get(self.pos).ok_or(msg!("unexpected end of expression"))?;
        self.pos += 1;
        match *t {
            Tok::Num(v, uns, long) => {
                // C's rules, simplified: int if it fits, else 64 bits.
                let size = match long {
                    0 if v <= i32::MAX as u64 || (uns && v <= u32::MAX as u64) => 4,
                    1 => 0,
                    _ => 8,
                };
                Ok(Expr::Num(v, Ty { size, signed: !uns, ptr: false }))
            }
            Tok::Chr(c) => Ok(Expr::Num(c as i8 as i64 as u64, Ty::INT)),
            Tok::Str(ref s) => Ok(Expr::Str(s.clone())),
            Tok::P(b'(') if self.is_p(b'{') => self.statement_expr(),
            Tok::P(b'(') => {
                let e = self.expr()?;
                self.expect(b')', msg!("expected )"))?;
                Ok(e)
            }
            Tok::Id(name) => {
                if name == "REC" {
                    return Ok(Expr::Field(usize::MAX));
                }
                if let Some(k) = self.locals.iter().rposition(|l| l.0 == name) {
                    // The initializer again, seeing only the locals declared before it.
                    let (_, t, at) = self.locals[k];
                    let later = self.locals.split_off(k);
                    let pos = core::mem::replace(&mut self.pos, at);
                    let e = self.expr();
                    self.pos = pos;
                    self.locals.extend(later);
                    return Ok(Expr::Cast(t, Box::new(e?)));
                }
                if !self.is_p(b'(') {
                    return Ok(match name {
                        "false" | "NULL" => Expr::Num(0, Ty::INT),
                        "true" => Expr::Num(1, Ty::INT),
                        _ => Expr::Unknown(name.into()),
                    });
                }
                self.pos += 1;
                let (_, helper) = *HELPERS.iter().find(|h| h.0 == name).ok_or(msg!("call of an unknown function"))?;
                let (f, want, variadic) = match helper {
                    Helper::Field(make) => {
                        let i = self.field_arg()?;
                        self.expect(b')', msg!("expected ) after field name"))?;
                        return Ok(make(i));
                    }
                    Helper::Func(f, want, variadic) => (f, want as usize, variadic),
                };
                let args = self.call_args()?;
                if args.len() < want || (!variadic && args.len() != want) {
                    return Err(msg!("wrong number of helper arguments"));
                }
                let mut args = args;
                if variadic {
                    for a in &mut args[want..] {
                        match a {
                            Expr::List(l) if l.len() == 2 => {
                                if let (Expr::Num(v, t), Expr::Str(n)) = (&l[0], &l[1]) {
                                    if t.size != 0 && !t.ptr {
                                        let v = if t.signed { crate::format::sext(*v, t.size as usize) } else { *v };
                                        *a = Expr::Entry(v, n.clone());
                                    }
                                }
                            }
                            // `{ }` is an entry with a NULL name: it ends the table.
                            Expr::List(l) if l.is_empty() => {}
                            _ => return Err(msg!("flag/symbol table entry is not { value, name }")),
                        }
                    }
                }
                Ok(Expr::Call(f, args))
            }
            _ => Err(msg!("unexpected token in expression")),
        }
    }
}

/// Words that start a type name in a cast or sizeof.
pub(crate) fn is_type_word(s: &str) -> bool {
    one_of("unsigned|signed|int|long|short|char|void|const|volatile|struct|union|enum|bool|_Bool", s)
        || type_size(s, false) != 0
        || (s.ends_with("_t") && s != "REC")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_literals_and_operators() {
        let t = lex(br#""a\n" "b" , 0x10ULL<<2, 'x', '\'', 017 REC->f"#).unwrap();
        assert_eq!(t[0], Tok::Str(b"a\nb".to_vec()));
        assert_eq!(t[2], Tok::Num(16, true, 2));
        assert_eq!(t[3], Tok::P(SHL));
        assert_eq!(t[6], Tok::Chr(b'x'));
        assert_eq!(t[8], Tok::Chr(b'\''));
        assert_eq!(t[10], Tok::Num(15, false, 0));
        assert_eq!(t[12], Tok::P(ARROW));
        assert!(lex(b"\"abc").is_err());
        assert!(lex(b"12abc").is_err());
        assert!(lex(b"@").is_err());
    }
}
