//! The only place that calls libc/rustix or writes memory unchecked: `os`
//! (the applets' system layer, `cli` builds only) and `bytes` (the
//! decoding library's raw byte moves, no I/O, in every build).

pub mod bytes;

#[cfg(feature = "cli")]
mod os;
#[cfg(feature = "cli")]
pub use os::*;

#[cfg(feature = "net")]
pub mod net;
