//! The applet table: one file per command, toybox style.

use std::ffi::OsString;
use std::vec::Vec;

pub mod ftcat;
pub mod ftctl;
pub mod ftrec;
pub mod source;

pub struct Applet {
    pub name: &'static str,
    pub summary: &'static str,
    pub main: fn(Vec<OsString>) -> i32,
}

pub const APPLETS: &[Applet] = &[
    Applet { name: "ftcat", summary: "decode raw ftrace pages into the kernel's text", main: ftcat::main },
    Applet { name: "ftctl", summary: "drive tracefs: tracers, events, filters, buffers", main: ftctl::main },
    Applet { name: "ftrec", summary: "record the per-CPU ring buffers into trace.dat", main: ftrec::main },
];
