//! The applet table: one file per command, toybox style.

use alloc::vec::Vec;

pub mod ftcat;
pub mod ftctl;
pub mod ftrec;
pub mod source;

pub struct Applet {
    pub name: &'static str,
    pub summary: &'static str,
    /// The arguments after the applet's name.
    pub main: fn(Vec<Vec<u8>>) -> i32,
}

pub const APPLETS: &[Applet] = &[
    Applet { name: "ftcat", summary: "decode raw ftrace pages into the kernel's text", main: ftcat::main },
    Applet { name: "ftctl", summary: "drive tracefs: tracers, events, filters, buffers", main: ftctl::main },
    Applet { name: "ftrec", summary: "record the per-CPU ring buffers into trace.dat", main: ftrec::main },
];
