//! Which of ftrace's own records the pipeline itself must recognise: the
//! first pass guesses the tracer from them, the look-ahead holds graph
//! entries for their exits, `--graph`/`--max-depth` follow graph depths,
//! and `-F` shows a stack trace after the record it belongs to.
//!
//! One function decides it for the whole of `decode`, so that the printers'
//! typed classification can take its place in one spot.

use crate::format::Event;

/// ftrace's own events, as far as the pipeline (not the printers) cares.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ftrace {
    /// `funcgraph_entry`.
    GraphEntry,
    /// `fgraph_retaddr_entry`: an entry with its return address; folds
    /// with its exit like a graph entry, but `--graph` does not follow it.
    RetaddrEntry,
    /// `funcgraph_exit`.
    GraphExit,
    /// `function`.
    Function,
    KernelStack,
    UserStack,
}

/// The kind of `e`, if it is one of ftrace's events the pipeline treats
/// apart.
pub fn ftrace_kind(e: &Event) -> Option<Ftrace> {
    if e.system != "ftrace" {
        return None;
    }
    Some(match e.name.as_str() {
        "funcgraph_entry" => Ftrace::GraphEntry,
        "fgraph_retaddr_entry" => Ftrace::RetaddrEntry,
        "funcgraph_exit" => Ftrace::GraphExit,
        "function" => Ftrace::Function,
        "kernel_stack" => Ftrace::KernelStack,
        "user_stack" => Ftrace::UserStack,
        _ => return None,
    })
}

/// The ids of `events` whose kind `pick` accepts, with their kind: a short
/// list the per-record checks scan (empty for most event recordings).
pub fn ids_of(events: &[Event], pick: fn(Ftrace) -> bool) -> alloc::vec::Vec<(u16, Ftrace)> {
    let mut v = alloc::vec::Vec::new();
    for e in events {
        if let Some(k) = ftrace_kind(e).filter(|&k| pick(k)) {
            v.push((e.id, k));
        }
    }
    v
}

/// A graph entry: waits for its CPU's next record (the exit it may fold with).
pub fn is_entry(k: Ftrace) -> bool {
    matches!(k, Ftrace::GraphEntry | Ftrace::RetaddrEntry)
}
