//! zstd through ruzstd (pure Rust, no_std + alloc with default features off).

use ruzstd::decoding::FrameDecoder;

/// Decode every frame of `z` into `out`; the number of bytes written, or
/// None when the data is corrupt or larger than `out`.
pub(crate) fn decode(z: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut d = FrameDecoder::new();
    d.decode_all(z, out).ok()
}
