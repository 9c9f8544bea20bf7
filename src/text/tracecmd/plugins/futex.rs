//! plugin_futex: `syscalls:sys_enter_futex` as the futex operation's name
//! and the arguments that operation uses (`op=FUTEX_WAIT|FUTEX_PRIVATE_FLAG
//! uaddr=0x7f1c02a4 val=0x00000000 utime=0x00000000`), instead of the six
//! hex numbers of the syscall's print fmt. libtraceevent 1.7 and 1.9 ship
//! the same plugin.

use alloc::string::String;

use super::super::Append;

/// The fields the plugin reads, in the order it reads them (the first one
/// missing ends it: see [`write`]).
pub const FIELDS: [&str; 6] = ["uaddr", "op", "val", "utime", "uaddr2", "val3"];

/// An argument an operation prints after `uaddr`: its label, the index of
/// its field in [`FIELDS`], and whether it prints as `0x%08llx` (else `%llu`).
type Shown = (&'static str, usize, bool);

const VAL_HEX: Shown = ("val", 2, true);
const VAL: Shown = ("val", 2, false);
const UTIME: Shown = ("utime", 3, true);
const VAL2: Shown = ("val2", 3, false);
const UADDR2: Shown = ("uaddr2", 4, true);
const VAL3: Shown = ("val3", 5, true);

/// futex_op_tbl, indexed by the command (`op & FUTEX_CMD_MASK`).
const OPS: &[(&str, &[Shown])] = &[
    ("FUTEX_WAIT", &[VAL_HEX, UTIME]),
    ("FUTEX_WAKE", &[VAL]),
    ("FUTEX_FD", &[VAL]),
    ("FUTEX_REQUEUE", &[VAL, VAL2, UADDR2]),
    ("FUTEX_CMP_REQUEUE", &[VAL, VAL2, UADDR2, VAL3]),
    ("FUTEX_WAKE_OP", &[VAL, VAL2, UADDR2, VAL3]),
    ("FUTEX_LOCK_PI", &[UTIME]),
    ("FUTEX_UNLOCK_PI", &[]),
    ("FUTEX_TRYLOCK_PI", &[]),
    ("FUTEX_WAIT_BITSET", &[VAL_HEX, UTIME, VAL3]),
    ("FUTEX_WAKE_BITSET", &[VAL, VAL3]),
    ("FUTEX_WAIT_REQUEUE_PI", &[VAL_HEX, UTIME, UADDR2, VAL3]),
    ("FUTEX_CMP_REQUEUE_PI", &[VAL, VAL2, UADDR2, VAL3]),
];

/// The flag bits of `op` the plugin names, after the command
/// (<linux/futex.h>).
const FLAGS: &[(u64, &str)] = &[(128, "|FUTEX_PRIVATE_FLAG"), (256, "|FUTEX_CLOCK_REALTIME")];

/// futex_handler() on the values of [`FIELDS`] (None: the event has no
/// such field). False when the print fmt must follow what was written, as
/// the plugin's `return 1` asks: a missing field (after
/// tep_get_field_val()'s `<CANT FIND FIELD name>`) or a command past the
/// table (FUTEX_LOCK_PI2 and later: nothing written).
pub fn write(s: &mut String, v: [Option<u64>; 6]) -> bool {
    let mut val = [0u64; 6];
    for (i, x) in v.iter().enumerate() {
        match x {
            Some(x) => val[i] = *x,
            None => {
                s.put("<CANT FIND FIELD ").put(FIELDS[i]).put(">");
                return false;
            }
        }
    }
    let op = val[1];
    let flags = FLAGS.iter().fold(0, |m, f| m | f.0);
    let Some((name, shown)) = usize::try_from(op & !flags).ok().and_then(|c| OPS.get(c)) else { return false };
    s.put("op=").put(name);
    for (bit, text) in FLAGS {
        if op & bit != 0 {
            s.put(text);
        }
    }
    s.put(" uaddr=0x").num(val[0], b'x', crate::printfmt::printf::ZEROPAD, 8);
    for &(label, i, hex) in *shown {
        s.put(" ").put(label).put("=");
        if hex {
            s.put("0x").num(val[i], b'x', crate::printfmt::printf::ZEROPAD, 8);
        } else {
            s.unsigned(val[i]);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(v: [Option<u64>; 6]) -> (String, bool) {
        let mut s = String::new();
        let done = write(&mut s, v);
        (s, done)
    }

    #[test]
    fn operations_flags_and_fallbacks() {
        let a = |op| [Some(0x7f00_1234), Some(op), Some(2), Some(0), Some(0x55), Some(0xffff_ffff)];
        assert_eq!(show(a(128)).0, "op=FUTEX_WAIT|FUTEX_PRIVATE_FLAG uaddr=0x7f001234 val=0x00000002 utime=0x00000000");
        assert_eq!(show(a(1 | 128)).0, "op=FUTEX_WAKE|FUTEX_PRIVATE_FLAG uaddr=0x7f001234 val=2");
        assert_eq!(show(a(9 | 256)).0, "op=FUTEX_WAIT_BITSET|FUTEX_CLOCK_REALTIME uaddr=0x7f001234 val=0x00000002 utime=0x00000000 val3=0xffffffff");
        assert_eq!(show(a(5)).0, "op=FUTEX_WAKE_OP uaddr=0x7f001234 val=2 val2=0 uaddr2=0x00000055 val3=0xffffffff");
        // Past the table, a missing field: the print fmt follows.
        assert_eq!(show(a(13 | 128)), (String::new(), false));
        assert_eq!(show([Some(1), Some(0), None, None, None, None]), ("<CANT FIND FIELD val>".into(), false));
    }
}
