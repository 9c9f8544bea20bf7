//! A stream (`ftrec -o -`) from bytes: index it and print it read in
//! place, as ftcat prints a stream file; read it as it would arrive on
//! a pipe, through the demux and the merge; and lay it out as `ftcat
//! --save` does (formats of the events that occur, v6 and v7).
#![no_main]

use ftbox::decode::{self, DecodeOptions, Host, Recording};
use ftbox::merge::Merge;
use ftbox::tracedat::stream::{Demux, InPlace, Index, Pipe, Shape, Virtual};
use ftbox::tracedat::{IoError, ReadAt, TraceDat};
use ftbox_fuzz::Sink;
use libfuzzer_sys::fuzz_target;
use std::cell::RefCell;
use std::rc::Rc;

struct Quiet;
impl Host for Quiet {
    fn error(&mut self, _cpu: u32, _msg: &str) {}
}

/// The bytes as a pipe gives them: a few at a time.
struct Bytes(Vec<u8>, usize);
impl Pipe for Bytes {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, IoError> {
        let n = buf.len().min(self.0.len() - self.1).min(4099);
        buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
        self.1 += n;
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let file = data.to_vec();
    if let Ok(idx) = Index::read(&file, file.len() as u64) {
        for shape in [Shape { version: 7, keep: None, used_formats: true }, Shape { version: 6, keep: Some(4096), used_formats: true }] {
            let Ok(v) = Virtual::new(&file, &idx, &shape) else { continue };
            // Every byte of the view reads (what --save copies).
            let mut buf = vec![0u8; 4096];
            let mut off = 0u64;
            while let Ok(n) = v.read_at(off, &mut buf) {
                if n == 0 {
                    break;
                }
                off += n as u64;
            }
            if let Ok(td) = TraceDat::open(&v) {
                let _ = decode::print_file(&td, "fuzz.stream", &DecodeOptions::default(), &mut Sink::default(), &mut Quiet, &mut |_| {});
            }
        }
        let p = InPlace::new(&file, idx);
        if let Ok(td) = p.open() {
            let _ = decode::print_file(&td, "fuzz.stream", &DecodeOptions::default(), &mut Sink::default(), &mut Quiet, &mut |_| {});
        }
    }
    let Ok((demux, meta)) = Demux::open(Box::new(Bytes(file, 0))) else { return };
    let Ok(td) = TraceDat::open(&meta) else { return };
    let Some(buf) = td.buffers.first() else { return };
    let mut rec = Recording::from_file(&td, buf, None);
    // A hostile CPU count must not become as many sources.
    let ncpus = rec.ncpus.min(256);
    let d = Rc::new(RefCell::new(demux));
    let mut m = Merge::new(td.layout(buf), Demux::sources(d, ncpus));
    let _ = decode::print(&mut rec, &mut m, Vec::new(), &DecodeOptions::default(), false, &mut Sink::default(), &mut Quiet);
});
