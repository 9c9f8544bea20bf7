//! `--hist`: a log2 histogram of durations, printed as `perf ftrace
//! latency` prints its own (a bucket a line, with a bar of `#`).

use alloc::vec::Vec;
use core::fmt::{self, Write};

/// Counts of durations per power of two: bucket 0 holds 0 ns, bucket k
/// holds [2^(k-1), 2^k) ns.
#[derive(Clone, Default, Debug, PartialEq)]
pub struct Hist {
    pub buckets: Vec<u64>,
}

/// The bar's width, as perf's.
const BAR: usize = 46;

impl Hist {
    pub fn add(&mut self, ns: u64) {
        let k = (64 - ns.leading_zeros()) as usize;
        if self.buckets.len() <= k {
            self.buckets.resize(k + 1, 0);
        }
        self.buckets[k] += 1;
    }

    /// From the first bucket with a count to the last: the range (as
    /// perf, ns up to 1024, then us, ms, s in steps of 1024) and its bar.
    pub fn print(&self, o: &mut dyn Write) -> fmt::Result {
        let total: u64 = self.buckets.iter().sum();
        let Some(lo) = self.buckets.iter().position(|&n| n > 0) else { return Ok(()) };
        let hi = self.buckets.iter().rposition(|&n| n > 0).unwrap_or(lo);
        write!(o, "#   DURATION     |      COUNT | GRAPH{:w$}|\n", "", w = BAR - 5 + 1)?;
        for k in lo..=hi {
            let (start, stop) = if k == 0 { (0, 1) } else { (1u64 << (k - 1), 1u64 << k) };
            // The unit of the bucket's start (512 - 1024 ns, then 1 - 2 us).
            let step = if start == 0 { 0 } else { ((63 - start.leading_zeros()) / 10).min(3) as usize };
            let unit = ["ns", "us", "ms", "s "][step];
            let sh = 10 * step;
            let n = self.buckets[k];
            let bar = (n as u128 * BAR as u128 / total.max(1) as u128) as usize;
            write!(o, "  {:>4} - {:>4} {} | {:>10} | {:#<bar$}{:w$} |\n", start >> sh, stop >> sh, unit, n, "", "", bar = bar, w = BAR - bar)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    #[test]
    fn log2_buckets_and_bars() {
        let mut h = Hist::default();
        for ns in [0, 1, 3, 3, 1500, 1500, 1500, 1500] {
            h.add(ns);
        }
        assert_eq!(h.buckets, [1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 4]);
        let mut s = String::new();
        h.print(&mut s).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "#   DURATION     |      COUNT | GRAPH                                          |");
        assert_eq!(lines[1], "     0 -    1 ns |          1 | #####                                          |");
        assert_eq!(lines[3], "     2 -    4 ns |          2 | ###########                                    |");
        // 1024-2048 ns: perf's `1 - 2 us`.
        assert_eq!(lines[12], "     1 -    2 us |          4 | #######################                        |");
        assert!(lines.iter().all(|l| l.len() == lines[0].len()));
    }
}
