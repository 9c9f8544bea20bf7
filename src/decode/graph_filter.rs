//! `--max-depth N` and `--graph FUNC` over function_graph records (both
//! styles): which records to show, and at what depth.

use alloc::string::String;
use alloc::vec::Vec;

use super::kind::{ftrace_kind, Ftrace};
use crate::cursor::{read_uint, Endian};
use crate::format::Event;
use crate::format::FieldAt;
use crate::text::Env;

/// What to do with a record.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    Hide,
    /// Keep, with the graph depth field lowered by this much (the subtree
    /// of `--graph FUNC` starts at depth 0, as set_graph_function gives).
    Rebase(u32),
}

/// `--max-depth` / `--graph` over funcgraph_entry/exit records.
pub struct GraphFilter<'a> {
    env: &'a dyn Env,
    endian: Endian,
    /// (id, func, depth, is_exit)
    ids: Vec<(u16, FieldAt, FieldAt, bool)>,
    pub max_depth: Option<u32>,
    pub graph: Option<String>,
    /// pid → depth of its FUNC call being shown.
    inside: Vec<(i32, i64)>,
}

impl<'a> GraphFilter<'a> {
    #[inline(never)]
    pub fn new(env: &'a dyn Env, events: &[Event], endian: Endian) -> Self {
        let mut ids = Vec::new();
        for e in events {
            let exit = match ftrace_kind(e) {
                Some(Ftrace::GraphEntry) => false,
                Some(Ftrace::GraphExit) => true,
                _ => continue,
            };
            if let (Some(f), Some(d)) = (e.field_at("func"), e.field_at("depth")) {
                ids.push((e.id, f, d, exit));
            }
        }
        GraphFilter { env, endian, ids, max_depth: None, graph: None, inside: Vec::new() }
    }

    pub fn active(&self) -> bool {
        self.max_depth.is_some() || self.graph.is_some()
    }

    /// Decide for one record, in merge order (the `--graph` state follows
    /// each pid into and out of FUNC).
    #[inline(never)]
    pub fn check(&mut self, d: &[u8]) -> Verdict {
        let e = self.endian;
        let ty = read_uint(d, 0, 2, e).unwrap_or(0) as u16;
        let Some(&(_, func, depth, exit)) = self.ids.iter().find(|x| x.0 == ty) else { return Verdict::Keep };
        let dep = depth.get(d, e) as i64;
        let mut base = 0;
        if let Some(g) = &self.graph {
            let pid = read_uint(d, 4, 4, e).unwrap_or(0) as u32 as i32;
            let pos = self.inside.iter().position(|x| x.0 == pid);
            let is_func = || self.env.sym(func.get(d, e)).map_or(false, |s| s.name == g.as_str());
            match pos {
                Some(i) if dep > self.inside[i].1 => base = self.inside[i].1,
                Some(i) if dep == self.inside[i].1 && exit => {
                    base = self.inside[i].1;
                    self.inside.remove(i);
                }
                Some(i) if !exit && is_func() => {
                    self.inside[i].1 = dep;
                    base = dep;
                }
                Some(i) => {
                    // Unwound past FUNC without its exit (lost events).
                    self.inside.remove(i);
                    return Verdict::Hide;
                }
                None if !exit && is_func() => {
                    self.inside.push((pid, dep));
                    base = dep;
                }
                None => return Verdict::Hide,
            }
        }
        if let Some(m) = self.max_depth {
            if dep - base >= m as i64 {
                return Verdict::Hide;
            }
        }
        if base > 0 {
            Verdict::Rebase(base as u32)
        } else {
            Verdict::Keep
        }
    }

    /// Apply a [`Verdict::Rebase`] to a copy of the record.
    pub fn rebase(&self, d: &mut [u8], by: u32) {
        let e = self.endian;
        let ty = read_uint(d, 0, 2, e).unwrap_or(0) as u16;
        let Some(&(_, _, depth, _)) = self.ids.iter().find(|x| x.0 == ty) else { return };
        let v = (depth.get(d, e) as i64 - by as i64) as u32;
        let o = depth.off as usize;
        if let Some(s) = d.get_mut(o..o + 4) {
            s.copy_from_slice(&if e == Endian::Little { v.to_le_bytes() } else { v.to_be_bytes() });
        }
    }
}
