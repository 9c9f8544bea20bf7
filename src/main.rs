//! Thin entry point: everything lives in the library so tests reach it.
//!
//! Builds that do not unwind (release: the binary we ship) are `no_std`:
//! std's panic machinery (backtrace printing with gimli, addr2line,
//! miniz_oxide, rustc_demangle, libunwind) cannot be left out of a stable
//! build that links std, and nothing else of std is used. Such a build
//! brings what std's runtime gave: the C `main` (libc's start code runs
//! before it), an allocator (src/sys/heap.rs: size classes over mmap), and a
//! panic handler. Builds that unwind (`cargo test` builds this binary in
//! the test profile for the CLI tests) keep std's `fn main`; both call the
//! same library entry.
#![cfg_attr(not(panic = "unwind"), no_std)]
#![cfg_attr(not(panic = "unwind"), no_main)]

#[cfg(panic = "unwind")]
fn main() {
    use std::os::unix::ffi::OsStringExt;
    ftbox::sys::init();
    let args = std::env::args_os().map(|a| a.into_vec()).collect();
    std::process::exit(ftbox::multicall::main(args));
}

#[cfg(not(panic = "unwind"))]
mod rt {
    use core::ffi::{c_char, c_int};
    use ftbox::sys;

    // Without std nothing links the C library; musl's libc.a is
    // self-contained in rustup's musl targets (start code, strerror).
    // `-bundle`: linked into the binary, not into the rlib. For the static
    // glibc cross build (riscv64) the same line links glibc's libc.a.
    #[link(name = "c", kind = "static", modifiers = "-bundle")]
    extern "C" {}

    #[global_allocator]
    static ALLOC: sys::heap::Heap = sys::heap::Heap::new();

    /// Straight to fd 2, no allocation: the panic may be an allocation failure.
    struct Stderr;
    impl core::fmt::Write for Stderr {
        fn write_str(&mut self, s: &str) -> core::fmt::Result {
            sys::write_all(sys::fd(2), s.as_bytes()).map_err(|_| core::fmt::Error)
        }
    }

    /// A bug: say where, then abort (status 134), as std's panic=abort did.
    #[panic_handler]
    fn panic(info: &core::panic::PanicInfo) -> ! {
        use core::sync::atomic::{AtomicBool, Ordering};
        static PANICKED: AtomicBool = AtomicBool::new(false);
        // A panic while printing a panic: just stop.
        if !PANICKED.swap(true, Ordering::Relaxed) {
            let _ = core::fmt::Write::write_fmt(&mut Stderr, format_args!("ftbox: {info}\n"));
        }
        sys::abort()
    }

    // rustup's prebuilt core and alloc are compiled to unwind: their
    // landing pads (e.g. in alloc::fmt::format) name these two symbols,
    // which std's unwinder would define. With panic=abort nothing ever
    // unwinds, so they are never called; stubs that abort satisfy the
    // linker without pulling in the unwinder (libunwind) behind them.
    #[no_mangle]
    extern "C" fn _Unwind_Resume() -> ! {
        sys::abort()
    }
    #[no_mangle]
    extern "C" fn rust_eh_personality() {
        sys::abort()
    }
    // Static glibc (the riscv64 cross build): libc.a's C code is built with
    // -fexceptions for pthread cancellation and names libgcc_eh's C
    // personality routine. We never cancel threads, so nothing unwinds
    // through it either; std linked all of libgcc_eh for this.
    #[cfg(target_env = "gnu")]
    #[no_mangle]
    extern "C" fn __gcc_personality_v0() {
        sys::abort()
    }

    #[no_mangle]
    extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
        sys::init();
        // The one unsafe block outside src/sys: only the C start code, our
        // caller, knows what argv points to, so it is here that the
        // promise sys::args asks for can be made.
        // SAFETY: the C start code passes argc valid NUL-terminated strings.
        let args = unsafe { sys::args(argc, argv) };
        ftbox::multicall::main(args)
    }
}

