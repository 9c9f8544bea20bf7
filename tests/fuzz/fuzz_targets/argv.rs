//! Command lines: the argv lexer (src/argv.rs) under an option table like
//! the applets' (clusters, attached and separate values, `--`, raw rest),
//! and each applet's parse_args.
//!
//! Input: the arguments after argv[0], NUL-separated. `-h` prints ftcat's
//! help on stdout: run with -close_fd_mask=1.
#![no_main]

use ftbox::argv::{self, Parser, Value};
use libfuzzer_sys::fuzz_target;

/// Short and long, with and without a value, long-only (key below b'A').
const OPTS: &[argv::Opt] = &[(b'a', "all", false), (b'o', "out", true), (1, "long-only", true), (b'q', "", false), (b'B', "buffer", true)];

fuzz_target!(|data: &[u8]| {
    let args: Vec<Vec<u8>> = data.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    let mut p = Parser::from_args(args.clone());
    let mut msgs = String::new();
    loop {
        let arg = match p.next() {
            Ok(Some(a)) => a,
            Ok(None) => break,
            Err(e) => {
                msgs += &e.to_string();
                continue;
            }
        };
        match arg {
            // A command and its arguments, as ftrec takes them.
            Value(v) if v == "cmd" => {
                let _ = p.raw_args();
                break;
            }
            Value(_) => {}
            arg => match argv::find(OPTS, &arg) {
                Some(&(_, _, true)) => match p.value() {
                    Ok(v) => msgs += &v,
                    Err(e) => msgs += &e.to_string(),
                },
                Some(_) => msgs += p.last(),
                None => msgs += &arg.unexpected().to_string(),
            },
        }
    }
    if let Err(e) = ftbox::applets::ftcat::parse_args(args.clone()) {
        msgs += &e.to_string();
    }
    if let Err(e) = ftbox::applets::ftctl::parse_args(args.clone()) {
        msgs += &e.to_string();
    }
    if let Err(e) = ftbox::applets::ftrec::parse_args(args) {
        msgs += &e.to_string();
    }
});
