//! zstd through ruzstd (pure Rust, no_std + alloc with default features off).

use alloc::vec::Vec;
use ruzstd::decoding::{BlockDecodingStrategy, FrameDecoder};
use ruzstd::io::Read;

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

/// Decode every frame of `z` into a buffer of `size` bytes, straight from
/// the decoder's window (no block-by-block Vec to copy from): exactly
/// `size` bytes, or None. The callers bound `size` by the compressed
/// bytes really read (`plausible_expansion`), so a corrupt size field
/// cannot make it allocate much.
pub(crate) fn decode_vec(mut z: &[u8], size: usize) -> Option<Vec<u8>> {
    let mut d = decoder(size);
    let mut out = alloc::vec![0u8; size];
    let mut done = 0;
    while !z.is_empty() {
        d.init(&mut z).ok()?;
        loop {
            d.decode_blocks(&mut z, BlockDecodingStrategy::UptoBytes(1 << 20)).ok()?;
            done += d.read(&mut out[done..]).ok()?;
            // More than `size` comes out.
            if d.can_collect() != 0 {
                return None;
            }
            if d.is_finished() {
                break;
            }
        }
    }
    (done == size).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame whose header asks for a window far larger than the expected
    /// output (32 MiB for one byte) is refused: the window is what the
    /// decoder would buffer.
    #[test]
    fn a_window_larger_than_the_output_needs_is_refused() {
        // Magic, descriptor (no content size, not single-segment), window
        // 2^(10+15), then one last raw block of 1 byte: "A".
        let frame = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 15 << 3, 0x09, 0x00, 0x00, b'A'];
        assert_eq!(decode_vec(&frame, 1), None);
        assert_eq!(decode(&frame, &mut [0u8; 1]), None);
        // The same frame with a 1 KiB window decodes.
        let small = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x09, 0x00, 0x00, b'A'];
        assert_eq!(decode_vec(&small, 1).as_deref(), Some(&b"A"[..]));
    }
}
