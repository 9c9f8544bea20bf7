//! Where ftbox calls libc/rustix and writes memory unchecked: `os` (the
//! applets' system layer), `heap` and `mem` (the shipped binary's
//! allocator and memcpy), all `cli` builds only, and in every build, with
//! no I/O, the decoding library's `bytes` (raw byte moves) and `line` (the
//! text line buffer, which stores its digits and pieces unchecked). Outside
//! it only the C entry in src/main.rs (only its caller vouches for argv).

pub mod bytes;
pub mod line;

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
