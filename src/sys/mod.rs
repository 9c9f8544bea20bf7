//! Where ftbox calls libc/rustix and writes memory unchecked: `os` (the
//! applets' system layer), `heap` and `mem` (the shipped binary's
//! allocator and memcpy), all `cli` builds only, and `bytes` (the decoding
//! library's raw byte moves, no I/O, in every build). Outside it: the C
//! entry in src/main.rs (only its caller vouches for argv), and
//! text::kernel's `Line`, which still stores its digits and pieces
//! unchecked (a safe version cost the board build more than its room).

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
