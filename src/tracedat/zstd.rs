//! zstd through ruzstd (pure Rust, no_std + alloc with default features off).

use alloc::vec::Vec;
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

fn decoder() -> FrameDecoder {
    let mut d = FrameDecoder::new();
    // A corrupt frame header must not make the decoder reserve a huge window.
    d.set_max_window_size(32 << 20);
    d
}

/// Decode every frame of `z` into `out`; the number of bytes written, or
/// None when the data is corrupt or larger than `out`.
pub(crate) fn decode(z: &[u8], out: &mut [u8]) -> Option<usize> {
    decoder().decode_all(z, out).ok()
}

/// Decode every frame of `z`, growing the output only as data really comes
/// out (a corrupt size field cannot make it allocate): exactly `size`
/// bytes, or None.
pub(crate) fn decode_vec(mut z: &[u8], size: usize) -> Option<Vec<u8>> {
    let mut d = decoder();
    let mut out = Vec::new();
    while !z.is_empty() {
        d.init(&mut z).ok()?;
        loop {
            d.decode_blocks(&mut z, BlockDecodingStrategy::UptoBytes(1 << 20)).ok()?;
            if let Some(v) = d.collect() {
                out.extend_from_slice(&v);
            }
            if out.len() > size {
                return None;
            }
            if d.is_finished() {
                break;
            }
        }
    }
    (out.len() == size).then_some(out)
}
