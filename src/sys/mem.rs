//! `memcpy` for the shipped x86_64 binary, in place of musl's.
//!
//! musl's x86_64 memcpy copies byte by byte up to an 8-byte boundary, then
//! with `rep movsq`, then byte by byte again: every call pays the string
//! instructions' start-up cost. The decoders copy a few bytes at a time
//! (a field, a word of text, a record header) millions of times, and
//! profiles of ftcat showed a quarter of its time in that memcpy. Here a
//! copy of up to 64 bytes is a few overlapping unaligned loads and stores;
//! longer ones use `rep movsb`, which CPUs with ERMS (every x86_64 of the
//! last decade) run at full speed.
//!
//! Defining the symbols in the program keeps the linker from taking musl's
//! memcpy.o out of libc.a; memmove comes along because musl's memmove
//! calls into memcpy.o (`__memcpy_fwd`) and would pull it in. Nothing here may be written as a byte loop: the
//! compiler would recognise it and call memcpy, that is, this function.

use core::ptr::{read_unaligned as ld, write_unaligned as st};

/// # Safety
/// The C contract: `dst` and `src` valid for `n` bytes, not overlapping.
#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: every load and store below stays within [0, n) of its
    // pointer (the caller guarantees both are valid for n bytes); each
    // size class first loads everything it copies, then stores it.
    unsafe {
        if n <= 16 {
            if n >= 8 {
                let (a, b) = (ld(src as *const u64), ld(src.add(n - 8) as *const u64));
                st(dst as *mut u64, a);
                st(dst.add(n - 8) as *mut u64, b);
            } else if n >= 4 {
                let (a, b) = (ld(src as *const u32), ld(src.add(n - 4) as *const u32));
                st(dst as *mut u32, a);
                st(dst.add(n - 4) as *mut u32, b);
            } else if n > 0 {
                // 1..=3 bytes: first, middle and last (some the same byte).
                let (a, b, c) = (*src, *src.add(n / 2), *src.add(n - 1));
                *dst = a;
                *dst.add(n / 2) = b;
                *dst.add(n - 1) = c;
            }
        } else if n <= 32 {
            let (a, b) = (ld(src as *const u128), ld(src.add(n - 16) as *const u128));
            st(dst as *mut u128, a);
            st(dst.add(n - 16) as *mut u128, b);
        } else if n <= 64 {
            let (a, b) = (ld(src as *const u128), ld(src.add(16) as *const u128));
            let (c, d) = (ld(src.add(n - 32) as *const u128), ld(src.add(n - 16) as *const u128));
            st(dst as *mut u128, a);
            st(dst.add(16) as *mut u128, b);
            st(dst.add(n - 32) as *mut u128, c);
            st(dst.add(n - 16) as *mut u128, d);
        } else {
            core::arch::asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags)
            );
        }
    }
    dst
}

/// # Safety
/// The C contract: `dst` and `src` valid for `n` bytes; they may overlap.
#[no_mangle]
pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: up to 64 bytes memcpy loads everything before it stores,
    // and a forward copy is sound when dst does not start inside src.
    // Otherwise a backward `rep movsb` from the last byte of each range,
    // with the direction flag restored (the ABI wants it clear).
    unsafe {
        if n <= 64 || (dst as usize).wrapping_sub(src as usize) >= n {
            return memcpy(dst, src, n);
        }
        core::arch::asm!(
            "std",
            "rep movsb",
            "cld",
            inout("rcx") n => _,
            inout("rdi") dst.add(n - 1) => _,
            inout("rsi") src.add(n - 1) => _,
            options(nostack)
        );
    }
    dst
}
