//! The `print fmt` interpreter: parses the format string and its C argument
//! expressions once per event, then evaluates them over each record.
//!
//! OWNER: the `fmt` work.
