//! Event names as users write them — `all`, `SYSTEM`, `SYSTEM:EVENT`,
//! `SYSTEM/EVENT`, a bare event name, globs of these, comma lists — resolved
//! against the `events/` directory of one tracefs (top level or instance).
//! Shared by `ftctl enable/disable/filter/trigger/format` and `ftrec -e`.

use super::{check_name, glob, Tracefs};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// One trace event, by system and name.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub struct EventRef {
    pub system: String,
    pub name: String,
}

impl EventRef {
    /// Relative path of a file in the event's directory, e.g. `format`.
    pub fn path(&self, file: &str) -> String {
        format!("events/{}/{}/{}", self.system, self.name, file)
    }
}

impl core::fmt::Display for EventRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}:{}", self.system, self.name)
    }
}

/// A tracefs error as message text: one function, not a closure per call.
fn msg(e: super::Error) -> String {
    alloc::string::ToString::to_string(&e)
}

/// Every event of a tracefs, sorted by (system, name) (directory listings
/// come back sorted).
pub fn all_events(t: &Tracefs) -> Result<Vec<EventRef>, String> {
    let mut out = Vec::new();
    // By reference: see state::options.
    for (sys, is_dir) in &t.list_dir("events").map_err(msg)? {
        if !is_dir {
            continue;
        }
        for (name, is_dir) in &t.list_dir(&format!("events/{sys}")).map_err(msg)? {
            if *is_dir {
                out.push(EventRef { system: sys.clone(), name: name.clone() });
            }
        }
    }
    Ok(out)
}

/// Resolve one user spec (see module docs) to the events it names, sorted
/// and without duplicates. An unknown name is an error that names it and
/// suggests close names.
pub fn resolve_events(t: &Tracefs, spec: &str) -> Result<Vec<EventRef>, String> {
    let all = all_events(t)?;
    resolve_in(&all, spec)
}

/// One comma-separated part of a spec: a system pattern and an event
/// pattern; `either` for a bare word, which names a system or an event.
struct Part<'a> {
    text: &'a str,
    sys: &'a str,
    ev: &'a str,
    either: bool,
    hit: bool,
}

/// `resolve_events` against an already listed catalog (sorted as
/// `all_events` gives it). One pass over the catalog keeps its order and
/// never yields an event twice.
pub fn resolve_in(all: &[EventRef], spec: &str) -> Result<Vec<EventRef>, String> {
    let mut parts = Vec::new();
    for text in spec.split(',') {
        if text.is_empty() {
            return Err(format!("empty event name in '{spec}'"));
        }
        let p = match text.split_once([':', '/']) {
            _ if text == "all" => Part { text, sys: "*", ev: "*", either: false, hit: false },
            Some((sys, ev)) => {
                check_pat("system", sys)?;
                check_pat("event", ev)?;
                let ev = if ev.is_empty() { "*" } else { ev };
                Part { text, sys, ev, either: false, hit: false }
            }
            // Like the kernel's set_event: a bare word matches systems and events.
            None => {
                check_pat("event", text)?;
                Part { text, sys: text, ev: text, either: true, hit: false }
            }
        };
        parts.push(p);
    }
    let mut out = Vec::new();
    for e in all {
        let mut any = false;
        for p in parts.iter_mut() {
            let m = if p.either {
                glob::matches(p.sys, &e.system) || glob::matches(p.ev, &e.name)
            } else {
                glob::matches(p.sys, &e.system) && glob::matches(p.ev, &e.name)
            };
            p.hit |= m;
            any |= m;
        }
        if any {
            out.push(e.clone());
        }
    }
    match parts.iter().find(|p| !p.hit) {
        Some(p) => Err(unknown(all, p.text)),
        None => Ok(out),
    }
}

/// Names may carry glob characters, but nothing that leaves the directory.
fn check_pat(kind: &str, s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Ok(());
    }
    check_name(kind, s)
}

/// "unknown event 'X'", with up to three catalog names closest to X by
/// edit distance (among systems, bare event names and `system:event`),
/// nearest first.
#[inline(never)]
fn unknown(all: &[EventRef], what: &str) -> String {
    let mut msg = format!("unknown event '{what}'");
    // SYSTEM/EVENT is compared as SYSTEM:EVENT (bytes: both are ASCII).
    let mut what = what.as_bytes().to_vec();
    for b in what.iter_mut() {
        if *b == b'/' {
            *b = b':';
        }
    }
    let what = &what[..];
    let limit = 2 + what.len() / 5;
    // (distance, index in `all`, the system rather than the event), kept
    // ordered by distance by inserting in place (after equals: the first
    // found stays first); unused slots at usize::MAX. A system is looked at
    // once (at its first event), so no name repeats.
    let mut best = [(usize::MAX, 0, false); 3];
    let mut full = String::new();
    let mut last_sys = "";
    for (i, e) in all.iter().enumerate() {
        full.clear();
        full.push_str(&e.system);
        full.push(':');
        full.push_str(&e.name);
        let mut d = distance(what, e.name.as_bytes()).min(distance(what, full.as_bytes()));
        let mut is_sys = false;
        if e.system != last_sys {
            last_sys = &e.system;
            let ds = distance(what, e.system.as_bytes());
            if ds < d {
                d = ds;
                is_sys = true;
            }
        }
        if d > limit {
            continue;
        }
        let mut at = 0;
        while at < 3 && best[at].0 <= d {
            at += 1;
        }
        if at < 3 {
            let mut k = 2;
            while k > at {
                best[k] = best[k - 1];
                k -= 1;
            }
            best[at] = (d, i, is_sys);
        }
    }
    let mut any = false;
    for &(d, i, is_sys) in &best {
        if d == usize::MAX {
            break;
        }
        msg.push_str(if any { ", " } else { " (did you mean " });
        any = true;
        msg.push_str(&all[i].system);
        if !is_sys {
            msg.push(':');
            msg.push_str(&all[i].name);
        }
    }
    if any {
        msg.push_str("?)");
    }
    msg
}

/// Levenshtein distance over bytes, one row of memory.
fn distance(a: &[u8], b: &[u8]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (diag + (ca != cb) as usize).min(up + 1).min(row[j] + 1);
            diag = up;
        }
    }
    row[b.len()]
}

/// Turn a resolved set of events on or off. Where the set covers a whole
/// system, its `events/SYSTEM/enable` is written once instead of one file per
/// event (and `events/enable` when it covers everything).
pub fn enable_events(t: &Tracefs, evs: &[EventRef], on: bool) -> Result<(), String> {
    let all = all_events(t)?;
    enable_in(t, &all, evs, on)
}

/// `enable_events` with the catalog already listed; `evs` in catalog order.
pub fn enable_in(t: &Tracefs, all: &[EventRef], evs: &[EventRef], on: bool) -> Result<(), String> {
    let val: &[u8] = if on { b"1" } else { b"0" };
    if !evs.is_empty() && evs.len() == all.len() && evs.iter().zip(all).all(|(a, b)| a == b) {
        return t.write("events/enable", val).map_err(msg);
    }
    let mut done = 0;
    let mut i = 0;
    while i < evs.len() {
        let sys = &evs[i].system;
        let n = evs[i..].iter().take_while(|e| &e.system == sys).count();
        let total = all.iter().filter(|e| &e.system == sys).count();
        let sys_enable = format!("events/{sys}/enable");
        if n == total && n > 1 && t.exists(&sys_enable) {
            t.write(&sys_enable, val).map_err(msg)?;
            done += n;
        } else {
            for e in &evs[i..i + n] {
                let f = e.path("enable");
                // The ftrace system's events (print, function, ...) are
                // written by the tracers themselves and have no switch;
                // they are skipped inside a larger set.
                if t.exists(&f) {
                    t.write(&f, val).map_err(msg)?;
                    done += 1;
                }
            }
        }
        i += n;
    }
    match evs.first() {
        Some(e) if done == 0 => Err(format!("event {}:{} cannot be enabled or disabled (no enable file)", e.system, e.name)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn ev(s: &str, n: &str) -> EventRef {
        EventRef { system: s.into(), name: n.into() }
    }

    fn cat() -> Vec<EventRef> {
        let v = vec![
            ev("sched", "sched_switch"),
            ev("sched", "sched_wakeup"),
            ev("sched", "sched_waking"),
            ev("irq", "irq_handler_entry"),
            ev("irq", "irq_handler_exit"),
            ev("ftrace", "print"),
            ev("syscalls", "sys_enter_read"),
        ];
        let mut v = v;
        crate::sort::sort_by(&mut v, |a, b| (&a.system, &a.name).cmp(&(&b.system, &b.name)));
        v
    }

    fn names(v: &[EventRef]) -> Vec<String> {
        v.iter().map(|e| format!("{e}")).collect()
    }

    #[test]
    fn resolve_forms() {
        let c = cat();
        assert_eq!(resolve_in(&c, "all").unwrap().len(), c.len());
        assert_eq!(names(&resolve_in(&c, "sched").unwrap()), ["sched:sched_switch", "sched:sched_wakeup", "sched:sched_waking"]);
        assert_eq!(names(&resolve_in(&c, "sched:sched_switch").unwrap()), ["sched:sched_switch"]);
        assert_eq!(names(&resolve_in(&c, "sched/sched_switch").unwrap()), ["sched:sched_switch"]);
        assert_eq!(names(&resolve_in(&c, "sched_switch").unwrap()), ["sched:sched_switch"]);
        assert_eq!(names(&resolve_in(&c, "sched:sched_wak*").unwrap()), ["sched:sched_wakeup", "sched:sched_waking"]);
        assert_eq!(names(&resolve_in(&c, "*:print").unwrap()), ["ftrace:print"]);
        assert_eq!(names(&resolve_in(&c, "irq:").unwrap()), ["irq:irq_handler_entry", "irq:irq_handler_exit"]);
        assert_eq!(names(&resolve_in(&c, "print,sched_switch").unwrap()), ["ftrace:print", "sched:sched_switch"]);
        assert_eq!(resolve_in(&c, "*").unwrap().len(), c.len());
    }

    #[test]
    fn unknown_suggests() {
        let c = cat();
        let e = resolve_in(&c, "sched_swich").unwrap_err();
        assert!(e.contains("unknown event 'sched_swich'") && e.contains("sched:sched_switch"), "{e}");
        let e = resolve_in(&c, "shed").unwrap_err();
        assert!(e.contains("did you mean sched"), "{e}");
        let e = resolve_in(&c, "zzzzzzzzzzzz").unwrap_err();
        assert_eq!(e, "unknown event 'zzzzzzzzzzzz'");
        assert!(resolve_in(&c, "sched:nope*").is_err());
    }

    #[test]
    fn refuses_paths() {
        let c = cat();
        assert!(resolve_in(&c, "../sched").unwrap_err().contains("invalid"));
        assert!(resolve_in(&c, "sched:..").unwrap_err().contains("invalid"));
        assert!(resolve_in(&c, "a/b/c").unwrap_err().contains("invalid"));
        assert!(resolve_in(&c, "sched\n").is_err());
    }

    #[test]
    fn distances() {
        assert_eq!(distance(b"kitten", b"sitting"), 3);
        assert_eq!(distance(b"", b"abc"), 3);
        assert_eq!(distance(b"same", b"same"), 0);
    }

    /// Against the running kernel, when there is one we may read.
    #[test]
    fn live_catalog() {
        let Some(t) = crate::tracefs::live_for_test() else { return };
        let all = match all_events(&t) {
            Ok(a) => a,
            Err(e) => {
                std::println!("skipped: {e}");
                return;
            }
        };
        assert!(all.iter().any(|e| e.system == "sched" && e.name == "sched_switch"));
        assert!(all.windows(2).all(|w| (&w[0].system, &w[0].name) < (&w[1].system, &w[1].name)));
        assert_eq!(resolve_events(&t, "sched/sched_switch").unwrap(), [ev("sched", "sched_switch")]);
        assert!(resolve_events(&t, "no_such_event_x").unwrap_err().contains("no_such_event_x"));
    }
}
