//! Where ftcat's pages come from, at the std edge: a trace.dat file read with
//! pread (memory stays flat however large the file), stdin, or the live
//! per-CPU `trace_pipe_raw` files. OWNER: the `dat` work.
