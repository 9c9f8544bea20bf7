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

#[cfg(feature = "cli")]
pub mod heap;
/// Linked into the shipped binary only: builds that unwind (every test
/// binary, `cargo test --lib` included) keep the C library's memcpy.
#[cfg(all(feature = "fast-copy", target_arch = "x86_64", not(panic = "unwind")))]
mod mem;
