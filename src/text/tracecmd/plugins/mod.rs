//! Twins of libtraceevent's plugins (`plugin_*.so`) where one prints an
//! event differently from its print fmt, each as small as its table. The
//! handlers that read fields into a line live in the printer
//! ([`super::TraceCmd`]); what a plugin knows lives here.
//!
//! - sched_switch: the state letters differ by release ([`States`]).

pub mod sched_switch;

pub use sched_switch::States;
