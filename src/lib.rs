//! ftbox: ftrace in one small static binary.
//!
//! The decoding core (cursor, formats, print fmt, ring pages, trace.dat,
//! text output) needs only `core` + `alloc`: it never does I/O, it is handed
//! bytes and writes into `core::fmt::Write`. Everything that touches the
//! system (tracefs, the applets, argv dispatch) sits behind the `std` feature.
#![no_std]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

// ---- decoding core: core + alloc only ----
pub mod cursor;
pub mod format;
pub mod ksyms;
pub mod merge;
pub mod printfmt;
pub mod ring;
pub mod tracedat;
pub mod text;

// ---- the edges: std ----
#[cfg(feature = "std")]
pub mod applets;
#[cfg(feature = "std")]
pub mod cli;
#[cfg(feature = "std")]
pub mod multicall;
#[cfg(feature = "std")]
pub mod tracefs;
