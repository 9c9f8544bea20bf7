//! Ring-buffer pages as the kernel writes them to `trace_pipe_raw`: page
//! header (timestamp, commit with its flags), then records whose framing the
//! `header_event` describes. Zero-copy: records borrow from the page.
//!
//! OWNER: the `dat` work (ring + tracedat reader + merge).
