//! Kernel symbols from `/proc/kallsyms` text (or the trace.dat kallsyms
//! section): a sorted table with binary search for `%pS`-style lookups.
//!
//! OWNER: the `fmt` work.
