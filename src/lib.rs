//! ftbox: ftrace in one small static binary.
//!
//! The decoding core (cursor, formats, print fmt, ring pages, trace.dat,
//! text output) needs only `core` + `alloc`: it never does I/O, it is handed
//! bytes and writes into `core::fmt::Write`. Everything that touches the
//! system (tracefs, the applets, argv dispatch) sits behind the `cli`
//! feature, and does not use std either: it stands on `sys` (rustix + libc),
//! so the shipped binary carries none of std's panic and backtrace code.
#![no_std]
extern crate alloc;
#[cfg(test)]
extern crate std;

// ---- decoding core: core + alloc only ----
pub mod cursor;
pub mod decode;
pub mod format;
pub mod ftrace;
pub mod glob;
pub mod ksyms;
pub mod kvars;
pub mod merge;
pub mod printfmt;
pub mod ring;
pub mod tracedat;
pub mod text;
#[cfg(feature = "net")] pub mod tracemsg;
#[cfg(feature = "export")] pub mod export;
#[cfg(feature = "profile")] pub mod profile;
pub mod sort;
pub mod util;

// ---- the edges: the system, through `sys` ----
#[cfg(feature = "cli")]
pub mod applets;
#[cfg(feature = "cli")]
pub mod argv;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod multicall;
#[cfg(feature = "cli")]
pub mod record;
pub mod sys;
#[cfg(feature = "cli")]
pub mod tracefs;
