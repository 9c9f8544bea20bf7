//! trace.dat files (trace-cmd's format, versions 6 and 7): reader (OWNER: the
//! `dat` work) and writer (`write.rs`, OWNER: the `rec` work).

pub mod write;
