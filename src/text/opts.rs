//! The tracer options that change the text, by the names tracefs gives them
//! in `options/` and `trace_options`. The kernel keeps two sets: the trace
//! array's flags (`print-parent`, `sym-offset`, ...) and the function_graph
//! tracer's own (`funcgraph-*`); one table serves both so `-O NAME` and
//! `-O noNAME` work for either, as `echo noNAME > trace_options` does.

/// Bits of [`Opts::flags`] (the trace array's flags).
pub const PRINT_PARENT: u32 = 1 << 0;
pub const SYM_OFFSET: u32 = 1 << 1;
pub const SYM_ADDR: u32 = 1 << 2;
pub const VERBOSE: u32 = 1 << 3;
pub const FIELDS: u32 = 1 << 4;
pub const ANNOTATE: u32 = 1 << 5;
pub const PRINTK_MSGONLY: u32 = 1 << 6;
pub const CONTEXT_INFO: u32 = 1 << 7;
pub const LATENCY_FMT: u32 = 1 << 8;
pub const RECORD_TGID: u32 = 1 << 9;
pub const IRQ_INFO: u32 = 1 << 10;
pub const HASH_PTR: u32 = 1 << 11;
pub const PRINTK: u32 = 1 << 12;
pub const RAW: u32 = 1 << 13;
pub const HEX: u32 = 1 << 14;
pub const BIN: u32 = 1 << 15;
/// Not a kernel option (no name in the table): ftcat --raw's "every field",
/// which also prints ftrace's own records (print, function, ...) by their
/// formats where the kernel's `fields` says `UNKNOWN TYPE`.
pub const ALL_FIELDS: u32 = 1 << 16;

/// Bits of [`Opts::graph`] (function_graph's tracer flags).
pub const G_OVERRUN: u32 = 1 << 0;
pub const G_CPU: u32 = 1 << 1;
pub const G_OVERHEAD: u32 = 1 << 2;
pub const G_PROC: u32 = 1 << 3;
pub const G_DURATION: u32 = 1 << 4;
pub const G_ABS_TIME: u32 = 1 << 5;
pub const G_IRQS: u32 = 1 << 6;
pub const G_TAIL: u32 = 1 << 7;
pub const G_RETVAL: u32 = 1 << 8;
pub const G_RETVAL_HEX: u32 = 1 << 9;
pub const G_RETADDR: u32 = 1 << 10;

/// Which of the kernel's two flag sets an option belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Set {
    /// The trace array's flags: [`Opts::flags`].
    Trace,
    /// The function_graph tracer's: [`Opts::graph`].
    Graph,
}

/// Every tracefs option that changes the text, by its name in `options/`.
/// Options that do not change the text are [`IGNORED`].
const OPTIONS: &[(&str, Set, u32)] = &[
    ("print-parent", Set::Trace, PRINT_PARENT),
    ("sym-offset", Set::Trace, SYM_OFFSET),
    ("sym-addr", Set::Trace, SYM_ADDR),
    ("verbose", Set::Trace, VERBOSE),
    ("fields", Set::Trace, FIELDS),
    ("annotate", Set::Trace, ANNOTATE),
    ("printk-msg-only", Set::Trace, PRINTK_MSGONLY),
    ("context-info", Set::Trace, CONTEXT_INFO),
    ("latency-format", Set::Trace, LATENCY_FMT),
    ("record-tgid", Set::Trace, RECORD_TGID),
    ("irq-info", Set::Trace, IRQ_INFO),
    ("hash-ptr", Set::Trace, HASH_PTR),
    ("trace_printk", Set::Trace, PRINTK),
    ("raw", Set::Trace, RAW),
    ("hex", Set::Trace, HEX),
    ("bin", Set::Trace, BIN),
    ("funcgraph-overrun", Set::Graph, G_OVERRUN),
    ("funcgraph-cpu", Set::Graph, G_CPU),
    ("funcgraph-overhead", Set::Graph, G_OVERHEAD),
    ("funcgraph-proc", Set::Graph, G_PROC),
    ("funcgraph-duration", Set::Graph, G_DURATION),
    ("funcgraph-abstime", Set::Graph, G_ABS_TIME),
    ("funcgraph-irqs", Set::Graph, G_IRQS),
    ("funcgraph-tail", Set::Graph, G_TAIL),
    ("funcgraph-retval", Set::Graph, G_RETVAL),
    ("funcgraph-retval-hex", Set::Graph, G_RETVAL_HEX),
    ("funcgraph-retaddr", Set::Graph, G_RETADDR),
];

/// Options known to tracefs that do not change the text: accepted so a
/// recording's whole `options/` directory can be replayed.
const IGNORED: &[&str] = &[
    "block",
    "userstacktrace",
    "sym-userobj",
    "record-cmd",
    "overwrite",
    "disable_on_free",
    "markers",
    "event-fork",
    "pause-on-trace",
    "function-trace",
    "function-fork",
    "display-graph",
    "stacktrace",
    "func_stack_trace",
    "func-no-repeats",
    "trace_printk_dest",
    "copy_trace_marker",
    "test_nop_accept",
    "test_nop_refuse",
    "sleep-time",
    "graph-time",
    "funcgraph-args",
    "func-args",
];

/// The option `name`: its flag set and bit.
fn lookup(name: &str) -> Option<(Set, u32)> {
    OPTIONS.iter().find(|o| o.0 == name).map(|o| (o.1, o.2))
}

fn ignored(name: &str) -> bool {
    IGNORED.contains(&name)
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Opts {
    pub flags: u32,
    pub graph: u32,
    /// funcgraph-retval as recorded; `None` = not known, print return values
    /// whenever the funcgraph_exit format carries them.
    pub retval_known: bool,
}

impl Default for Opts {
    /// The kernel's defaults (TRACE_DEFAULT_FLAGS and the graph tracer's).
    fn default() -> Self {
        Opts {
            flags: PRINT_PARENT | ANNOTATE | CONTEXT_INFO | IRQ_INFO | HASH_PTR | PRINTK,
            graph: G_CPU | G_OVERHEAD | G_DURATION | G_IRQS,
            retval_known: false,
        }
    }
}

impl Opts {
    #[inline]
    pub fn has(&self, bit: u32) -> bool {
        self.flags & bit != 0
    }
    #[inline]
    pub fn g(&self, bit: u32) -> bool {
        self.graph & bit != 0
    }

    /// Apply `NAME` or `noNAME` (also `NAME=0|1`). Err(()) for a name tracefs
    /// does not have.
    pub fn set(&mut self, spec: &str) -> Result<(), ()> {
        let (name, on) = match spec.split_once('=') {
            Some((n, v)) => (n, v.trim_ascii() != "0"),
            None => match spec.strip_prefix("no") {
                Some(n) if lookup(n).is_some() || ignored(n) => (n, false),
                _ => (spec, true),
            },
        };
        match lookup(name) {
            Some((set, bit)) => {
                let graph = set == Set::Graph;
                let set = if graph { &mut self.graph } else { &mut self.flags };
                if on {
                    *set |= bit
                } else {
                    *set &= !bit
                }
                if graph && bit == G_RETVAL {
                    self.retval_known = true;
                }
                Ok(())
            }
            None if ignored(name) => Ok(()),
            None => Err(()),
        }
    }
}

impl Opts {
    /// Apply the words of a `trace_options` file (or of a recording's
    /// `options=`), ignoring names this table does not have.
    pub fn set_all(&mut self, words: &str) {
        for w in words.split_ascii_whitespace() {
            let _ = self.set(w);
        }
    }
}

/// A value of ftbox's recorded tracer state (`key=value` lines).
pub fn state_get<'a>(state: &'a str, key: &str) -> Option<&'a str> {
    state.lines().find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('='))).map(str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_state() {
        let st = "tracer=function_graph\noptions=noprint-parent latency-format hex funcgraph-proc nosuch\nmodel=PREEMPT(full)\n";
        let mut o = Opts::default();
        o.set_all(state_get(st, "options").unwrap());
        assert!(!o.has(PRINT_PARENT) && o.has(LATENCY_FMT) && o.has(HEX) && o.g(G_PROC));
        assert_eq!(state_get(st, "tracer"), Some("function_graph"));
        assert_eq!(state_get(st, "model"), Some("PREEMPT(full)"));
        assert_eq!(state_get(st, "nothing"), None);
    }

    /// Names map to their own bits.
    #[test]
    fn names_and_bits() {
        let bits = [
            (Set::Trace, PRINT_PARENT, "print-parent"),
            (Set::Trace, PRINTK_MSGONLY, "printk-msg-only"),
            (Set::Trace, BIN, "bin"),
            (Set::Graph, G_OVERRUN, "funcgraph-overrun"),
            (Set::Graph, G_RETVAL_HEX, "funcgraph-retval-hex"),
            (Set::Graph, G_RETADDR, "funcgraph-retaddr"),
        ];
        for (set, bit, name) in bits {
            assert_eq!(lookup(name), Some((set, bit)), "{name}");
        }
        // Each bit of each set has exactly one name.
        for set in [Set::Trace, Set::Graph] {
            let mut seen = 0;
            for o in OPTIONS.iter().filter(|o| o.1 == set) {
                assert_eq!(seen & o.2, 0, "{}", o.0);
                seen |= o.2;
            }
        }
        assert_eq!(lookup("func-args"), None);
    }

    #[test]
    fn set_and_clear() {
        let mut o = Opts::default();
        assert!(o.has(PRINT_PARENT));
        o.set("noprint-parent").unwrap();
        assert!(!o.has(PRINT_PARENT));
        o.set("funcgraph-tail").unwrap();
        assert!(o.g(G_TAIL));
        o.set("funcgraph-tail=0").unwrap();
        assert!(!o.g(G_TAIL));
        o.set("nooverwrite").unwrap();
        assert!(o.set("bogus").is_err());
        assert!(o.set("nobogus").is_err());
        o.set("funcgraph-retval=0").unwrap();
        assert!(o.retval_known && !o.g(G_RETVAL));
    }
}
