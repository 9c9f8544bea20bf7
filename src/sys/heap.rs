//! The global allocator of the shipped binary: size classes over mmap.
//!
//! The decoders make many small, short-lived blocks per page and line, and
//! Rust hands `dealloc` and `realloc` the block's layout, so a block needs
//! no header: its size class follows from the layout. Blocks of up to
//! 64 KiB come from 25 classes (see `class`), each a LIFO free list
//! threaded through the free blocks, refilled by carving 1 MiB mmap arenas
//! (a block is aligned to the largest power of two dividing its size, at
//! most to 4 KiB); freed small blocks are reused, never unmapped. Larger
//! blocks are mappings of their own: freed with munmap, grown and shrunk
//! with mremap (no copy). Alignments above 4 KiB fail (null): nothing here
//! asks for them.
//!
//! Only the no_std binary installs it (src/main.rs's #[global_allocator]);
//! the library's unit tests run against a private `Heap`.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr::{self, null_mut};
use core::sync::atomic::{AtomicBool, Ordering};

const MIN_SHIFT: u32 = 4;
const MAX_SHIFT: u32 = 16;
const CLASSES: usize = 2 * (MAX_SHIFT - MIN_SHIFT) as usize + 1;
const ARENA: usize = 1 << 20;
const PAGE_ALIGN: usize = 4096;

struct State {
    /// Head of each class's free list; a free block's first word is the next.
    free: [*mut u8; CLASSES],
    /// The unused rest of the current arena.
    next: usize,
    end: usize,
}

pub struct Heap {
    lock: AtomicBool,
    st: UnsafeCell<State>,
}

// SAFETY: all access to `st` happens with `lock` held.
unsafe impl Sync for Heap {}

/// The size class of a layout (None: a block mapped on its own).
/// Classes go 16, 24, 32, 48, 64, ... 49152, 65536: half steps keep
/// the rounding waste near a fifth (powers of two alone cost 2.7 MB
/// more peak memory reading a trace.dat's ~2000 formats).
fn class(size: usize, align: usize) -> Option<usize> {
    let n = size.max(align).max(1 << MIN_SHIFT);
    if n > 1 << MAX_SHIFT {
        return None;
    }
    // 2^k <= n-1 < 2^(k+1): n fits 3·2^(k-1) or else 2^(k+1).
    let k = (usize::BITS - 1 - (n - 1).leading_zeros()) as usize;
    let c = if (n - 1) >> (k - 1) & 1 == 0 { 2 * k - 7 } else { 2 * k - 6 };
    // A 3·2^(k-1) block is aligned to 2^(k-1) only.
    Some(if align > block_align(c) { c + 1 } else { c })
}

/// Bytes in a block of class c.
fn block_size(c: usize) -> usize {
    (if c & 1 == 0 { 16 } else { 24 }) << (c / 2)
}

/// The alignment blocks of class c are carved at.
fn block_align(c: usize) -> usize {
    let n = block_size(c);
    (n & n.wrapping_neg()).min(PAGE_ALIGN)
}

fn map(size: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping touches no existing memory.
    let p = unsafe {
        libc::mmap(null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    if p == libc::MAP_FAILED {
        null_mut()
    } else {
        p.cast()
    }
}

impl Heap {
    pub const fn new() -> Heap {
        Heap { lock: AtomicBool::new(false), st: UnsafeCell::new(State { free: [null_mut(); CLASSES], next: 0, end: 0 }) }
    }

    /// Run `f` on the state under the lock.
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        while self.lock.swap(true, Ordering::Acquire) {
            core::hint::spin_loop();
        }
        // SAFETY: the lock gives exclusive access.
        let r = f(unsafe { &mut *self.st.get() });
        self.lock.store(false, Ordering::Release);
        r
    }

    fn small(&self, c: usize) -> *mut u8 {
        self.with(|st| {
            let head = st.free[c];
            if !head.is_null() {
                // SAFETY: a free block holds the next free block's address.
                st.free[c] = unsafe { *head.cast::<*mut u8>() };
                return head;
            }
            let (n, a) = (block_size(c), block_align(c));
            let mut at = (st.next + (a - 1)) & !(a - 1);
            if st.next == 0 || at + n > st.end {
                let a = map(ARENA);
                if a.is_null() {
                    return a;
                }
                at = a as usize;
                st.end = at + ARENA;
            }
            st.next = at + n;
            at as *mut u8
        })
    }

    fn release(&self, p: *mut u8, c: usize) {
        self.with(|st| {
            // SAFETY: p is a block of class c that its owner gave up.
            unsafe { *p.cast::<*mut u8>() = st.free[c] };
            st.free[c] = p;
        })
    }
}

// SAFETY: blocks of class c are block_size(c) bytes aligned to
// block_align(c) (class() picks one with at least the size and
// alignment asked for), handed out once until freed; large blocks are whole mappings
// of at least the size asked for, page aligned.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.align() > PAGE_ALIGN {
            return null_mut();
        }
        match class(l.size(), l.align()) {
            Some(c) => self.small(c),
            None => map(l.size()),
        }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: as alloc.
        let p = unsafe { self.alloc(l) };
        // Fresh mappings are zero already (kallsyms: megabytes).
        if !p.is_null() && class(l.size(), l.align()).is_some() {
            // SAFETY: p points to at least l.size() writable bytes.
            unsafe { ptr::write_bytes(p, 0, l.size()) };
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        match class(l.size(), l.align()) {
            Some(c) => self.release(p, c),
            // SAFETY: p is a mapping of l.size() bytes (rounded up to pages).
            None => unsafe {
                libc::munmap(p.cast(), l.size());
            },
        }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let (old, cur) = (class(l.size(), l.align()), class(new, l.align()));
        match (old, cur) {
            // The block already holds `new` bytes; it may stand in a
            // smaller class's list when freed if aligned as that class.
            (Some(o), Some(n)) if n <= o && p as usize & (block_align(n) - 1) == 0 => return p,
            (None, None) => {
                // SAFETY: p is a whole mapping of l.size() bytes.
                let q = unsafe { libc::mremap(p.cast(), l.size(), new, libc::MREMAP_MAYMOVE) };
                return if q == libc::MAP_FAILED { null_mut() } else { q.cast() };
            }
            _ => {}
        }
        // SAFETY: `new` with l's alignment is a valid layout (the caller's promise).
        let nl = unsafe { Layout::from_size_align_unchecked(new, l.align()) };
        // SAFETY: alloc, copy the smaller size, free the old block.
        unsafe {
            let q = self.alloc(nl);
            if !q.is_null() {
                ptr::copy_nonoverlapping(p, q, l.size().min(new));
                self.dealloc(p, l);
            }
            q
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    #[test]
    fn classes() {
        for (size, align, c) in [(0, 1, 0), (16, 8, 0), (17, 8, 1), (24, 8, 1), (24, 16, 2), (25, 8, 2), (33, 8, 3),
            (48, 16, 3), (48, 32, 4), (49, 1, 4), (4096, 8, 16), (4097, 8, 17), (1, 4096, 16), (65536, 16, 24)]
        {
            assert_eq!(class(size, align), Some(c), "class of {size}/{align}");
            assert!(block_size(c) >= size && block_align(c) >= align);
        }
        assert_eq!(block_size(17), 6144);
        assert_eq!(block_align(17), 2048);
        assert_eq!(block_align(24), 4096);
        assert_eq!(class(65537, 16), None);
        for n in 1..=65536 {
            let c = class(n, 1).unwrap();
            assert!(block_size(c) >= n && (c == 0 || block_size(c - 1) < n), "{n}");
        }
    }

    #[test]
    fn blocks_are_aligned_distinct_and_reused() {
        let h = Heap::new();
        let mut live = Vec::new();
        for (i, &(size, align)) in [(1, 1), (24, 8), (24, 16), (100, 16), (4000, 64), (5000, 4096), (6000, 8), (65536, 8), (70000, 16), (1 << 22, 4096)]
            .iter()
            .cycle()
            .take(200)
            .enumerate()
        {
            let l = Layout::from_size_align(size, align).unwrap();
            // SAFETY: l has a non-zero size.
            let p = unsafe { h.alloc(l) };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0);
            // SAFETY: p has size writable bytes.
            unsafe { ptr::write_bytes(p, i as u8, size) };
            live.push((p, l, i as u8));
        }
        for &(p, l, v) in &live {
            // SAFETY: the blocks are live and were filled with v.
            let s = unsafe { core::slice::from_raw_parts(p, l.size()) };
            assert!(s.iter().all(|&b| b == v), "blocks overlap");
        }
        let (p, l, _) = live[2];
        // SAFETY: p is live with layout l.
        unsafe { h.dealloc(p, l) };
        // SAFETY: as above.
        let q = unsafe { h.alloc(l) };
        assert_eq!(p, q, "a freed block is reused first");
        for &(p, l, _) in &live {
            // SAFETY: each block is freed once (block 2 again as q).
            unsafe { h.dealloc(p, l) };
        }
    }

    #[test]
    fn realloc_keeps_contents_across_classes_and_mappings() {
        let h = Heap::new();
        let l = Layout::from_size_align(10, 1).unwrap();
        // SAFETY: a valid layout; then each step reallocates the live block.
        unsafe {
            let mut p = h.alloc(l);
            for i in 0..10 {
                *p.add(i) = i as u8;
            }
            let mut old = l;
            for new in [12, 200, 60000, 70000, 1 << 20, 100, 5] {
                p = h.realloc(p, old, new);
                assert!(!p.is_null());
                let keep = old.size().min(new).min(10);
                for i in 0..keep {
                    assert_eq!(*p.add(i), i as u8, "byte {i} after realloc to {new}");
                }
                ptr::write_bytes(p.add(keep), 0xaa, new - keep);
                old = Layout::from_size_align(new, 1).unwrap();
            }
            h.dealloc(p, old);
            let z = Layout::from_size_align(300, 8).unwrap();
            let a = h.alloc(z);
            ptr::write_bytes(a, 0xff, 300);
            h.dealloc(a, z);
            let b = h.alloc_zeroed(z);
            assert_eq!(a, b);
            assert!(core::slice::from_raw_parts(b, 300).iter().all(|&x| x == 0));
            h.dealloc(b, z);
        }
    }
}
