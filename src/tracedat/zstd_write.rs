//! zstd frames through ruzstd's encoder (pure Rust, no_std + alloc with
//! default features off, no unsafe in its public path), for the writer.
//!
//! ruzstd implements one level, `Fastest` (about zstd's level 1: greedy
//! matches in a 128 KiB window), which suits a recorder: it runs on the
//! board, after the recording, and trace pages are repetitive enough that
//! level 1 gets most of what higher levels would. Frames carry no content
//! size and no checksum, as trace-cmd's (it turns the content size off):
//! the block header around each frame says both sizes.

use alloc::vec::Vec;
use ruzstd::encoding::{compress, CompressionLevel};

/// Append one zstd frame holding `data` to `out`.
pub(crate) fn encode(data: &[u8], out: &mut Vec<u8>) {
    compress(data, out, CompressionLevel::Fastest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// What the encoder writes, the decoder reads back: text, trace-like
    /// binary, incompressible bytes, one repeated byte (an RLE block) and
    /// nothing at all, each across several 128 KiB blocks where it can.
    #[test]
    fn frames_decode_to_their_input() {
        let text: Vec<u8> = b"ffffffff81000000 T _stext\n".iter().copied().cycle().take(300_000).collect();
        let mut trace = Vec::new();
        for i in 0u32..40_000 {
            trace.extend_from_slice(&(i.wrapping_mul(0x9e37_79b9) >> 20).to_le_bytes());
            trace.extend_from_slice(&[0x21, 0, 0x81, 0x12]);
        }
        let mut noise = vec![0u8; 200_000];
        let mut x = 0x1234_5678u32;
        for b in noise.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        for data in [text, trace, noise, vec![7u8; 150_000], Vec::new()] {
            let mut z = Vec::new();
            encode(&data, &mut z);
            assert_eq!(crate::tracedat::zstd::decode_vec(z.clone(), data.len(), &mut []).as_deref(), Some(&data[..]));
        }
    }
}
