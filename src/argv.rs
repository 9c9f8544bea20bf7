//! A command-line lexer in lexopt's spirit, on core + alloc (lexopt needs
//! std's OsString): the applet matches `Short(c)`, `Long(name)` and
//! `Value(v)` itself, asks for an option's value with `value()`, and turns
//! anything it does not know into an error with `arg.unexpected()`.
//!
//! Understood: `-abc` clusters, `-o value`, `-ovalue`, `-o=value`,
//! `--opt value`, `--opt=value`, and `--` (everything after it is a value).
//! A value is taken even when it starts with '-'. Arguments are byte
//! strings (argv); values must be UTF-8, option names are read lossily.
//! The error texts are lexopt's.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

pub enum Arg<'a> {
    Short(char),
    Long(&'a str),
    Value(String),
}

pub use Arg::{Long, Short, Value};

/// A usage error: the applets' own error (`Usage`, exit 2), so a `?` on
/// the parser passes it on as it is, with no conversion.
pub type Error = crate::cli::Error;

pub type Result<T> = core::result::Result<T, Error>;

/// An Error from format arguments: one out-of-line copy for every site.
fn err(a: fmt::Arguments<'_>) -> Error {
    crate::cli::usage(a)
}

pub struct Parser {
    args: Vec<Vec<u8>>,
    /// The next argument of `args` not yet looked at.
    next: usize,
    /// What is left of an argument after the option just returned: its
    /// index in `args` and the next byte of a `-abc` cluster, or (`long`)
    /// the `=` of `--opt=value`, the value waiting for `value()`.
    rest: Option<(usize, usize)>,
    long: bool,
    /// The last option as typed (`-o`, `--opt`), for messages.
    last: String,
    /// After `--`.
    done: bool,
}

/// `"text"` with quotes and escapes, as lexopt showed values (without Debug
/// formatting, which `make tiny` compiles out). The escapes are those of
/// `char::escape_debug`, without its Unicode tables (printable,
/// grapheme-extend), which a usage message does not warrant: beyond
/// ASCII, what it escapes is approximated by
/// the C1 controls, the Latin-1 no-break and soft hyphens, the combining
/// diacritical marks and the invisible spaces and marks of U+2000-U+202F
/// and U+FEFF (rarer scripts' marks are shown as they are).
fn quoted(v: &[u8]) -> String {
    let mut s = String::from("\"");
    for c in String::from_utf8_lossy(v).chars() {
        let n = c as u32;
        let short = match c {
            '\0' => '0',
            '\t' => 't',
            '\r' => 'r',
            '\n' => 'n',
            '\\' | '"' | '\'' => c,
            _ => '\0',
        };
        if short != '\0' {
            s.push('\\');
            s.push(short);
        } else if n < 0x20
            || (0x7f..=0xa0).contains(&n)
            || n == 0xad
            || (0x300..0x370).contains(&n)
            || (0x2000..0x2010).contains(&n)
            || (0x2028..0x2030).contains(&n)
            || n == 0xfeff
        {
            s.push_str("\\u{");
            let digits = (32 - n.leading_zeros()).div_ceil(4).max(1);
            for i in (0..digits).rev() {
                s.push(char::from_digit((n >> (i * 4)) & 15, 16).unwrap_or('0'));
            }
            s.push('}');
        } else {
            s.push(c);
        }
    }
    s.push('"');
    s
}

fn utf8(v: Vec<u8>) -> Result<String> {
    String::from_utf8(v).map_err(|e| err(format_args!("argument is not UTF-8: {}", String::from_utf8_lossy(e.as_bytes()))))
}

impl Parser {
    /// The arguments after argv[0].
    pub fn from_args(args: Vec<Vec<u8>>) -> Parser {
        Parser { args, next: 0, rest: None, long: false, last: String::new(), done: false }
    }

    /// The next option or value; `None` at the end. (lexopt's name: not an
    /// Iterator, whose items could not borrow the parser.)
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Arg<'_>>> {
        if let Some((i, at)) = self.rest {
            let a = &self.args[i];
            // `--opt=value`, or `-o=value` past a cluster's first letter: a
            // value the option does not take.
            if self.long || (at < a.len() && a[at] == b'=' && at > 1) {
                self.rest = None;
                return Err(self.unexpected_value(&self.args[i][at + 1..]));
            }
            if at < a.len() {
                // One character, its length told by its first byte; a byte
                // that does not start a valid sequence is U+FFFD.
                let n = match a[at] {
                    0xc0..=0xdf => 2,
                    0xe0..=0xef => 3,
                    0xf0..=0xf7 => 4,
                    _ => 1,
                };
                let c = a.get(at..at + n).and_then(|b| core::str::from_utf8(b).ok()).and_then(|s| s.chars().next());
                let (c, n) = c.map_or(('\u{fffd}', 1), |c| (c, n));
                self.rest = Some((i, at + n));
                self.last.clear();
                self.last.push('-');
                self.last.push(c);
                return Ok(Some(Short(c)));
            }
            self.rest = None;
        }
        let Some(a) = self.args.get_mut(self.next) else { return Ok(None) };
        self.next += 1;
        if self.done {
            return utf8(core::mem::take(a)).map(|v| Some(Value(v)));
        }
        if a == b"--" {
            self.done = true;
            return self.next();
        }
        if a.starts_with(b"--") {
            let eq = a.iter().position(|&b| b == b'=');
            self.last = String::from_utf8_lossy(&a[..eq.unwrap_or(a.len())]).into_owned();
            self.rest = eq.map(|eq| (self.next - 1, eq));
            self.long = true;
            return Ok(Some(Long(self.last.strip_prefix("--").unwrap_or(&self.last))));
        }
        if a.len() > 1 && a[0] == b'-' {
            self.rest = Some((self.next - 1, 1));
            self.long = false;
            return self.next();
        }
        utf8(core::mem::take(a)).map(|v| Some(Value(v)))
    }

    /// The value of the option just returned: the rest of `-ovalue` or
    /// `--opt=value`, else the next argument whatever it looks like.
    pub fn value(&mut self) -> Result<String> {
        if let Some(v) = self.optional_value() {
            return utf8(v);
        }
        match self.args.get_mut(self.next) {
            Some(a) => {
                self.next += 1;
                utf8(core::mem::take(a))
            }
            None => Err(err(format_args!("missing argument for option '{}'", self.last))),
        }
    }

    /// Every argument left, untouched (a command and its arguments).
    pub fn raw_args(&mut self) -> Result<Vec<String>> {
        if let Some(v) = self.optional_value() {
            return Err(self.unexpected_value(&v));
        }
        // A plain loop: the into_iter/map/collect into a Result was an
        // in-place-collect instantiation of its own.
        let mut v = Vec::new();
        while let Some(a) = self.args.get_mut(self.next) {
            self.next += 1;
            v.push(utf8(core::mem::take(a))?);
        }
        Ok(v)
    }

    /// The last option as typed (`-o`, `--opt`, without a `=value`): the
    /// `Short` or `Long` just returned, for a table of options written that way.
    pub fn last(&self) -> &str {
        &self.last
    }

    fn optional_value(&mut self) -> Option<Vec<u8>> {
        let (i, mut at) = self.rest.take()?;
        let a = &self.args[i];
        if !self.long && at >= a.len() {
            return None;
        }
        // Past the `=` of `--opt=value`, `-o=value`.
        if a[at] == b'=' {
            at += 1;
        }
        Some(a[at..].to_vec())
    }

    fn unexpected_value(&self, v: &[u8]) -> Error {
        err(format_args!("unexpected argument for option '{}': {}", self.last, quoted(v)))
    }
}

/// A row of an applet's option table: the key (the short option's letter,
/// or a byte below b'A' for an option that has only a long name), the long
/// name ("" for none), and whether a value follows.
pub type Opt = (u8, &'static str, bool);

/// The row of `table` that names `arg`.
pub fn find(table: &'static [Opt], arg: &Arg<'_>) -> Option<&'static Opt> {
    table.iter().find(|o| match arg {
        Short(c) => o.0 >= b'A' && *c == o.0 as char,
        Long(l) => !o.1.is_empty() && o.1 == *l,
        Value(_) => false,
    })
}

impl Arg<'_> {
    /// The error for an argument the applet does not take.
    pub fn unexpected(self) -> Error {
        match self {
            Short(c) => err(format_args!("invalid option '-{c}'")),
            Long(l) => err(format_args!("invalid option '--{l}'")),
            Value(v) => err(format_args!("unexpected argument {}", quoted(v.as_bytes()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec;

    fn p(v: &[&str]) -> Parser {
        Parser::from_args(v.iter().map(|s| s.as_bytes().to_vec()).collect())
    }

    /// Every item as text: `-c`, `--long`, `=value`, `!error`.
    fn lex(v: &[&str], takes: &[&str]) -> Vec<String> {
        let mut p = p(v);
        let mut out = Vec::new();
        loop {
            let (name, wants) = match p.next() {
                Ok(None) => break,
                Ok(Some(Short(c))) => (format!("-{c}"), takes.contains(&&*format!("-{c}"))),
                Ok(Some(Long(l))) => (format!("--{l}"), takes.contains(&&*format!("--{l}"))),
                Ok(Some(Value(v))) => (format!("={v}"), false),
                Err(e) => (format!("!{e}"), false),
            };
            out.push(name);
            if wants {
                out.push(match p.value() {
                    Ok(v) => format!("={v}"),
                    Err(e) => format!("!{e}"),
                });
            }
        }
        out
    }

    #[test]
    fn clusters_values_and_dashes() {
        assert_eq!(lex(&["-abc", "x"], &[]), ["-a", "-b", "-c", "=x"]);
        assert_eq!(lex(&["-ab", "x"], &["-b"]), ["-a", "-b", "=x"]);
        assert_eq!(lex(&["-obar", "-o=baz", "-o", "-q"], &["-o"]), ["-o", "=bar", "-o", "=baz", "-o", "=-q"]);
        assert_eq!(lex(&["-aobar"], &["-o"]), ["-a", "-o", "=bar"]);
        assert_eq!(lex(&["--out=f", "--out", "g", "--out="], &["--out"]), ["--out", "=f", "--out", "=g", "--out", "="]);
        assert_eq!(lex(&["a", "--", "-b", "--c", "--"], &[]), ["=a", "=-b", "=--c", "=--"]);
        assert_eq!(lex(&["-", "-o", "--"], &["-o"]), ["=-", "-o", "=--"]);
        assert_eq!(lex(&["-é"], &[]), ["-é"]);
        let mut q = Parser::from_args(vec![b"-a\xffb\xe2\x82".to_vec(), b"-\xf0\x9f\x98\x80".to_vec()]);
        let mut shorts = Vec::new();
        while let Ok(Some(Short(c))) = q.next() {
            shorts.push(c);
        }
        assert_eq!(shorts, ['a', '\u{fffd}', 'b', '\u{fffd}', '\u{fffd}', '😀']);
    }

    #[test]
    fn lexopt_error_texts() {
        assert_eq!(lex(&["--once=1", "x"], &[]), ["--once", "!unexpected argument for option '--once': \"1\"", "=x"]);
        assert_eq!(lex(&["-q=1"], &[]), ["-q", "!unexpected argument for option '-q': \"1\""]);
        assert_eq!(lex(&["-B"], &["-B"]), ["-B", "!missing argument for option '-B'"]);
        assert_eq!(lex(&["--cpu"], &["--cpu"]), ["--cpu", "!missing argument for option '--cpu'"]);
        assert_eq!(Short('x').unexpected().to_string(), "invalid option '-x'");
        assert_eq!(Long("bogus").unexpected().to_string(), "invalid option '--bogus'");
        assert_eq!(Value("a\"b\n".to_string()).unexpected().to_string(), "unexpected argument \"a\\\"b\\n\"");
        // The escapes of char::escape_debug.
        for v in ["\0\t\r\n\\'\"\x01\x1b\x7f", "é\u{80}\u{9f}\u{a0}\u{ad}e\u{301}\u{36f}\u{370}ü€\u{fffd}", "a\u{2000}\u{200b}\u{200f}\u{2010}\u{2028}\u{202f}\u{2030}\u{feff}"] {
            let want: String = v.chars().flat_map(char::escape_debug).collect();
            assert_eq!(quoted(v.as_bytes()), std::format!("\"{want}\""));
        }
        let mut q = Parser::from_args(vec![b"\xff".to_vec()]);
        assert_eq!(q.next().err().map(|e| e.to_string()), Some("argument is not UTF-8: \u{fffd}".to_string()));
    }

    #[test]
    fn table_lookup() {
        const T: &[Opt] = &[(b'o', "out", true), (1, "long-only", false), (b'q', "", false)];
        assert_eq!(find(T, &Short('o')).map(|o| o.0), Some(b'o'));
        assert_eq!(find(T, &Long("out")).map(|o| o.0), Some(b'o'));
        assert_eq!(find(T, &Long("long-only")).map(|o| o.0), Some(1));
        assert!(find(T, &Short('\u{1}')).is_none());
        assert!(find(T, &Long("")).is_none());
        assert!(find(T, &Long("q")).is_none());
        assert!(find(T, &Value("o".to_string())).is_none());
    }

    #[test]
    fn raw_rest() {
        let mut q = p(&["-q", "ls", "-l", "--", "x"]);
        assert!(matches!(q.next(), Ok(Some(Short('q')))));
        assert!(matches!(q.next(), Ok(Some(Value(ref v))) if v == "ls"));
        assert_eq!(q.raw_args().ok().unwrap(), ["-l", "--", "x"]);
        assert!(matches!(q.next(), Ok(None)));
        let mut q = p(&["--x=1"]);
        assert!(matches!(q.next(), Ok(Some(Long("x")))));
        assert!(q.raw_args().is_err());
    }
}
