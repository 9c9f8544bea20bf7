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

/// Start decoding the frame at the head of `z`, its whole window
/// reserved in the decoder's buffer at once. ruzstd reserves it when a
/// decoder is reset for a later frame, not at its first: then the buffer
/// grows with the output, in some twenty steps of a new mapping, a copy
/// and fresh pages to fault in (12 MB of them for a 2 MB window, the
/// kallsyms section of trace-cmd's files). So a frame is started twice:
/// the second start is that reset (a frame header is a few bytes).
fn start(d: &mut FrameDecoder, z: &mut &[u8]) -> Option<()> {
    // (Both through `&mut &[u8]`: one copy of ruzstd's generic init.)
    d.init(&mut { *z }).ok()?;
    d.init(z).ok()
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
/// cannot make it allocate much. `z` is freed once it is all read, before
/// the output is copied out of the window: a single-frame kallsyms
/// section holds its whole 7 MB text in the window, and the output is as
/// large again, so its 1.3 MB would be on top of the peak.
///
/// The first `head.len()` bytes go to `head`, the rest to the buffer: a
/// text section's count comes off its front without moving megabytes.
pub(crate) fn decode_vec(mut z: Vec<u8>, size: usize, head: &mut [u8]) -> Option<Vec<u8>> {
    let mut d = decoder(size);
    let mut out = alloc::vec![0u8; size.checked_sub(head.len())?];
    let (mut done, mut at) = (0usize, 0);
    while at < z.len() {
        let mut rest = &z[at..];
        start(&mut d, &mut rest)?;
        loop {
            // One block at a time, drained to the window after each: the
            // window and one block fit the buffer `start` reserved, so it
            // never grows.
            d.decode_blocks(&mut rest, BlockDecodingStrategy::UptoBlocks(1)).ok()?;
            at = z.len() - rest.len();
            if rest.is_empty() {
                rest = &[];
                z = Vec::new();
            }
            loop {
                let to = match done.checked_sub(head.len()) {
                    None => &mut head[done..],
                    Some(i) => &mut out[i..],
                };
                match d.read(to).ok()? {
                    0 => break,
                    n => done += n,
                }
            }
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
        assert_eq!(decode_vec(frame.to_vec(), 1, &mut []), None);
        assert_eq!(decode(&frame, &mut [0u8; 1]), None);
        // The same frame with a 1 KiB window decodes.
        let small = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x00, 0x09, 0x00, 0x00, b'A'];
        assert_eq!(decode_vec(small.to_vec(), 1, &mut []).as_deref(), Some(&b"A"[..]));
    }
}
