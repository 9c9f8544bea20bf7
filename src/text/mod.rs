//! Text output. `kernel`: exactly what the kernel's own `trace` file prints
//! for the same ring buffer (header block, context columns, the tracers' own
//! printers, syscalls, function_graph). `tracecmd`: `trace-cmd report`'s.
//!
//! Use (see decode/mod.rs): classify the recording's events once
//! ([`Classes::new`]), build an [`Env`] ([`env::Decoder`] over the format,
//! printfmt and ksyms modules), make a [`Kernel`] with the recording's
//! [`Opts`], clock (`set_clock`), kernel release (`set_release`: printers
//! changed between versions) and tracer (`set_tracer`), print the
//! [`Kernel::header`], then feed records in merged order to [`Kernel::line`]
//! with the next record *of the same CPU* (function_graph folds an entry and
//! its exit into one line, and reports when it used it), and lost-event
//! markers to [`Kernel::lost`].
//!
//! A record never prints more than the kernel would: the kernel renders
//! each record into a trace_seq of a page (8 KiB less its header since 6.8,
//! [`seq_size`]) and marks a record that overflowed it with
//! `[LINE TOO BIG]`; both printers stop there the same way ([`Seq`]), so a
//! corrupt depth, width or length costs a line, not gigabytes.
//!
//! Decoders write into `core::fmt::Write`, which only takes `str`. Ring
//! buffer text (trace_marker, comm) is bytes, not always UTF-8: a byte that
//! is not part of valid UTF-8 goes out as the private-use char
//! U+F700+byte, and the writer at the edge ([`raw_byte`];
//! `decode::text_out`) turns it back into the byte, so the output stays
//! byte-identical to the kernel's.

pub mod cmdlines;
pub mod env;
pub mod funcgraph;
pub mod kernel;
pub mod opts;
pub mod syscalls;
#[cfg(feature = "trace-cmd-style")]
pub mod tracecmd;
#[cfg(test)]
mod tests;

use core::fmt::{self, Write};

pub use cmdlines::Cmdlines;
pub use kernel::{Classes, HeaderInfo, Kernel};
pub use opts::Opts;

/// One record of the merged stream: the CPU it came from, its absolute
/// timestamp in trace-clock units, and the event payload (starting at
/// `common_type`; may carry the ring's up-to-3-byte padding at the end).
#[derive(Clone, Copy)]
pub struct Rec<'a> {
    pub cpu: u32,
    pub ts: u64,
    pub data: &'a [u8],
}

/// A kernel symbol for an address: what `kallsyms_lookup()` answers.
#[derive(Clone, Copy)]
pub struct Sym<'a> {
    pub name: &'a str,
    /// Start address of the symbol.
    pub addr: u64,
    /// Size as kallsyms reckons it (distance to the next symbol); 0 if unknown.
    pub size: u64,
    pub module: Option<&'a str>,
}

/// How the generic (print fmt) rendering of one record went.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Rendered {
    /// Printed with the event's print fmt.
    Ok,
    /// Printed with the event's print fmt, some value the recording does
    /// not hold as a stand-in (see `printfmt::Fidelity`; counted in
    /// `ftcat --stat`).
    Partial,
    /// The interpreter could not evaluate it; `name=value` fields were
    /// printed instead (counted in `ftcat --stat`).
    Fallback,
}

/// What the printers need from the rest of the decoding core: symbols, the
/// print fmt interpreter and trace_printk formats. ftcat implements it over
/// the `format`/`printfmt`/`ksyms` modules; tests implement it by hand.
pub trait Env {
    fn sym(&self, addr: u64) -> Option<Sym<'_>>;
    /// The name of the symbol containing `addr` when it is all ASCII, alone:
    /// what the function tracer's lines print, asked twice a record.
    /// (Only the fast lines ask it: the board build has no such method.)
    #[cfg(feature = "fast-print")]
    fn ascii_name(&self, addr: u64) -> Option<&str> {
        self.sym(addr).map(|s| s.name).filter(|n| n.is_ascii())
    }
    /// [`Env::ascii_name`] of a core kernel symbol (no module): what `%ps`
    /// prints as it is. (For the fast graph lines alone.)
    #[cfg(feature = "fast-print")]
    fn core_ascii_name(&self, addr: u64) -> Option<&str> {
        self.sym(addr).filter(|s| s.module.is_none()).map(|s| s.name).filter(|n| n.is_ascii())
    }
    /// Render the body of event `id` (what follows `name: `) with its
    /// print fmt, newline not included.
    fn render(&self, id: u16, data: &[u8], out: &mut dyn Write) -> Result<Rendered, fmt::Error>;
    /// [`Env::render`]'s text printed into `out` as the bytes the print
    /// fmt gives (no raw-byte escapes), for a printer that makes its line
    /// in an output buffer's free space ([`crate::printfmt::Out::fits`]: whether it fit);
    /// None (nothing printed) where `render` prints fields instead, or
    /// this environment cannot.
    fn render_bytes(&self, _id: u16, _data: &[u8], _out: &mut crate::printfmt::Out<'_>) -> Option<Rendered> {
        None
    }
    /// trace_printk's binary form: `fmt` is the kernel address of the format
    /// string (printk_formats), `args` the packed argument words.
    fn bprint(&self, fmt_addr: u64, args: &[u8], out: &mut dyn Write) -> Result<Rendered, fmt::Error>;
    /// A string in kernel memory named by address (bputs, `const char *`
    /// fields): known only through printk_formats.
    fn kstr(&self, addr: u64) -> Option<&str>;
    /// The event's own fields as the `fields` option prints them (after
    /// `name: `); false (nothing printed) when this environment has no
    /// such printer: the `fields` line then ends after `name: `.
    fn fields(&self, _id: u16, _data: &[u8], _out: &mut dyn Write) -> Result<bool, fmt::Error> {
        Ok(false)
    }
    /// [__irqentry_text_start, __irqentry_text_end) of the traced kernel
    /// (where function_graph draws irq arrows); (0, 0) when unknown.
    fn irq_text(&self) -> (u64, u64) {
        (0, 0)
    }
}

/// Private-use base for bytes that are not valid UTF-8 (see module docs).
pub const RAW_BASE: u32 = 0xF700;

/// Write bytes as the kernel would (`%s` of a buffer), up to the first NUL.
pub fn put_bytes(out: &mut dyn Write, b: &[u8]) -> fmt::Result {
    let b = match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    };
    put_all(out, b)
}

/// Like [`put_bytes`] but NULs included (they are not string ends here).
pub fn put_all(out: &mut dyn Write, mut b: &[u8]) -> fmt::Result {
    while !b.is_empty() {
        // A char of the escape range itself (UTF-8 `EF 9E xx`/`EF 9F xx`,
        // binary output has them by chance) would come back as one byte:
        // its lead bytes go out as escapes, and so does its then stray
        // continuation byte.
        let cut = if b.contains(&0xef) { b.windows(2).position(|w| w[0] == 0xef && w[1] & 0xfe == 0x9e) } else { None };
        let text = match cut {
            Some(n) => &b[..n],
            None => b,
        };
        match core::str::from_utf8(text) {
            Ok(s) => {
                out.write_str(s)?;
                b = &b[text.len()..];
                if cut.is_some() {
                    escape(out, &b[..2])?;
                    b = &b[2..];
                }
            }
            Err(e) => {
                let good = e.valid_up_to();
                // SAFETY-free: from_utf8 vouched for the first `good` bytes.
                if let Ok(s) = core::str::from_utf8(&b[..good]) {
                    out.write_str(s)?;
                }
                let bad = e.error_len().unwrap_or(text.len() - good);
                escape(out, &b[good..good + bad])?;
                b = &b[good + bad..];
            }
        }
    }
    Ok(())
}

fn escape(out: &mut dyn Write, b: &[u8]) -> fmt::Result {
    for &c in b {
        out.write_char(char::from_u32(RAW_BASE + c as u32).unwrap_or('?'))?;
    }
    Ok(())
}

/// The byte a char stands for at the std edge: Some(byte) for the
/// private-use escapes of [`put_all`], None for an ordinary char.
#[inline]
pub fn raw_byte(c: char) -> Option<u8> {
    let v = c as u32;
    if (RAW_BASE + 0x80..=RAW_BASE + 0xff).contains(&v) {
        Some((v - RAW_BASE) as u8)
    } else {
        None
    }
}

/// Spaces, without a format string. At most [`SEQ_SIZE_MAX`]: more could
/// never fit a line (see [`Seq`]), and a depth or width read from a corrupt
/// record must not make us write gigabytes of them.
pub fn pad(out: &mut dyn Write, n: usize) -> fmt::Result {
    const SP: &str = "                                                                ";
    let mut n = n.min(SEQ_SIZE_MAX);
    while n > 0 {
        let k = n.min(SP.len());
        // All ASCII: `get` never misses a character boundary.
        out.write_str(SP.get(..k).unwrap_or(SP))?;
        n -= k;
    }
    Ok(())
}

/// The bytes the kernel renders one record into: print_trace_line() writes
/// into the iterator's trace_seq, a page (`char buffer[PAGE_SIZE]`) until
/// 6.7, then TRACE_SEQ_BUFFER_SIZE, 8 KiB less the trace_seq's own fields
/// (a seq_buf of three words, `readpos`, `full`). `kver` 0 (unknown) means
/// the newest kernels; `long` is the recording's sizeof(long).
pub fn seq_size(kver: u32, long: usize) -> usize {
    if kver != 0 && kver < 6008 {
        4096
    } else {
        8192 - (3 * long + long + 4)
    }
}

/// The largest [`seq_size`].
pub const SEQ_SIZE_MAX: usize = 8192;

/// What s_show() prints after a record whose text overflowed its trace_seq
/// (6.7+, and the stable kernels it went back to).
pub const LINE_TOO_BIG: &str = "[LINE TOO BIG]\n";

/// The kernel's trace_seq around one record's text: writes go through to
/// `out` while they fit. A write that does not fit is dropped whole and
/// marks the sequence full, after which everything is dropped
/// (trace_seq_printf()/trace_seq_puts() write all or nothing), except that
/// a run of spaces fills up to the end, as the byte-by-byte
/// trace_seq_putc() loops that indent lines do. [`Seq::finish`] then adds
/// s_show()'s `[LINE TOO BIG]` line.
///
/// One difference, on purpose: the kernel puts that marker only if it
/// still fits, so a record that filled its trace_seq (a deep indentation
/// does) ends without a newline and the next record's text runs on. Here
/// the marker's room is kept free, so an overflowed record always ends its
/// line with it: a record's text is at most `size` bytes either way, and
/// one of more than `size` - 15 bytes counts as overflowed.
pub struct Seq<'w> {
    out: &'w mut dyn Write,
    left: usize,
    full: bool,
}

impl<'w> Seq<'w> {
    pub fn new(out: &'w mut dyn Write, size: usize) -> Seq<'w> {
        Seq { out, left: size.saturating_sub(LINE_TOO_BIG.len()), full: false }
    }

    /// Did the record's text overflow?
    pub fn overflowed(&self) -> bool {
        self.full
    }

    /// s_show() after an overflow: `[LINE TOO BIG]` on a line of its own.
    pub fn finish(self) -> fmt::Result {
        if self.full {
            self.out.write_str(LINE_TOO_BIG)?;
        }
        Ok(())
    }
}

impl Write for Seq<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.full {
            return Ok(());
        }
        if s.len() <= self.left {
            self.left -= s.len();
            return self.out.write_str(s);
        }
        self.full = true;
        if s.bytes().all(|c| c == b' ') {
            // All ASCII: `get` never misses a character boundary.
            let fill = s.get(..self.left).unwrap_or("");
            self.left = 0;
            return self.out.write_str(fill);
        }
        Ok(())
    }
}

/// A header legend: each line of `text` after `#` and `n` spaces.
pub(crate) fn legend(out: &mut dyn Write, text: &str, n: usize) -> fmt::Result {
    for l in text.split_inclusive('\n') {
        out.write_char('#')?;
        pad(out, n)?;
        out.write_str(l)?;
    }
    Ok(())
}

/// Header rows of column titles, written as they appear: `@` ends a row,
/// `;` a piece, and piece k of every row is printed when bit k of `on` is
/// set (the optional columns line up in both rows).
pub(crate) fn rows(out: &mut dyn Write, text: &str, on: u32) -> fmt::Result {
    for row in text.split('@') {
        for (k, t) in row.split(';').enumerate() {
            if on >> k & 1 != 0 {
                out.write_str(t)?;
            }
        }
    }
    Ok(())
}

/// Does a clock count nanoseconds (TRACE_FILE_TIME_IN_NS)? Counter-style
/// clocks print raw counts instead of `secs.usecs`.
pub fn clock_in_ns(clock: &str) -> bool {
    !matches!(clock, "counter" | "uptime" | "x86-tsc" | "ppc-tb" | "arm64-cntvct" | "arch-counter")
}

/// `ns2usecs()` rounds to the nearest microsecond before splitting.
#[inline]
pub fn ns2usecs(ns: u64) -> u64 {
    ns.wrapping_add(500) / 1000
}
