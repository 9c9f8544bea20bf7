//! Where ftbox calls libc/rustix and writes memory unchecked: `os` (the
//! applets' system layer, `cli` builds only) and `bytes` (the decoding
//! library's raw byte moves, no I/O, in every build). Not yet the only
//! place: text::kernel's `Line` still stores its digits and pieces
//! unchecked, and the binary's runtime (src/heap.rs, src/mem.rs,
//! src/main.rs) calls libc itself.

pub mod bytes;

#[cfg(feature = "cli")]
mod os;
#[cfg(feature = "cli")]
pub use os::*;

#[cfg(feature = "net")]
pub mod net;
