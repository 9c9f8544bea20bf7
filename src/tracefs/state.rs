//! Reading and restoring tracefs state: option defaults, trigger removal,
//! clocks, CPUs. Shared by `ftctl status/reset` and by `ftrec` when it puts
//! things back the way it found them.

use super::{Result, Tracefs};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Options that are on in a freshly booted kernel. Everything in `options/`
/// not listed here defaults to off. From the kernel's TRACE_DEFAULT_FLAGS
/// (kernel/trace/trace.c, with FUNCTION_DEFAULT_FLAGS = function-trace) and
/// the function_graph tracer's default tracer_flags
/// (kernel/trace/trace_functions_graph.c).
///
/// Space-separated words rather than a slice of &str: 16 bytes of pointer
/// and length per name saved.
const DEFAULT_ON: &str = "annotate context-info copy_trace_marker function-trace hash-ptr irq-info markers \
    overwrite print-parent record-cmd trace_printk trace_printk_dest \
    funcgraph-cpu funcgraph-duration funcgraph-irqs funcgraph-overhead graph-time sleep-time";

/// Flags a new instance starts with cleared (ZEROED_TRACE_FLAGS): printk
/// output and trace_marker copies belong to the top level only.
const INSTANCE_OFF: &str = "copy_trace_marker trace_printk_dest event-fork function-fork";

/// Is `name` one of the words of `list`?
pub fn listed(list: &str, name: &str) -> bool {
    list.split_ascii_whitespace().any(|w| w == name)
}

/// The default value of option `name` at the top level or in an instance.
pub fn option_default(name: &str, instance: bool) -> bool {
    listed(DEFAULT_ON, name) && !(instance && listed(INSTANCE_OFF, name))
}

/// Every option in `options/` with its current value, sorted by name.
pub fn options(t: &Tracefs) -> Result<Vec<(String, bool)>> {
    let mut out = Vec::new();
    // Listings are walked by reference: a loop that moves out of a Vec
    // compiles to its own iterator and drop code at each site.
    for (name, is_dir) in &t.list_dir("options")? {
        if *is_dir {
            continue;
        }
        let v = t.read_str(&format!("options/{name}"))?;
        out.push((name.clone(), v.trim_ascii() == "1"));
    }
    Ok(out)
}

/// The selected clock in a `trace_clock` listing (`local [global] ...`).
pub fn current_clock(list: &str) -> &str {
    crate::ftrace::selected_clock(list).unwrap_or("")
}

/// The clock a `trace_clock` text names: the selected `[clock]`; a text
/// with none selected, its first word, else "local" (the kernel's default).
pub fn clock_name(list: &str) -> String {
    String::from(match current_clock(list) {
        "" => list.split_ascii_whitespace().next().unwrap_or("local"),
        c => c,
    })
}

/// All names in a listing such as `trace_clock` (`local [global] ...`) or
/// `available_tracers`, brackets removed, separated by single spaces.
pub fn names(list: &str) -> String {
    let mut out = String::new();
    for c in list.split_ascii_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(unbracket(c));
    }
    out
}

/// `name` without the brackets around a selected entry (`[global]`):
/// trimmed by hand, not by a trim_matches copy per pattern.
pub fn unbracket(name: &str) -> &str {
    let mut s = name;
    while let Some(rest) = s.strip_prefix('[') {
        s = rest;
    }
    while let Some(rest) = s.strip_suffix(']') {
        s = rest;
    }
    s
}

/// The trigger lines of an event's `trigger` file (its `#` help header dropped).
pub fn trigger_lines(text: &str) -> Vec<&str> {
    let mut v = Vec::new();
    for l in text.lines() {
        let l = l.trim_ascii_end();
        if !l.is_empty() && !l.starts_with('#') {
            v.push(l);
        }
    }
    v
}

/// The command that removes a trigger as the kernel lists it. The listing
/// adds a count (`:unlimited`, `:count=N`) and a state (` [active]`) that the
/// removal syntax does not take; hist triggers are matched on their keys, so
/// they are given back whole.
pub fn trigger_removal(line: &str) -> String {
    let mut s = line.trim_ascii();
    for &tail in &[" [active]", " [paused]"] {
        s = s.strip_suffix(tail).unwrap_or(s);
    }
    if !s.starts_with("hist") {
        if let Some((before, _)) = crate::util::split_str(s, " if ", false) {
            s = before;
        }
        if let Some(rest) = s.strip_suffix(":unlimited") {
            s = rest;
        } else if let Some((before, _)) = crate::util::split_str(s, ":count=", true) {
            s = before;
        }
    }
    format!("!{s}")
}

/// Remove every trigger of one event. Triggers can depend on each other
/// (hist `onmatch` actions), so removal is repeated while it makes progress.
pub fn clear_triggers(t: &Tracefs, trigger_file: &str) -> Result<()> {
    let mut last = usize::MAX;
    loop {
        let text = t.read_str(trigger_file)?;
        let lines = trigger_lines(&text);
        if lines.is_empty() || lines.len() >= last {
            // Nothing left, or no progress: report the first refusal.
            if let Some(l) = lines.first() {
                t.append(trigger_file, trigger_removal(l).as_bytes())?;
            }
            return Ok(());
        }
        last = lines.len();
        for l in lines.iter().rev() {
            let _ = t.append(trigger_file, trigger_removal(l).as_bytes());
        }
    }
}

/// The CPUs with a `per_cpu/cpuN` directory, in numeric order (the
/// listing is in byte order: cpu10 before cpu2).
pub fn cpus(t: &Tracefs) -> Result<Vec<u32>> {
    let mut cpus: Vec<u32> = Vec::new();
    for (n, d) in &t.list_dir("per_cpu")? {
        if let (true, Some(Ok(c))) = (*d, n.strip_prefix("cpu").map(str::parse::<u32>)) {
            // Moved into place: a handful of numbers, nearly in order.
            cpus.push(c);
            let mut j = cpus.len() - 1;
            while j > 0 && cpus[j - 1] > c {
                cpus.swap(j - 1, j);
                j -= 1;
            }
        }
    }
    Ok(cpus)
}

/// The `tracing_cpumask` value that selects every CPU with a
/// `per_cpu/cpuN` directory ("0" when there is none).
pub fn cpumask(t: &Tracefs) -> Result<String> {
    Ok(mask_of(&cpus(t)?))
}

/// A `tracing_cpumask` value selecting `cpus`: hex, 32-bit groups separated
/// by commas, most significant first, as the kernel prints it.
pub fn mask_of(cpus: &[u32]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let groups = max / 32 + 1;
    let mut out = String::new();
    for g in (0..groups).rev() {
        let mut w = 0u32;
        for &c in cpus {
            if c / 32 == g {
                w |= 1 << (c % 32);
            }
        }
        if !out.is_empty() {
            out.push(',');
        }
        // The leading group without its zeros, the others 8 digits wide.
        let digits = if g == groups - 1 { (32 - w.leading_zeros()).div_ceil(4).max(1) } else { 8 };
        for i in (0..digits).rev() {
            out.push(char::from_digit((w >> (i * 4)) & 15, 16).unwrap_or('0'));
        }
    }
    out
}

/// Is this `tracing_cpumask` text the same set as `mask`? (Kernels pad the
/// leading group differently.) Both are the hex digits of one number in
/// 32-bit groups, every group but the leading one 8 digits wide, so the
/// digits without commas and leading zeros say it.
pub fn same_cpumask(a: &str, b: &str) -> bool {
    digits(a) == digits(b)
}

/// The hex digits of a mask, lower case, without commas and leading zeros
/// ("0" for zero, nothing for an empty text).
fn digits(s: &str) -> Vec<u8> {
    let s = s.trim_ascii().as_bytes();
    let mut v = Vec::new();
    for &c in s {
        if c != b',' && !(c == b'0' && v.is_empty()) {
            v.push(c.to_ascii_lowercase());
        }
    }
    if v.is_empty() && !s.is_empty() {
        v.push(b'0');
    }
    v
}

/// What ftrec records of the tracer state that shapes the text (the
/// OPT_STATE of its trace.dat): the tracer, the trace_options words (the
/// graph tracer's own options are among them while it is current) and,
/// with latency-format, the preemption model for its header (known only
/// while the buffer has data, see [`live_model`]).
pub fn trace_state(tfs: &Tracefs) -> String {
    let rd = |f: &str| tfs.read_str(f).unwrap_or_default();
    let opts = rd("trace_options");
    let mut o = crate::text::Opts::default();
    o.set_all(&opts);
    let mut s = String::from("tracer=");
    s.push_str(rd("current_tracer").trim_ascii());
    s.push_str("\noptions=");
    for w in opts.split_ascii_whitespace() {
        s.push_str(w);
        s.push(' ');
    }
    s.push_str("\nmodel=");
    if o.has(crate::text::opts::LATENCY_FMT) {
        s.push_str(&live_model(tfs));
    }
    s.push('\n');
    s
}

/// The preemption model for latency-format's header, which the kernel
/// shows only there: in the first lines of a non-empty buffer's `trace`
/// file, with latency-format set. Empty when not there.
pub fn live_model(tfs: &Tracefs) -> String {
    let mut head = [0u8; 1024];
    let Ok(fd) = tfs.open_file("trace", rustix::fs::OFlags::RDONLY) else { return String::new() };
    let n = rustix::io::read(&fd, &mut head).unwrap_or(0);
    let t = String::from_utf8_lossy(&head[..n]);
    t.lines().find(|l| l.starts_with("# latency:")).map_or("", crate::text::kernel::lat_model).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_names() {
        assert_eq!(clock_name("[mono] local\n"), "mono");
        assert_eq!(clock_name("local"), "local");
        assert_eq!(clock_name(""), "local");
        assert_eq!(clock_name("local [x86-tsc] mono\n"), "x86-tsc");
    }

    #[test]
    fn defaults() {
        assert!(option_default("overwrite", false));
        assert!(option_default("overwrite", true));
        assert!(option_default("copy_trace_marker", false));
        assert!(!option_default("copy_trace_marker", true));
        assert!(!option_default("event-fork", false));
        assert!(!option_default("raw", false));
    }

    #[test]
    fn clock_parse() {
        let l = "local [global] counter uptime perf\n";
        assert_eq!(current_clock(l), "global");
        assert_eq!(names(l), "local global counter uptime perf");
        assert_eq!(names("  nop  function\n"), "nop function");
        for x in ["[a]", "[[a]]", "a", "[]", "[", "]", "", "a[b]c", "[a", "a]"] {
            assert_eq!(unbracket(x), x.trim_start_matches('[').trim_end_matches(']'), "{x}");
        }

    }

    #[test]
    fn removal() {
        assert_eq!(trigger_removal("traceoff:unlimited"), "!traceoff");
        assert_eq!(trigger_removal("traceoff:count=3"), "!traceoff");
        assert_eq!(trigger_removal("traceon:unlimited if prev_pid == 1"), "!traceon");
        assert_eq!(trigger_removal("enable_event:irq:irq_handler_entry:unlimited"), "!enable_event:irq:irq_handler_entry");
        assert_eq!(trigger_removal("stacktrace:count=2 if prev_pid == 1"), "!stacktrace");
        assert_eq!(
            trigger_removal("hist:keys=pid:vals=hitcount:sort=hitcount:size=2048 [active]"),
            "!hist:keys=pid:vals=hitcount:sort=hitcount:size=2048"
        );
        let t = "# Available triggers:\n# traceon traceoff\ntraceoff:unlimited\n\n";
        assert_eq!(trigger_lines(t), ["traceoff:unlimited"]);
    }

    #[test]
    fn masks() {
        assert_eq!(mask_of(&[0, 1]), "3");
        assert_eq!(mask_of(&[0, 1, 2, 3, 4, 5, 6, 7]), "ff");
        assert_eq!(mask_of(&[0, 33]), "2,00000001");
        assert_eq!(mask_of(&[]), "0");
        assert!(same_cpumask("3\n", "3"));
        assert!(same_cpumask("00000003", "3"));
        assert!(same_cpumask("00000000,00000003", "3"));
        assert!(!same_cpumask("1", "3"));
        assert!(!same_cpumask("00000001,00000003", "3"));
        assert!(!same_cpumask("x", "0"));
        assert!(same_cpumask("00000000,00000000", "0"));
        assert!(same_cpumask("FF", "ff"));
        assert!(!same_cpumask("", "0"));
        assert!(same_cpumask(&mask_of(&[0, 40]), "00000100,00000001"));
    }

    /// The running kernel's CPUs (read only), when there is a tracefs.
    #[test]
    fn live_cpus_in_order() {
        let Some(t) = crate::tracefs::live_for_test() else { return };
        let c = cpus(&t).unwrap();
        assert!(!c.is_empty());
        assert!(c.windows(2).all(|w| w[0] < w[1]), "{c:?}");
    }
}
