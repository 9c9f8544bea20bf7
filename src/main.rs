//! Thin entry point: everything lives in the library so tests reach it.
fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    std::process::exit(ftbox::multicall::main(args));
}
