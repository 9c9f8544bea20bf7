//! Keys to dense indices: each part keeps its counts in a `Vec` indexed
//! by [`Keys`] (numbers: addresses, pids, pairs of them) or [`Names`]. One
//! sorted list each, not a map per kind of count: the board-size build
//! leaves profiles out, but the workstation build pays for every copy of
//! a map's code.

use alloc::string::String;
use alloc::vec::Vec;

/// Numbers (up to two u64 in one key) to indices, in order of first sight.
#[derive(Default)]
pub struct Keys {
    sorted: Vec<(u128, u32)>,
}

impl Keys {
    /// The index of `k`, a new one (the count so far) when it is new.
    pub fn index(&mut self, k: u128) -> usize {
        match self.sorted.binary_search_by(|e| e.0.cmp(&k)) {
            Ok(i) => self.sorted[i].1 as usize,
            Err(i) => {
                let n = self.sorted.len();
                self.sorted.insert(i, (k, n as u32));
                n
            }
        }
    }
    pub fn get(&self, k: u128) -> Option<usize> {
        let i = self.sorted.binary_search_by(|e| e.0.cmp(&k)).ok()?;
        Some(self.sorted[i].1 as usize)
    }
    /// Every (key, index), by key.
    pub fn iter(&self) -> impl Iterator<Item = (u128, usize)> + '_ {
        self.sorted.iter().map(|&(k, i)| (k, i as usize))
    }
}

/// Two numbers as one key.
pub fn pair(a: u64, b: u64) -> u128 {
    (a as u128) << 64 | b as u128
}

/// Names to indices, as [`Keys`]; [`Names::list`] gives them by index.
#[derive(Default)]
pub struct Names {
    sorted: Vec<(String, u32)>,
}

impl Names {
    pub fn index(&mut self, k: &str) -> usize {
        match self.sorted.binary_search_by(|e| e.0.as_str().cmp(k)) {
            Ok(i) => self.sorted[i].1 as usize,
            Err(i) => {
                let n = self.sorted.len();
                self.sorted.insert(i, (k.into(), n as u32));
                n
            }
        }
    }
    pub fn get(&self, k: &str) -> Option<usize> {
        let i = self.sorted.binary_search_by(|e| e.0.as_str().cmp(k)).ok()?;
        Some(self.sorted[i].1 as usize)
    }
    /// Every name, by index.
    pub fn list(&self) -> Vec<&str> {
        let mut v = alloc::vec![""; self.sorted.len()];
        for (k, i) in &self.sorted {
            v[*i as usize] = k;
        }
        v
    }
}

/// Entry `i` of `v`, which grows as needed.
pub fn slot<T: Default>(v: &mut Vec<T>, i: usize) -> &mut T {
    if v.len() <= i {
        v.resize_with(i + 1, T::default);
    }
    &mut v[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_indices_in_order_of_sight() {
        let mut k = Keys::default();
        assert_eq!([k.index(50), k.index(7), k.index(50), k.index(pair(1, 2))], [0, 1, 0, 2]);
        assert_eq!(k.get(7), Some(1));
        assert_eq!(k.get(8), None);
        assert_eq!(k.iter().collect::<Vec<_>>(), [(7, 1), (50, 0), (pair(1, 2), 2)]);
        let mut n = Names::default();
        assert_eq!([n.index("b"), n.index("a"), n.index("b")], [0, 1, 0]);
        assert_eq!(n.list(), ["b", "a"]);
    }
}
