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
//! - jbd2: defines `jiffies_to_msecs()` as returning the jiffies
//!   (jbd2_run_stats, jbd2_checkpoint_stats): in the print fmt
//!   interpreter's trace-cmd dialect (printfmt's `Env::tep`).
//! - kvm: [`kvm`] (kvm_exit, kvm_entry, kvm_emulate_insn,
//!   kvm_nested_vmexit*, kvmmmu's page events, whose print fmts
//!   libtraceevent cannot parse); its `is_writable_pte()` is only a name
//!   the print fmt parser accepts (no kernel ftbox records on uses it).
//! - mac80211, cfg80211, scsi, xen: only for events of those systems,
//!   which the kernels ftbox records on do not have; without a twin they
//!   print through their print fmts.

pub mod futex;
pub mod kvm;
pub mod sched_switch;

pub use sched_switch::States;
