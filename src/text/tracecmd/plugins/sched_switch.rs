//! plugin_sched_switch's task-state letters (write_state()): bit i of
//! `prev_state` prints letter i, `|` between them, `R` for none.
//!
//! libtraceevent 1.7 had the letters built in, from kernels before
//! TASK_PARKED and TASK_IDLE moved the bits: on 6.x they are stale (an
//! idle kthread shows `W`, an exiting task `X` for what the kernel calls
//! `Z`). 1.8 reads them from the event's own `__print_flags()` table
//! (get_states()), and then agrees with the kernel.

use crate::util::split_str;

/// Letters by bit, as far as the first bit without one (the plugin takes
/// strlen() of a 32-byte array filled by bit index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct States {
    letters: [u8; 32],
}

impl States {
    /// libtraceevent 1.7's fixed letters.
    pub const V1_7: States = States::fixed(b"SDTtZXxW");
    /// libtraceevent 1.8+ when the format has no table for prev_state.
    const V1_8: States = States::fixed(b"SDTtXZPI");

    const fn fixed(s: &[u8]) -> States {
        let mut letters = [0u8; 32];
        let mut i = 0;
        while i < s.len() {
            letters[i] = s[i];
            i += 1;
        }
        States { letters }
    }

    /// libtraceevent 1.8+: the letters of the first `__print_flags()` in
    /// sched_switch's print fmt whose value reads `REC->prev_state`; each
    /// `{ value, "name" }` gives the name's first byte to value's lowest
    /// set bit. Values are taken as strtoul() takes libtraceevent's text
    /// of them (the kernel writes them as hex literals).
    pub fn of_format(print_fmt: &str) -> States {
        let mut rest = print_fmt;
        while let Some((_, args)) = split_str(rest, "__print_flags(", false) {
            rest = args;
            let args = call_args(rest);
            if !args.first().is_some_and(|a| reads_field(a, "prev_state")) {
                continue;
            }
            let mut st = States { letters: [0; 32] };
            for e in args.iter().skip(2) {
                let e = e.trim_ascii().trim_start_matches('{').trim_end_matches('}');
                let Some((v, name)) = e.split_once(',') else { continue };
                let (v, first) = (strtoul(v.trim_ascii()), name.trim_ascii().strip_prefix('"').and_then(|n| n.bytes().next()));
                // (A zero value would hang the plugin's bit loop: none is
                // in a kernel's table.)
                if v == 0 {
                    continue;
                }
                let bit = v.trailing_zeros() as usize;
                if bit < 32 {
                    st.letters[bit] = match first {
                        Some(b'"') | None => 0,
                        Some(c) => c,
                    };
                }
            }
            return st;
        }
        States::V1_8
    }

    /// write_state(): the letters of the set bits, `R` when none is.
    pub fn write(&self, s: &mut alloc::string::String, v: u64) {
        let mut found = false;
        for (i, &c) in self.letters.iter().take_while(|&&c| c != 0).enumerate() {
            if v & (1 << i) != 0 {
                if found {
                    s.push('|');
                }
                found = true;
                s.push(c as char);
            }
        }
        if !found {
            s.push('R');
        }
    }
}

/// The top-level arguments of a call whose `(` was just passed, up to its
/// `)`.
pub(crate) fn call_args(s: &str) -> alloc::vec::Vec<&str> {
    let mut v = alloc::vec::Vec::new();
    let (mut depth, mut q, mut start) = (0i32, false, 0);
    let b = s.as_bytes();
    // The pieces start and end at ASCII bytes: `get` never misses a
    // character boundary.
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if q => i += 1,
            b'"' => q = !q,
            b'(' | b'[' | b'{' if !q => depth += 1,
            b')' if !q && depth == 0 => {
                v.push(s.get(start..i).unwrap_or(""));
                return v;
            }
            b')' | b']' | b'}' if !q => depth -= 1,
            b',' if !q && depth == 0 => {
                v.push(s.get(start..i).unwrap_or(""));
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    v
}

/// Does expression `a` read `REC->name` (not a longer name)?
fn reads_field(a: &str, name: &str) -> bool {
    let mut rest = a;
    while let Some((_, field)) = split_str(rest, "REC->", false) {
        rest = field;
        if rest.strip_prefix(name).is_some_and(|after| !after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')) {
            return true;
        }
    }
    false
}

/// C's strtoul(s, NULL, 0): the longest prefix in base 16 (`0x`), 8
/// (leading `0`) or 10; 0 when none.
fn strtoul(s: &str) -> u64 {
    let (digits, base) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (h, 16)
    } else if s.starts_with('0') {
        (s, 8)
    } else {
        (s, 10)
    };
    let mut v = 0u64;
    for c in digits.chars() {
        match c.to_digit(base) {
            Some(d) => v = v.wrapping_mul(base as u64).wrapping_add(d as u64),
            None => break,
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    const FMT_6_12: &str = r#""prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s%s ==> next_comm=%s next_pid=%d next_prio=%d", REC->prev_comm, REC->prev_pid, REC->prev_prio, (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : "", REC->next_comm, REC->next_pid, REC->next_prio"#;

    fn show(st: &States, v: u64) -> String {
        let mut s = String::new();
        st.write(&mut s, v);
        s
    }

    #[test]
    fn letters_from_the_format_or_built_in() {
        let st = States::of_format(FMT_6_12);
        assert_eq!((show(&st, 0x80), show(&st, 0x10), show(&st, 0x20), show(&st, 0x3)), ("I".into(), "X".into(), "Z".into(), "S|D".into()));
        // 1.7: stale letters; bits past the table: R.
        assert_eq!((show(&States::V1_7, 0x80), show(&States::V1_7, 0x10), show(&States::V1_7, 0x100)), ("W".into(), "Z".into(), "R".into()));
        // No table: 1.8's fallback. A gap ends the letters.
        assert_eq!(States::of_format(r#""%d", REC->prev_state"#), States::V1_8);
        let gap = States::of_format(r#""%s", __print_flags(REC->prev_state, "|", { 1, "S" }, { 4, "T" })"#);
        assert_eq!((show(&gap, 1), show(&gap, 4)), ("S".into(), "R".into()));
        assert_eq!(strtoul("0x10"), 16);
        assert_eq!(strtoul("010"), 8);
        assert_eq!(strtoul("12UL"), 12);
    }
}
