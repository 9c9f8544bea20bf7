//! A profile's result: tables of metrics per key. As text each table is a
//! block of right-aligned columns with the key last, as `perf ftrace
//! profile` prints its functions, durations in units chosen for reading;
//! as JSON lines one object per value (`{table, key, metric, value}`).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::hist::Hist;

/// What a value counts, for printing it and for comparing two of them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Unit {
    Count,
    /// Nanoseconds (the trace clock's unit): printed as ns, us, ms or s.
    Ns,
    /// A percentage: a comparison gives its absolute change.
    Pct,
    /// Per second.
    Rate,
}

/// One column: the metric's name (in JSON and comparisons), its heading.
pub struct Col {
    pub metric: &'static str,
    pub head: &'static str,
    pub unit: Unit,
}

/// One key's values, in the table's column order.
pub struct Row {
    pub key: String,
    pub vals: Vec<f64>,
    /// `--hist`: the distribution of the key's durations.
    pub hist: Option<Hist>,
}

pub struct Table {
    /// The metric names' first word (`syscalls`, `functions`, `sched`).
    pub name: &'static str,
    /// What the table shows, for its title line.
    pub about: &'static str,
    /// The key column's heading.
    pub key: &'static str,
    pub cols: &'static [Col],
    pub rows: Vec<Row>,
}

impl Table {
    pub fn new(name: &'static str, about: &'static str, key: &'static str, cols: &'static [Col]) -> Table {
        Table { name, about, key, cols, rows: Vec::new() }
    }
    pub fn row(&mut self, key: String, vals: Vec<f64>) -> &mut Row {
        debug_assert_eq!(vals.len(), self.cols.len());
        self.rows.push(Row { key, vals, hist: None });
        self.rows.last_mut().unwrap()
    }
    /// Rows by column `col` descending, then by key: the largest first.
    pub fn sort_by(&mut self, col: usize) {
        crate::sort::sort_by(&mut self.rows, |a, b| b.vals[col].total_cmp(&a.vals[col]).then_with(|| a.key.cmp(&b.key)));
    }
    /// The value of `metric` for `key` (tests, comparisons).
    pub fn get(&self, key: &str, metric: &str) -> Option<f64> {
        let c = self.cols.iter().position(|c| c.metric == metric)?;
        Some(self.rows.iter().find(|r| r.key == key)?.vals[c])
    }
}

/// Every table of one recording's profile.
#[derive(Default)]
pub struct Report {
    pub tables: Vec<Table>,
    /// Time from the first record shown to the last, and how many were shown.
    pub span: u64,
    pub records: u64,
    /// Events the ring lost (counted), and losses it could not count.
    pub lost: u64,
    pub lost_unknown: u64,
}

impl Report {
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    /// Every table as text: a title line, the column headings, the rows;
    /// with `hist` each row's distribution after the table.
    pub fn print(&self, o: &mut dyn Write) -> fmt::Result {
        write!(o, "# profile: {} records over ", self.records)?;
        put(o, Unit::Ns, self.span as f64)?;
        if self.lost > 0 || self.lost_unknown > 0 {
            write!(o, ", {} events lost", self.lost)?;
            if self.lost_unknown > 0 {
                write!(o, " (+{} losses of unknown size)", self.lost_unknown)?;
            }
        }
        o.write_str("\n")?;
        for t in &self.tables {
            write!(o, "\n# {}: {}\n#", t.name, t.about)?;
            for (i, c) in t.cols.iter().enumerate() {
                // (The `#` stands in the first column's first place.)
                write!(o, "{:>w$}", c.head, w = if i == 0 { WIDTH - 1 } else { WIDTH + 1 })?;
            }
            write!(o, "   {}\n", t.key)?;
            for r in &t.rows {
                for (i, (c, &v)) in t.cols.iter().zip(&r.vals).enumerate() {
                    if i > 0 {
                        o.write_str(" ")?;
                    }
                    cell(o, c.unit, v, WIDTH)?;
                }
                write!(o, "   {}\n", r.key)?;
            }
            for r in &t.rows {
                if let Some(h) = &r.hist {
                    write!(o, "\n# {} {}\n", t.name, r.key)?;
                    h.print(o)?;
                }
            }
        }
        Ok(())
    }

    /// Each value as one JSON object a line: `{"table":..,"key":..,
    /// "metric":..,"value":..}`, durations in ns.
    #[cfg(feature = "export")]
    pub fn jsonl(&self, out: &mut crate::export::buf::Buf) {
        use crate::export::jsonl::string;
        for t in &self.tables {
            for r in &t.rows {
                for (c, &v) in t.cols.iter().zip(&r.vals) {
                    out.put(b"{\"table\":");
                    string(out, t.name.as_bytes());
                    out.put(b",\"key\":");
                    string(out, r.key.as_bytes());
                    out.put(b",\"metric\":");
                    string(out, c.metric.as_bytes());
                    out.put(b",\"value\":");
                    // Whole numbers as integers, the rest (means,
                    // percentages, rates) with three decimals.
                    let mut s = String::new();
                    let _ = if v == round(v) as f64 { write!(s, "{}", round(v)) } else { fixed(&mut s, v, 3) };
                    out.put(s.as_bytes());
                    out.put(b"}\n");
                }
            }
        }
    }
}

/// The width of a value column.
const WIDTH: usize = 12;

/// `v` as its unit prints, right-aligned in `w` columns.
pub fn cell(o: &mut dyn Write, unit: Unit, v: f64, w: usize) -> fmt::Result {
    let mut s = String::new();
    put(&mut s, unit, v)?;
    write!(o, "{:>w$}", s, w = w)
}

/// `v` as its unit prints: durations as ns below a microsecond, then us,
/// ms, s with three decimals; counts whole (a mean with two decimals);
/// percentages and rates with two decimals.
pub fn put(o: &mut dyn Write, unit: Unit, v: f64) -> fmt::Result {
    match unit {
        Unit::Ns => {
            let a = if v < 0.0 { -v } else { v };
            let (d, u) = match a {
                a if a < 999.5 => return write!(o, "{} ns", round(v)),
                a if a < 999_999.5 => (1e3, " us"),
                a if a < 999_999_999.5 => (1e6, " ms"),
                _ => (1e9, " s"),
            };
            fixed(o, v / d, 3)?;
            o.write_str(u)
        }
        Unit::Count => number(o, v),
        Unit::Pct => {
            fixed(o, v, 2)?;
            o.write_str("%")
        }
        Unit::Rate => {
            fixed(o, v, 2)?;
            o.write_str("/s")
        }
    }
}

/// A whole number as it is; a fraction (a mean) with two decimals.
pub fn number(o: &mut dyn Write, v: f64) -> fmt::Result {
    if v == round(v) as f64 {
        write!(o, "{}", round(v))
    } else {
        fixed(o, v, 2)
    }
}

/// `v` rounded to the nearest whole number (0 for what is not finite).
fn round(v: f64) -> i64 {
    if !v.is_finite() {
        return 0;
    }
    if v < 0.0 {
        -((-v + 0.5) as i64)
    } else {
        (v + 0.5) as i64
    }
}

/// `v` with `places` decimals, in integers: core's float formatting is
/// not linked for this alone.
pub fn fixed(o: &mut dyn Write, v: f64, places: u32) -> fmt::Result {
    let m = 10i64.pow(places);
    let x = round(v * m as f64);
    let sign = if x < 0 { "-" } else { "" };
    let x = x.unsigned_abs();
    write!(o, "{}{}.{:0w$}", sign, x / m as u64, x % m as u64, w = places as usize)
}

/// `a / b`, 0 when `b` is.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(unit: Unit, v: f64) -> String {
        let mut o = String::new();
        put(&mut o, unit, v).unwrap();
        o
    }

    #[test]
    fn units_for_reading() {
        assert_eq!(s(Unit::Ns, 999.0), "999 ns");
        assert_eq!(s(Unit::Ns, 1500.0), "1.500 us");
        assert_eq!(s(Unit::Ns, 2_345_678.0), "2.346 ms");
        assert_eq!(s(Unit::Ns, 3e9), "3.000 s");
        assert_eq!(s(Unit::Count, 12.0), "12");
        assert_eq!(s(Unit::Count, 2.5), "2.50");
        assert_eq!(s(Unit::Pct, 12.345), "12.35%");
        assert_eq!(s(Unit::Rate, 4.0), "4.00/s");
    }
}
