//! The [`Env`] the printers use, built from the recording's formats,
//! kallsyms and printk_formats over the `format`, `printfmt` and `ksyms`
//! modules: print fmts compiled once per event, rendered per record; a
//! record the interpreter cannot evaluate gets its fields as `name=value`.

use alloc::vec::Vec;
use core::cell::{OnceCell, RefCell};
use core::fmt::{self, Write};

use super::{put_all, Env, Rendered, Sym};
use crate::cursor::Endian;
use crate::format::Event;
use crate::ksyms::{Enums, Ksyms, Printk};
use crate::printfmt::{self, Out, Program};

pub struct Decoder {
    /// Sorted by id, with the compiled print fmt (None: could not compile),
    /// compiled at the event's first record: a recording lists every
    /// format of the kernel (thousands) and uses a few. `progs` is
    /// parallel to `events`, so the events are one slice to lend.
    events: Vec<Event>,
    progs: Vec<OnceCell<Option<Program>>>,
    /// By id, the position the binary search over `events` finds
    /// (u32::MAX: none), worked out once: a search per record over the
    /// thousands of formats of an `-e all` recording cost a tenth of
    /// decoding it.
    index: Vec<u32>,
    pub ksyms: Ksyms,
    pub printk: Printk,
    pub endian: Endian,
    pub long_size: usize,
    pub hz: u32,
    /// Kernel variables and struct sizes some formats read (`vmemmap_base`,
    /// `sizeof(struct page)`), as the recorder found them; empty when it
    /// did not say.
    pub known: Enums,
    /// Print fmts in libtraceevent's dialect (see `printfmt::Env::tep`).
    pub tep: bool,
    /// libtraceevent 1.7's variant of it (see `printfmt::Env::tep_1_7`).
    pub tep_1_7: bool,
    scratch: RefCell<Vec<u8>>,
}

impl Decoder {
    pub fn new(mut events: Vec<Event>, ksyms: Ksyms, printk: Printk, endian: Endian, long_size: usize) -> Decoder {
        crate::sort::sort_by_key(&mut events, |e| u64::from(e.id));
        let progs = events.iter().map(|_| OnceCell::new()).collect();
        let mut index = alloc::vec![u32::MAX; events.last().map_or(0, |e| e.id as usize + 1)];
        for e in &events {
            if let (Ok(i), Some(slot)) = (events.binary_search_by_key(&e.id, |e| e.id), index.get_mut(e.id as usize)) {
                *slot = i as u32;
            }
        }
        Decoder { events, progs, index, ksyms, printk, endian, long_size, hz: 0, known: Enums::new(), tep: false, tep_1_7: false, scratch: RefCell::new(Vec::new()) }
    }

    /// Every event, sorted by id.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn event(&self, id: u16) -> Option<&Event> {
        self.get(id).map(|e| e.0)
    }

    fn get(&self, id: u16) -> Option<(&Event, &OnceCell<Option<Program>>)> {
        let i = *self.index.get(id as usize)? as usize;
        Some((self.events.get(i)?, self.progs.get(i)?))
    }

    /// Out of line: render, bprint and fields each had a copy.
    #[inline(never)]
    fn penv(&self) -> printfmt::Env<'_> {
        let mut e = printfmt::Env::new(self.endian, self.long_size);
        e.ksyms = Some(&self.ksyms);
        e.printk = Some(&self.printk);
        e.hz = self.hz;
        e.tep = self.tep;
        e.tep_1_7 = self.tep_1_7;
        e.enums = Some(&self.known);
        e
    }

}

impl Env for Decoder {
    fn sym(&self, addr: u64) -> Option<Sym<'_>> {
        let k = self.ksyms.lookup(addr)?;
        Some(Sym { name: k.name, addr: addr.wrapping_sub(k.offset), size: k.size.unwrap_or(0), module: k.module })
    }

    #[cfg(feature = "fast-print")]
    fn ascii_name(&self, addr: u64) -> Option<&str> {
        self.ksyms.ascii_name(addr)
    }

    #[cfg(feature = "fast-print")]
    fn core_ascii_name(&self, addr: u64) -> Option<&str> {
        self.ksyms.core_ascii_name(addr)
    }

    fn render(&self, id: u16, data: &[u8], out: &mut dyn Write) -> Result<Rendered, fmt::Error> {
        let mut buf = self.scratch.borrow_mut();
        buf.clear();
        let mut r = None;
        printfmt::append(&mut buf, &mut |o| r = self.render_bytes(id, data, o));
        if let Some(r) = r {
            put_all(out, &buf)?;
            return Ok(r);
        }
        drop(buf);
        self.fields(id, data, out)?;
        Ok(Rendered::Fallback)
    }

    fn render_bytes(&self, id: u16, data: &[u8], out: &mut Out<'_>) -> Option<Rendered> {
        let (ev, prog) = self.get(id)?;
        let p = crate::util::once(&prog, || Program::compile(ev).ok()).as_ref()?;
        match p.render_bytes(ev, data, &self.penv(), out).ok()? {
            printfmt::Fidelity::Exact => Some(Rendered::Ok),
            printfmt::Fidelity::Partial => Some(Rendered::Partial),
        }
    }

    fn bprint(&self, fmt_addr: u64, args: &[u8], out: &mut dyn Write) -> Result<Rendered, fmt::Error> {
        let Some(f) = self.printk.lookup(fmt_addr) else {
            write!(out, "(bprint fmt 0x{:x} unknown)", fmt_addr)?;
            return Ok(Rendered::Fallback);
        };
        let env = self.penv();
        let mut buf = self.scratch.borrow_mut();
        buf.clear();
        let mut r = Ok(());
        printfmt::append(&mut buf, &mut |o| r = printfmt::bprint_bytes(f.as_bytes(), args, &env, o));
        match r {
            Ok(()) => {
                put_all(out, &buf)?;
                Ok(Rendered::Ok)
            }
            Err(_) => {
                out.write_str(f)?;
                Ok(Rendered::Fallback)
            }
        }
    }

    fn kstr(&self, addr: u64) -> Option<&str> {
        self.printk.lookup(addr)
    }

    fn irq_text(&self) -> (u64, u64) {
        match (self.ksyms.addr_of("__irqentry_text_start"), self.ksyms.addr_of("__irqentry_text_end")) {
            (Some(s), Some(e)) => (s, e),
            _ => (0, 0),
        }
    }

    fn fields(&self, id: u16, data: &[u8], out: &mut dyn Write) -> Result<bool, fmt::Error> {
        let Some((ev, _)) = self.get(id) else { return Ok(false) };
        printfmt::render_fields(ev, data, &self.penv(), out).map_err(|_| fmt::Error)?;
        Ok(true)
    }
}
