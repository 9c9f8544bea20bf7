//! zstd through ruzstd (pure Rust, no_std + alloc with default features off).

use alloc::vec::Vec;
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};

/// A decoder for `size` bytes of output. A frame's window is what the
/// decoder buffers: trace-cmd's frames (one per chunk or section, content
/// size known) have windows no larger than their content, so a header that
/// asks for more is refused rather than allocated.
fn decoder(size: usize) -> FrameDecoder {
    let mut d = FrameDecoder::new();
    d.set_max_window_size((size.max(1 << 17).next_power_of_two() as u64).min(32 << 20));
    d
}

/// Decode every frame of `z` into `out`; the number of bytes written, or
/// None when the data is corrupt or larger than `out`.
pub(crate) fn decode(z: &[u8], out: &mut [u8]) -> Option<usize> {
    decoder(out.len()).decode_all(z, out).ok()
}

/// Decode every frame of `z`, growing the output only as data really comes
/// out (a corrupt size field cannot make it allocate): exactly `size`
/// bytes, or None.
pub(crate) fn decode_vec(mut z: &[u8], size: usize) -> Option<Vec<u8>> {
    let mut d = decoder(size);
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
