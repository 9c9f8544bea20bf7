//! `ftcat --compare BASE[,BASE..] NEW[,NEW..]`: every metric of the
//! profiles (`table.key.metric`) side by side, as the LKP robot compares
//! two kernels: the mean of each side's runs with its relative standard
//! deviation (`± N%`, shown from 2% on), the change (`%change`, or the
//! absolute difference for values that are already percentages), rows
//! ordered by the size of the change. A change within the noise (no more
//! than both sides' standard deviations together) or below the
//! `--min-change` threshold is left out unless asked for; a metric found
//! on one side only is shown as such.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::keys::{slot, Names};
use super::table::{fixed, put, Report, Unit};

/// One side's values of a metric: the mean of its runs and their spread.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Side {
    pub mean: f64,
    /// Sample standard deviation (0 for one run).
    pub stddev: f64,
}

impl Side {
    pub fn of(v: &[f64]) -> Side {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let stddev = if v.len() < 2 { 0.0 } else { sqrt(v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0)) };
        Side { mean, stddev }
    }
    /// The standard deviation in percent of the mean.
    pub fn rsd(&self) -> f64 {
        if self.mean == 0.0 {
            0.0
        } else {
            100.0 * self.stddev / abs(self.mean)
        }
    }
}

/// One row of the comparison.
#[derive(Debug)]
pub struct Change {
    pub metric: String,
    pub unit: Unit,
    pub base: Option<Side>,
    pub new: Option<Side>,
}

impl Change {
    /// The change: in percent of the base mean, or (percentages) in points.
    pub fn size(&self) -> Option<f64> {
        let (b, n) = (self.base?, self.new?);
        Some(match self.unit {
            Unit::Pct => n.mean - b.mean,
            _ if b.mean == 0.0 && n.mean == 0.0 => 0.0,
            _ if b.mean == 0.0 => f64::INFINITY,
            _ => 100.0 * (n.mean - b.mean) / abs(b.mean),
        })
    }

    /// Beyond the noise: more than both spreads together, and at least
    /// `min` (percent, or points for percentages).
    pub fn changed(&self, min: f64) -> bool {
        let (Some(b), Some(n), Some(s)) = (self.base, self.new, self.size()) else { return true };
        abs(n.mean - b.mean) > b.stddev + n.stddev && abs(s) >= min
    }
}

/// What a comparison shows.
#[derive(Clone, Copy, Debug)]
pub struct CompareOptions {
    /// `--min-change PCT`: smaller changes are noise (default 5).
    pub min_change: f64,
    /// `-v`: every metric, changed or not.
    pub all: bool,
}

/// `--min-change`'s percentage (`5`, `2.5`), read without core's float
/// parser.
pub fn parse_pct(s: &str) -> Option<f64> {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    let digits = |t: &str| t.len() <= 9 && t.bytes().all(|b| b.is_ascii_digit());
    if i.is_empty() && f.is_empty() || !digits(i) || !digits(f) {
        return None;
    }
    let whole: u64 = if i.is_empty() { 0 } else { i.parse().ok()? };
    let frac: u64 = if f.is_empty() { 0 } else { f.parse().ok()? };
    Some(whole as f64 + frac as f64 / 10u64.pow(f.len() as u32) as f64)
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions { min_change: 5.0, all: false }
    }
}

/// Every metric of `r`: `table.key.metric`, its unit and value.
pub fn metrics(r: &Report) -> Vec<(String, Unit, f64)> {
    let mut m = Vec::new();
    for t in &r.tables {
        for row in &t.rows {
            for (c, &v) in t.cols.iter().zip(&row.vals) {
                m.push((format!("{}.{}.{}", t.name, row.key, c.metric), c.unit, v));
            }
        }
    }
    m
}

/// One side: each metric's unit and its values over the runs (a run
/// without it adds none), indexed by `Names`.
#[derive(Default)]
struct Runs {
    names: Names,
    vals: Vec<(Option<Unit>, Vec<f64>)>,
}

fn gather(runs: &[Report]) -> Runs {
    let mut all = Runs::default();
    for r in runs {
        for (k, u, v) in metrics(r) {
            let e = slot(&mut all.vals, all.names.index(&k));
            e.0 = Some(u);
            e.1.push(v);
        }
    }
    all
}

/// The rows to show, the largest change first; then the metrics found on
/// one side only, by name.
pub fn compare(base: &[Report], new: &[Report], o: CompareOptions) -> Vec<Change> {
    let (b, n) = (gather(base), gather(new));
    let mut rows = Vec::new();
    for (side, other, is_base) in [(&b, &n, true), (&n, &b, false)] {
        for (i, k) in side.names.list().into_iter().enumerate() {
            let (u, v) = &side.vals[i];
            let theirs = other.names.get(k).map(|j| Side::of(&other.vals[j].1));
            if !is_base && theirs.is_some() {
                continue;
            }
            let (mine, theirs) = (Some(Side::of(v)), theirs);
            let (base, new) = if is_base { (mine, theirs) } else { (theirs, mine) };
            rows.push(Change { metric: k.into(), unit: u.unwrap_or(Unit::Count), base, new });
        }
    }
    rows.retain(|c| o.all || c.changed(o.min_change));
    let key = |c: &Change| c.size().map_or(-1.0, abs);
    crate::sort::sort_by(&mut rows, |x, y| key(y).total_cmp(&key(x)).then_with(|| x.metric.cmp(&y.metric)));
    rows
}

/// The rows as LKP prints them: base mean, its spread, the change, new
/// mean, its spread, the metric.
pub fn print(o: &mut dyn Write, rows: &[Change]) -> fmt::Result {
    write!(o, "{:>10}{:6}{:>11}{:>11}\n{:>16}{:22}%stddev\n", "base", "", "%change", "new", "%stddev", "")?;
    for c in rows {
        side(o, c.unit, c.base, 10)?;
        let mut ch = String::new();
        match c.size() {
            None if c.base.is_none() => ch.push_str("new"),
            None => ch.push_str("gone"),
            Some(s) if s.is_infinite() => ch.push_str("+Inf%"),
            Some(s) => {
                ch.push(if s < 0.0 { '-' } else { '+' });
                fixed(&mut ch, abs(s), 1)?;
                ch.push(if c.unit == Unit::Pct { ' ' } else { '%' });
            }
        }
        // One space always: a change of seven digits fills the column and
        // would otherwise run into the base's spread (`± 75%+2735687.9%`).
        write!(o, " {:>10}", ch)?;
        side(o, c.unit, c.new, 11)?;
        write!(o, "  {}\n", c.metric)?;
    }
    Ok(())
}

/// A mean right-aligned in `w` columns, then `± N%` when its spread is 2% or more.
fn side(o: &mut dyn Write, unit: Unit, s: Option<Side>, w: usize) -> fmt::Result {
    let mut v = String::new();
    let mut sd = String::new();
    if let Some(s) = s {
        put(&mut v, unit, s.mean)?;
        if s.rsd() >= 2.0 {
            write!(sd, " \u{b1}{:>3}%", (s.rsd() + 0.5) as u64)?;
        }
    }
    write!(o, "{:>w$}{:<6}", v, sd, w = w)
}

fn abs(x: f64) -> f64 {
    if x < 0.0 {
        -x
    } else {
        x
    }
}

/// Square root by Newton's method (core has no `f64::sqrt`).
fn sqrt(x: f64) -> f64 {
    if x <= 0.0 || !x.is_finite() {
        return 0.0;
    }
    let mut r = if x > 1.0 { x / 2.0 } else { 1.0 };
    for _ in 0..64 {
        let next = 0.5 * (r + x / r);
        if next == r {
            break;
        }
        r = next;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::table::{Col, Table};

    static COLS: &[Col] = &[Col { metric: "count", head: "Count", unit: Unit::Count }, Col { metric: "busy_pct", head: "Busy", unit: Unit::Pct }];

    fn run(rows: &[(&str, f64, f64)]) -> Report {
        let mut t = Table::new("t", "", "Key", COLS);
        for &(k, a, b) in rows {
            t.row(k.into(), alloc::vec![a, b]);
        }
        Report { tables: alloc::vec![t], ..Report::default() }
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_pct("5"), Some(5.0));
        assert_eq!(parse_pct("2.5"), Some(2.5));
        assert_eq!(parse_pct(".5"), Some(0.5));
        for bad in ["", ".", "x", "-1", "1e3", "1.2.3"] {
            assert_eq!(parse_pct(bad), None, "{bad}");
        }
    }

    #[test]
    fn spread_and_square_root() {
        assert_eq!(sqrt(16.0), 4.0);
        let s = Side::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(s.mean, 5.0);
        assert!(abs(s.stddev - sqrt(32.0 / 7.0)) < 1e-12);
        assert_eq!(Side::of(&[3.0]).stddev, 0.0);
    }

    #[test]
    fn the_same_recording_changes_nothing() {
        let a = run(&[("x", 10.0, 50.0)]);
        let b = run(&[("x", 10.0, 50.0)]);
        assert!(compare(core::slice::from_ref(&a), core::slice::from_ref(&b), CompareOptions::default()).is_empty());
        assert_eq!(compare(&[a], &[b], CompareOptions { all: true, ..Default::default() }).len(), 2);
    }

    #[test]
    fn noise_threshold_order_and_one_sided_rows() {
        // x: 100 → 200 (+100%); y: 100±~10 → 110±~10, within the noise;
        // z: 100 → 103 (+3%), below 5%; busy 50 → 40 points (-10.0).
        let base = [run(&[("x", 100.0, 50.0), ("y", 90.0, 50.0), ("z", 100.0, 50.0), ("gone", 1.0, 0.0)]), run(&[("x", 100.0, 50.0), ("y", 110.0, 50.0), ("z", 100.0, 50.0), ("gone", 1.0, 0.0)])];
        let new = [run(&[("x", 200.0, 40.0), ("y", 100.0, 50.0), ("z", 103.0, 50.0), ("new", 2.0, 0.0)]), run(&[("x", 200.0, 40.0), ("y", 120.0, 50.0), ("z", 103.0, 50.0), ("new", 2.0, 0.0)])];
        let rows = compare(&base, &new, CompareOptions::default());
        let names: Vec<&str> = rows.iter().map(|c| c.metric.as_str()).collect();
        assert_eq!(names, ["t.x.count", "t.x.busy_pct", "t.gone.busy_pct", "t.gone.count", "t.new.busy_pct", "t.new.count"]);
        let mut s = String::new();
        print(&mut s, &rows).unwrap();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "      base          %change        new");
        assert_eq!(lines[1], "         %stddev                      %stddev");
        assert_eq!(lines[2], "       100          +100.0%        200        t.x.count");
        assert_eq!(lines[3], "    50.00%           -10.0      40.00%        t.x.busy_pct");
        assert_eq!(lines[5], "         1             gone                   t.gone.count");
        assert_eq!(lines[7], "                        new          2        t.new.count");
        // y's spread: ± 15.7% in base, shown as ± 16%.
        let rows = compare(&base, &new, CompareOptions { all: true, ..Default::default() });
        let y = rows.iter().find(|c| c.metric == "t.y.count").unwrap();
        let mut s = String::new();
        print(&mut s, core::slice::from_ref(y)).unwrap();
        assert_eq!(s.lines().nth(2).unwrap(), "       100 \u{b1} 14%     +10.0%        110 \u{b1} 13%  t.y.count");
    }

    #[test]
    fn a_change_wider_than_its_column_stays_apart() {
        // 2 ± 71% → 100000: +4999900.0%, eleven characters.
        let base = [run(&[("x", 1.0, 50.0)]), run(&[("x", 3.0, 50.0)])];
        let new = [run(&[("x", 100000.0, 50.0)]), run(&[("x", 100000.0, 50.0)])];
        let rows = compare(&base, &new, CompareOptions::default());
        let x = rows.iter().find(|c| c.metric == "t.x.count").unwrap();
        let mut s = String::new();
        print(&mut s, core::slice::from_ref(x)).unwrap();
        assert!(s.lines().nth(2).unwrap().contains("\u{b1} 71% +4999900.0% "), "{s}");
    }
}
