//! Twins of libtraceevent's plugins (`plugin_*.so`) where one prints an
//! event differently from its print fmt, each as small as its table. The
//! handlers that read fields into a line live in the printer
//! ([`super::TraceCmd`]); what a plugin knows lives here.
//!
//! libtraceevent 1.7 (trace-cmd 3.1/3.2) and 1.9 (3.4) ship the same
//! plugins; only sched_switch's changed between them.
//! - function, hrtimer, kmem, tlb, sched_wakeup: in the printer.
//! - sched_switch: in the printer, its state letters here ([`States`]).
//! - futex: [`futex`] (syscalls:sys_enter_futex).

pub mod futex;
pub mod sched_switch;

pub use sched_switch::States;
