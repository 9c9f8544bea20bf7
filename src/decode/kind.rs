//! Which of ftrace's own records the pipeline itself must recognise: the
//! first pass guesses the tracer from them, the look-ahead holds graph
//! entries for their exits, `--graph`/`--max-depth` follow graph depths,
//! and `-F` shows a stack trace after the record it belongs to.
//!
//! One function decides it for the whole of `decode`, from the printers'
//! own typed classification ([`crate::ftrace::Record`]).

use crate::format::Event;
use crate::ftrace::Record;

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
/// apart: the printers' classification ([`Record::of`]) seen from the pump.
pub fn ftrace_kind(e: &Event) -> Option<Ftrace> {
    Some(match Record::of(e)? {
        Record::GraphEntry { retaddr: None, .. } => Ftrace::GraphEntry,
        Record::GraphEntry { retaddr: Some(_), .. } => Ftrace::RetaddrEntry,
        Record::GraphExit { .. } => Ftrace::GraphExit,
        Record::Function { .. } => Ftrace::Function,
        Record::KernelStack { .. } => Ftrace::KernelStack,
        Record::UserStack { .. } => Ftrace::UserStack,
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
