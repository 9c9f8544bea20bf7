//! Text output. `kernel`: what the kernel's own `trace` file prints.
//! `tracecmd`: what `trace-cmd report` prints.
//!
//! OWNER: the `text` work.
