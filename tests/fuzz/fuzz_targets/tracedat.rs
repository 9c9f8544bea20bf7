//! A trace.dat from bytes: open it, then print it through ftcat's own
//! pipeline (decode::print_file) as kernel text, kernel text with -R,
//! trace-cmd text, --stat and trace-cmd's --stat; and read every CPU's
//! pages alone, as trace-cmd --stat does.
#![no_main]

use ftbox::decode::{self, DecodeOptions, Host, Style};
use ftbox::tracedat::TraceDat;
use ftbox_fuzz::Sink;
use libfuzzer_sys::fuzz_target;

/// Read errors are part of what is fuzzed: the pipeline reports them and
/// goes on.
struct Quiet;
impl Host for Quiet {
    fn error(&mut self, _cpu: u32, _msg: &str) {}
}

fn runs() -> [DecodeOptions; 5] {
    let tc = DecodeOptions { style: Style::TraceCmd, ..DecodeOptions::default() };
    [
        DecodeOptions::default(),
        DecodeOptions { raw: true, ..DecodeOptions::default() },
        DecodeOptions { stat: true, ..DecodeOptions::default() },
        DecodeOptions { stat: true, ..tc.clone() },
        tc,
    ]
}

fuzz_target!(|data: &[u8]| {
    let file = data.to_vec();
    let Ok(td) = TraceDat::open(&file) else { return };
    for opts in runs() {
        let mut out = Sink::default();
        let _ = decode::print_file(&td, "fuzz.dat", &opts, &mut out, &mut Quiet, &mut |_| {});
    }
    for buf in &td.buffers {
        for c in &buf.cpus {
            let mut pages = td.cpu_pages(buf, c);
            while let Some(Ok(_)) = pages.next_page() {}
        }
    }
});
