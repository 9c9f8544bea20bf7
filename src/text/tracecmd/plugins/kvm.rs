//! plugin_kvm: the events of systems kvm and kvmmmu it prints itself, with
//! exit reasons by name (its own VMX and SVM tables, older than the
//! kernel's), emulated instructions as their bytes (Debian builds it
//! without udis86), and MMU page roles decoded from the role word.
//! libtraceevent 1.7.1 through 1.8.4 ship the same plugin_kvm.c.
//!
//! A handler that cannot read a field it needs writes
//! `<CANT FIND FIELD name>` and returns -1, which libtraceevent takes as
//! "print the event's print fmt too": [`write`] then returns false.

use alloc::string::String;

use super::super::Append;
use crate::cursor::{read_uint, Endian};
use crate::format::{Event, FieldAt};
use crate::printfmt::printf::ZEROPAD;

/// The events plugin_kvm registers a handler for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Exit,
    Entry,
    EmulateInsn,
    NestedVmexit,
    NestedVmexitInject,
    MmuGetPage,
    /// kvm_mmu_print_role() alone: sync_page, unsync_page, zap_page,
    /// prepare_zap_page.
    MmuRole,
}

/// (system, event, handler): TEP_PLUGIN_LOADER's registrations.
const EVENTS: &[(&str, &str, Kind)] = &[
    ("kvm", "kvm_exit", Kind::Exit),
    ("kvm", "kvm_entry", Kind::Entry),
    ("kvm", "kvm_emulate_insn", Kind::EmulateInsn),
    ("kvm", "kvm_nested_vmexit", Kind::NestedVmexit),
    ("kvm", "kvm_nested_vmexit_inject", Kind::NestedVmexitInject),
    ("kvmmmu", "kvm_mmu_get_page", Kind::MmuGetPage),
    ("kvmmmu", "kvm_mmu_sync_page", Kind::MmuRole),
    ("kvmmmu", "kvm_mmu_unsync_page", Kind::MmuRole),
    ("kvmmmu", "kvm_mmu_zap_page", Kind::MmuRole),
    ("kvmmmu", "kvm_mmu_prepare_zap_page", Kind::MmuRole),
];

/// The most fields a handler reads.
pub const MAX_FIELDS: usize = 7;

impl Kind {
    pub fn of(system: &str, name: &str) -> Option<Kind> {
        EVENTS.iter().find(|r| r.0 == system && r.1 == name).map(|r| r.2)
    }

    /// The fields the handler reads, in the order [`write`] takes them.
    fn fields(self) -> &'static [&'static str] {
        const ROLE: &[&str] = &["role", "root_count", "unsync"];
        match self {
            Kind::Exit => &["exit_reason", "isa", "guest_rip", "info1", "info2"],
            Kind::Entry => &["vcpu_id", "rip"],
            Kind::EmulateInsn => &["rip", "csbase", "len", "flags", "failed", "insn"],
            Kind::NestedVmexit => &["rip", "exit_code", "isa", "exit_info1", "exit_info2", "exit_int_info", "exit_int_info_err"],
            Kind::NestedVmexitInject => &["exit_code", "isa", "exit_info1", "exit_info2", "exit_int_info", "exit_int_info_err"],
            Kind::MmuGetPage => &["created", "gfn", "role", "root_count", "unsync"],
            Kind::MmuRole => ROLE,
        }
    }

    /// Where the handler's fields sit in `e` (None: the event lacks one).
    pub fn locate(self, e: &Event) -> [Option<FieldAt>; MAX_FIELDS] {
        let mut at = [None; MAX_FIELDS];
        for (slot, name) in at.iter_mut().zip(self.fields()) {
            *slot = e.field_at(name);
        }
        at
    }
}

/// vmx_exit_reasons: (value, name).
const VMX: &[(i32, &str)] = &[
    (0, "EXCEPTION_NMI"),
    (1, "EXTERNAL_INTERRUPT"),
    (2, "TRIPLE_FAULT"),
    (7, "PENDING_INTERRUPT"),
    (8, "NMI_WINDOW"),
    (9, "TASK_SWITCH"),
    (10, "CPUID"),
    (12, "HLT"),
    (13, "INVD"),
    (14, "INVLPG"),
    (15, "RDPMC"),
    (16, "RDTSC"),
    (18, "VMCALL"),
    (19, "VMCLEAR"),
    (20, "VMLAUNCH"),
    (21, "VMPTRLD"),
    (22, "VMPTRST"),
    (23, "VMREAD"),
    (24, "VMRESUME"),
    (25, "VMWRITE"),
    (26, "VMOFF"),
    (27, "VMON"),
    (28, "CR_ACCESS"),
    (29, "DR_ACCESS"),
    (30, "IO_INSTRUCTION"),
    (31, "MSR_READ"),
    (32, "MSR_WRITE"),
    (36, "MWAIT_INSTRUCTION"),
    (39, "MONITOR_INSTRUCTION"),
    (40, "PAUSE_INSTRUCTION"),
    (41, "MCE_DURING_VMENTRY"),
    (43, "TPR_BELOW_THRESHOLD"),
    (44, "APIC_ACCESS"),
    (45, "EOI_INDUCED"),
    (48, "EPT_VIOLATION"),
    (49, "EPT_MISCONFIG"),
    (50, "INVEPT"),
    (52, "PREEMPTION_TIMER"),
    (54, "WBINVD"),
    (55, "XSETBV"),
    (56, "APIC_WRITE"),
    (58, "INVPCID"),
    (62, "PML_FULL"),
    (63, "XSAVES"),
    (64, "XRSTORS"),
];

/// svm_exit_reasons: (value, name).
const SVM: &[(i32, &str)] = &[
    (0x000, "EXIT_READ_CR0"),
    (0x003, "EXIT_READ_CR3"),
    (0x004, "EXIT_READ_CR4"),
    (0x008, "EXIT_READ_CR8"),
    (0x010, "EXIT_WRITE_CR0"),
    (0x013, "EXIT_WRITE_CR3"),
    (0x014, "EXIT_WRITE_CR4"),
    (0x018, "EXIT_WRITE_CR8"),
    (0x020, "EXIT_READ_DR0"),
    (0x021, "EXIT_READ_DR1"),
    (0x022, "EXIT_READ_DR2"),
    (0x023, "EXIT_READ_DR3"),
    (0x024, "EXIT_READ_DR4"),
    (0x025, "EXIT_READ_DR5"),
    (0x026, "EXIT_READ_DR6"),
    (0x027, "EXIT_READ_DR7"),
    (0x030, "EXIT_WRITE_DR0"),
    (0x031, "EXIT_WRITE_DR1"),
    (0x032, "EXIT_WRITE_DR2"),
    (0x033, "EXIT_WRITE_DR3"),
    (0x034, "EXIT_WRITE_DR4"),
    (0x035, "EXIT_WRITE_DR5"),
    (0x036, "EXIT_WRITE_DR6"),
    (0x037, "EXIT_WRITE_DR7"),
    (0x040, "EXIT_EXCP_DE"),
    (0x041, "EXIT_EXCP_DB"),
    (0x043, "EXIT_EXCP_BP"),
    (0x044, "EXIT_EXCP_OF"),
    (0x045, "EXIT_EXCP_BR"),
    (0x046, "EXIT_EXCP_UD"),
    (0x047, "EXIT_EXCP_NM"),
    (0x048, "EXIT_EXCP_DF"),
    (0x04a, "EXIT_EXCP_TS"),
    (0x04b, "EXIT_EXCP_NP"),
    (0x04c, "EXIT_EXCP_SS"),
    (0x04d, "EXIT_EXCP_GP"),
    (0x04e, "EXIT_EXCP_PF"),
    (0x050, "EXIT_EXCP_MF"),
    (0x051, "EXIT_EXCP_AC"),
    (0x052, "EXIT_EXCP_MC"),
    (0x053, "EXIT_EXCP_XF"),
    (0x060, "EXIT_INTR"),
    (0x061, "EXIT_NMI"),
    (0x062, "EXIT_SMI"),
    (0x063, "EXIT_INIT"),
    (0x064, "EXIT_VINTR"),
    (0x065, "EXIT_CR0_SEL_WRITE"),
    (0x066, "EXIT_IDTR_READ"),
    (0x067, "EXIT_GDTR_READ"),
    (0x068, "EXIT_LDTR_READ"),
    (0x069, "EXIT_TR_READ"),
    (0x06a, "EXIT_IDTR_WRITE"),
    (0x06b, "EXIT_GDTR_WRITE"),
    (0x06c, "EXIT_LDTR_WRITE"),
    (0x06d, "EXIT_TR_WRITE"),
    (0x06e, "EXIT_RDTSC"),
    (0x06f, "EXIT_RDPMC"),
    (0x070, "EXIT_PUSHF"),
    (0x071, "EXIT_POPF"),
    (0x072, "EXIT_CPUID"),
    (0x073, "EXIT_RSM"),
    (0x074, "EXIT_IRET"),
    (0x075, "EXIT_SWINT"),
    (0x076, "EXIT_INVD"),
    (0x077, "EXIT_PAUSE"),
    (0x078, "EXIT_HLT"),
    (0x079, "EXIT_INVLPG"),
    (0x07a, "EXIT_INVLPGA"),
    (0x07b, "EXIT_IOIO"),
    (0x07c, "EXIT_MSR"),
    (0x07d, "EXIT_TASK_SWITCH"),
    (0x07e, "EXIT_FERR_FREEZE"),
    (0x07f, "EXIT_SHUTDOWN"),
    (0x080, "EXIT_VMRUN"),
    (0x081, "EXIT_VMMCALL"),
    (0x082, "EXIT_VMLOAD"),
    (0x083, "EXIT_VMSAVE"),
    (0x084, "EXIT_STGI"),
    (0x085, "EXIT_CLGI"),
    (0x086, "EXIT_SKINIT"),
    (0x087, "EXIT_RDTSCP"),
    (0x088, "EXIT_ICEBP"),
    (0x089, "EXIT_WBINVD"),
    (0x08a, "EXIT_MONITOR"),
    (0x08b, "EXIT_MWAIT"),
    (0x08c, "EXIT_MWAIT_COND"),
    (0x08d, "EXIT_XSETBV"),
    (0x400, "EXIT_NPF"),
    (0x401, "EXIT_AVIC_INCOMPLETE_IPI"),
    (0x402, "EXIT_AVIC_UNACCELERATED_ACCESS"),
    (-1, "EXIT_ERR"),
];

/// isa_exit_reasons: the table of each `isa` value.
const ISAS: &[(u32, &[(i32, &str)])] = &[(1, VMX), (2, SVM)];

/// access_str: the role's access bits (write, user, exec).
const ACCESS: [&str; 8] = ["---", "--x", "w--", "w-x", "-u-", "-ux", "wu-", "wux"];

/// One record as a handler reads it: its bytes and the fields
/// [`Kind::locate`] found, in the order of `Kind::fields()`.
#[derive(Clone, Copy)]
pub struct Rec<'a> {
    pub data: &'a [u8],
    pub endian: Endian,
    pub at: &'a [Option<FieldAt>; MAX_FIELDS],
    names: &'static [&'static str],
}

impl<'a> Rec<'a> {
    pub fn new(kind: Kind, data: &'a [u8], endian: Endian, at: &'a [Option<FieldAt>; MAX_FIELDS]) -> Self {
        Rec { data, endian, at, names: kind.fields() }
    }

    /// tep_get_field_val(..., err = 0) / tep_read_number_field():
    /// unsigned, as read.
    fn val(&self, i: usize) -> Option<u64> {
        self.at[i].map(|f| read_uint(self.data, f.off as usize, f.size as usize, self.endian).unwrap_or(0))
    }

    /// tep_get_field_val(..., err = 1): the value, or the complaint.
    fn need(&self, s: &mut String, i: usize) -> Option<u64> {
        let v = self.val(i);
        if v.is_none() {
            s.put("<CANT FIND FIELD ").put(self.names[i]).put(">");
        }
        v
    }
}

/// The handler of `kind`. `insn` is disassemble()'s static buffer: the
/// last instruction's text, which an instruction of length 0 prints
/// again. False when the print fmt must follow what was written.
pub fn write(s: &mut String, kind: Kind, r: Rec, insn: &mut String) -> bool {
    match kind {
        Kind::Exit => {
            let Some(reason) = r.need(s, 0) else { return false };
            exit_reason(s, reason, r.val(1));
            let Some(rip) = r.need(s, 2) else { return false };
            s.put(" rip 0x").hex(rip);
            if let (Some(i1), Some(i2)) = (r.val(3), r.val(4)) {
                s.put(" info ").hex(i1).put(" ").hex(i2);
            }
            true
        }
        Kind::Entry => {
            num_field(s, " vcpu ", r, 0, false);
            let Some(rip) = r.need(s, 1) else { return false };
            s.put(" rip 0x").hex(rip);
            true
        }
        Kind::EmulateInsn => {
            let mut v = [0u64; 5];
            for (i, x) in v.iter_mut().enumerate() {
                match r.need(s, i) {
                    Some(n) => *x = n,
                    None => return false,
                }
            }
            let [rip, csbase, len, _flags, failed] = v;
            // tep_get_field_raw("insn", err = 1).
            let Some(f) = r.at[5] else {
                s.put("<CANT FIND FIELD insn>");
                return false;
            };
            // disassemble() takes `int len` and writes `%02x ` per byte
            // into a 46-byte buffer: the field's 15 bytes are all it holds.
            let n = (len as i32).min(15);
            if n > 0 {
                insn.clear();
                for i in 0..n as usize {
                    let b = r.data.get(f.off as usize + i).copied().unwrap_or(0);
                    if i > 0 {
                        insn.push(' ');
                    }
                    insn.num(b as u64, b'x', ZEROPAD, 2);
                }
            }
            s.hex(csbase).put(":").hex(rip).put(": ").put(insn);
            if failed != 0 {
                s.put(" FAIL");
            }
            true
        }
        Kind::NestedVmexit => {
            let Some(rip) = r.need(s, 0) else { return false };
            s.put(" rip ").hex(rip);
            nested(s, r, 1)
        }
        Kind::NestedVmexitInject => nested(s, r, 0),
        Kind::MmuGetPage => {
            let Some(created) = r.need(s, 0) else { return false };
            s.put(if created != 0 { "new " } else { "existing " });
            let Some(gfn) = r.need(s, 1) else { return false };
            s.put("sp gfn ").hex(gfn).put(" ");
            role(s, r, 2)
        }
        Kind::MmuRole => role(s, r, 0),
    }
}

/// print_exit_reason() of a value already read (its `isa` defaults to 1,
/// VMX). The tables hold ints: the value is compared as one.
fn exit_reason(s: &mut String, v: u64, isa: Option<u64>) {
    let isa = isa.unwrap_or(1) as u32;
    s.put("reason ");
    match ISAS.iter().find(|t| t.0 == isa) {
        None => s.put("UNKNOWN-ISA"),
        Some((_, tab)) => match tab.iter().find(|r| r.0 == v as i32) {
            Some((_, name)) => s.put(name),
            None => s.put("UNKNOWN (").unsigned(v).put(")"),
        },
    };
}

/// tep_print_num_field() of field `i` after `label`: `%u` (the low 32
/// bits) or `%llx`, or the complaint; the handlers go on either way.
fn num_field(s: &mut String, label: &str, r: Rec, i: usize, hex: bool) {
    match r.val(i) {
        Some(v) if hex => s.put(label).hex(v),
        Some(v) => s.put(label).unsigned(v as u32 as u64),
        None => s.put("CAN'T FIND FIELD \"").put(r.names[i]).put("\""),
    };
}

/// kvm_nested_vmexit_inject_handler() on the fields from `first` on
/// (exit_code, isa, then four it prints as numbers). Its `reason` follows
/// kvm_nested_vmexit's ` rip %llx` without a space, as in the plugin.
fn nested(s: &mut String, r: Rec, first: usize) -> bool {
    let Some(code) = r.need(s, first) else { return false };
    exit_reason(s, code, r.val(first + 1));
    for (i, label) in [" info1 ", " info2 ", " int_info ", " int_info_err "].iter().enumerate() {
        num_field(s, label, r, first + 2 + i, true);
    }
    true
}

/// kvm_mmu_print_role() on the fields from `first` on (role, root_count,
/// unsync).
fn role(s: &mut String, r: Rec, first: usize) -> bool {
    let Some(word) = r.need(s, first) else { return false };
    let word = word as u32;
    // The plugin reads the word through its own bit-field union, and only
    // when the file has the host's byte order.
    if (r.endian == Endian::Big) != cfg!(target_endian = "big") {
        s.put("WORD: ").num(word as u64, b'x', ZEROPAD, 8);
    } else {
        let Role { level, cr4_pae, quadrant, direct, access, invalid, nxe, cr0_wp, smep, smap, smm } = Role::of(word);
        s.unsigned(level as u64).put(" q").unsigned(quadrant as u64);
        s.put(if direct { " direct " } else { " " }).put(ACCESS[access as usize & 7]);
        s.put(if invalid { " invalid" } else { "" });
        s.put(if cr4_pae { " pae" } else { " !pae" }).put(if nxe { " nxe" } else { " !nxe" }).put(if cr0_wp { " wp" } else { " !wp" });
        s.put(if smep { " smep" } else { "" }).put(if smap { " smap" } else { "" }).put(if smm { " smm" } else { "" });
    }
    num_field(s, " root ", r, first + 1, false);
    if r.at[first + 1].is_some() {
        s.put(" ");
    }
    let Some(unsync) = r.need(s, first + 2) else { return false };
    // `"%s%c", ..., 0`: the NUL ends the line's text.
    s.put(if unsync != 0 { "unsync" } else { "sync" });
    true
}

/// The plugin's `union kvm_mmu_page_role`, an old kernel's layout (level:4,
/// cr4_pae:1, quadrant:2, direct:1, access:3, invalid:1, nxe:1, cr0_wp:1,
/// smep_and_not_wp:1, smap_and_not_wp:1, 8 bits of padding, smm:8), which
/// it applies to every kernel's role word.
struct Role {
    level: u32,
    cr4_pae: bool,
    quadrant: u32,
    direct: bool,
    access: u32,
    invalid: bool,
    nxe: bool,
    cr0_wp: bool,
    smep: bool,
    smap: bool,
    smm: bool,
}

impl Role {
    /// The bit-fields' widths, in declaration order.
    const WIDTHS: [u32; 12] = [4, 1, 2, 1, 3, 1, 1, 1, 1, 1, 8, 8];

    fn of(word: u32) -> Role {
        let mut f = [0u32; 12];
        let mut pos = 0;
        for (i, w) in Role::WIDTHS.iter().enumerate() {
            // Low bit first on little-endian ABIs, high bit first on
            // big-endian ones.
            let shift = if cfg!(target_endian = "big") { 32 - pos - w } else { pos };
            f[i] = (word >> shift) & ((1 << w) - 1);
            pos += w;
        }
        Role {
            level: f[0],
            cr4_pae: f[1] != 0,
            quadrant: f[2],
            direct: f[3] != 0,
            access: f[4],
            invalid: f[5] != 0,
            nxe: f[6] != 0,
            cr0_wp: f[7] != 0,
            smep: f[8] != 0,
            smap: f[9] != 0,
            smm: f[11] != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of 8-byte little-endian fields, in `kind`'s order; `None`
    /// leaves the field out of the event.
    fn show(kind: Kind, vals: &[Option<u64>], insn: &mut String) -> (String, bool) {
        let mut data = alloc::vec::Vec::new();
        let mut at = [None; MAX_FIELDS];
        for (i, v) in vals.iter().enumerate() {
            if let Some(v) = v {
                at[i] = Some(FieldAt { off: data.len() as u16, size: 8, signed: false });
                data.extend_from_slice(&v.to_le_bytes());
            }
        }
        let mut s = String::new();
        let done = write(&mut s, kind, Rec::new(kind, &data, Endian::Little, &at), insn);
        (s, done)
    }

    fn line(kind: Kind, vals: &[Option<u64>]) -> String {
        show(kind, vals, &mut String::new()).0
    }

    #[test]
    fn exit_reasons_by_isa() {
        let exit = |reason, isa| line(Kind::Exit, &[Some(reason), isa, Some(0xffff_ffff_8100_0000), Some(0x30), Some(0)]);
        assert_eq!(exit(30, Some(1)), "reason IO_INSTRUCTION rip 0xffffffff81000000 info 30 0");
        assert_eq!(exit(0x7b, Some(2)), "reason EXIT_IOIO rip 0xffffffff81000000 info 30 0");
        // No isa field: VMX. -1 is SVM's EXIT_ERR; a flag bit is no entry.
        assert_eq!(exit(12, None), "reason HLT rip 0xffffffff81000000 info 30 0");
        assert_eq!(exit(0xffff_ffff, Some(2)), "reason EXIT_ERR rip 0xffffffff81000000 info 30 0");
        assert_eq!(exit(0x8000_0021, Some(1)), "reason UNKNOWN (2147483681) rip 0xffffffff81000000 info 30 0");
        assert_eq!(exit(1, Some(3)), "reason UNKNOWN-ISA rip 0xffffffff81000000 info 30 0");
        // Without info2 no info; without exit_reason the print fmt follows.
        assert_eq!(line(Kind::Exit, &[Some(1), Some(1), Some(0x10), Some(1), None]), "reason EXTERNAL_INTERRUPT rip 0x10");
        assert_eq!(show(Kind::Exit, &[None, Some(1), Some(0x10)], &mut String::new()), ("<CANT FIND FIELD exit_reason>".into(), false));
    }

    #[test]
    fn entry_and_nested() {
        assert_eq!(line(Kind::Entry, &[Some(0x1_0000_0002), Some(0xfff0)]), " vcpu 2 rip 0xfff0");
        assert_eq!(line(Kind::Entry, &[None, Some(0xfff0)]), "CAN'T FIND FIELD \"vcpu_id\" rip 0xfff0");
        // ` rip %llx` then `reason` with no space between, as the plugin has it.
        let v = [Some(0xfff0), Some(0x400), Some(2), Some(0xa), Some(0xb), Some(0), None];
        assert_eq!(line(Kind::NestedVmexit, &v), " rip fff0reason EXIT_NPF info1 a info2 b int_info 0CAN'T FIND FIELD \"exit_int_info_err\"");
        assert_eq!(line(Kind::NestedVmexitInject, &v[1..]), "reason EXIT_NPF info1 a info2 b int_info 0CAN'T FIND FIELD \"exit_int_info_err\"");
        // 6.x kernels' kvm_nested_vmexit has guest_rip, not rip.
        assert_eq!(show(Kind::NestedVmexit, &[None], &mut String::new()), ("<CANT FIND FIELD rip>".into(), false));
    }

    #[test]
    fn emulated_instructions_as_bytes() {
        let mut insn = String::new();
        // The bytes sit in the `insn` field: one u64 here, low byte first.
        let v = |len, failed| [Some(0xfff0), Some(0xffff_0000), Some(len), Some(0), Some(failed), Some(0x00f0_00e0_5bea)];
        assert_eq!(show(Kind::EmulateInsn, &v(5, 0), &mut insn).0, "ffff0000:fff0: ea 5b e0 00 f0");
        // Length 0: the buffer still holds the last instruction.
        assert_eq!(show(Kind::EmulateInsn, &v(0, 1), &mut insn).0, "ffff0000:fff0: ea 5b e0 00 f0 FAIL");
        assert_eq!(show(Kind::EmulateInsn, &v(2, 0), &mut insn).0, "ffff0000:fff0: ea 5b");
        assert_eq!(show(Kind::EmulateInsn, &[Some(1), Some(2), Some(3), Some(0), Some(0), None], &mut insn), ("<CANT FIND FIELD insn>".into(), false));
    }

    #[test]
    fn mmu_roles() {
        // kvm_mmu_get_page of role 0x1782: level 2, direct, wux, nxe.
        assert_eq!(line(Kind::MmuGetPage, &[Some(1), Some(0x40000), Some(0x1782), Some(0), Some(0)]), "new sp gfn 40000 2 q0 direct wux !pae nxe !wp root 0 sync");
        // invalid, pae, wp, quadrant 3, smep, smap, smm; unsync.
        let role = 4 | 1 << 4 | 3 << 5 | 2 << 8 | 1 << 11 | 1 << 13 | 1 << 14 | 1 << 15 | 1 << 24;
        assert_eq!(line(Kind::MmuRole, &[Some(role), Some(3), Some(1)]), "4 q3 w-- invalid pae !nxe wp smep smap smm root 3 unsync");
        assert_eq!(show(Kind::MmuRole, &[Some(0), None, None], &mut String::new()), ("0 q0 --- !pae !nxe !wpCAN'T FIND FIELD \"root_count\"<CANT FIND FIELD unsync>".into(), false));
        assert_eq!(Kind::of("kvmmmu", "kvm_mmu_prepare_zap_page"), Some(Kind::MmuRole));
        assert_eq!(Kind::of("kvm", "kvm_pio"), None);
    }
}
