#!/usr/bin/env python3
"""Pack a "tracefs capture" directory (see guest-init.sh / capture.sh) into a
trace.dat, version 6, uncompressed, exactly as trace-cmd.dat.v6(5) lays it
out. All numbers are written in the recording kernel's byte order; the CPU
data are the raw ring-buffer pages as read from per_cpu/cpuN/trace_pipe_raw,
copied unchanged.

    pack.py CAPTURE_DIR OUT.dat [--endian little|big] [--long 4|8]

--endian defaults to CAPTURE_DIR/endian (written by run-vm.sh and
capture-live.sh, who know the machine); --long (the *userspace* long size, which is
what the v6 header records) defaults from header_page's `commit` size.

saved_cmdlines: only the entries the trace text uses (see trimmed_cmdlines).

kallsyms: the guest's /proc/kallsyms is far too large for a fixture, so only
the symbols whose names occur in the kernel's own trace text are kept, each
with the symbol that follows it in address order (so the containing symbol
of an address, and its size, stay what they were).
"""
import gzip, os, re, struct, sys

def die(msg):
    sys.exit("pack.py: " + msg)

def header_field(text, name):
    m = re.search(r"field: [^;]*\b%s;\toffset:(\d+);\tsize:(\d+);" % name, text)
    if not m:
        die("header_page has no field %s" % name)
    return int(m.group(1)), int(m.group(2))

def main(argv):
    args, opts = [], {}
    it = iter(argv)
    for a in it:
        if a.startswith("--"):
            opts[a[2:]] = next(it)
        else:
            args.append(a)
    if len(args) != 2:
        die("usage: pack.py CAPTURE_DIR OUT.dat [--endian little|big] [--long 4|8]")
    cap, out = args
    rd = lambda n, mode="rb": open(os.path.join(cap, n), mode).read()
    hp = rd("header_page")
    hps = hp.decode()
    _, commit_size = header_field(hps, "commit")
    doff, dsize = header_field(hps, "data")
    page = doff + dsize
    endian = opts.get("endian") or rd("endian", "r").strip()
    if endian not in ("little", "big"):
        die("endian must be little or big, not %r" % endian)
    longsz = int(opts.get("long") or commit_size)
    E = ">" if endian == "big" else "<"
    u16 = lambda v: struct.pack(E + "H", v)
    u32 = lambda v: struct.pack(E + "I", v)
    u64 = lambda v: struct.pack(E + "Q", v)

    b = bytearray()
    b += b"\x17\x08\x44tracing6\0"
    b += bytes([1 if endian == "big" else 0, longsz])
    b += u32(page)
    b += b"header_page\0" + u64(len(hp)) + hp
    he = rd("header_event")
    b += b"header_event\0" + u64(len(he)) + he
    ft = sorted(os.listdir(os.path.join(cap, "ftrace")))
    b += u32(len(ft))
    for n in ft:
        d = rd(os.path.join("ftrace", n))
        b += u64(len(d)) + d
    systems = sorted(os.listdir(os.path.join(cap, "events")))
    b += u32(len(systems))
    for s in systems:
        evs = sorted(os.listdir(os.path.join(cap, "events", s)))
        b += s.encode() + b"\0" + u32(len(evs))
        for e in evs:
            d = rd(os.path.join("events", s, e))
            b += u64(len(d)) + d
    ks = trimmed_kallsyms(cap)
    b += u32(len(ks)) + ks
    pf = rd("printk_formats") if os.path.exists(os.path.join(cap, "printk_formats")) else b""
    b += u32(len(pf)) + pf
    cl = trimmed_cmdlines(cap)
    b += u64(len(cl)) + cl
    cpus = sorted(int(f[3:-4]) for f in os.listdir(cap) if re.fullmatch(r"cpu\d+\.raw", f))
    ncpu = cpus[-1] + 1 if cpus else 0
    b += u32(ncpu)
    # Options, as trace-cmd writes them in a v6 file: UNAME (5), which tells
    # a reader the kernel release (its text printers changed over time), and
    # CPUSTAT (2), one per CPU: "CPU: N" and that CPU's stats file.
    b += b"options  \0"
    if os.path.exists(os.path.join(cap, "uname")):
        # busybox `uname -a` ends with the OS name; trace-cmd records
        # "sysname nodename release version machine".
        un = rd("uname", "r").strip()
        if un.endswith(" GNU/Linux"):
            un = un[: -len(" GNU/Linux")]
        d = un.encode() + b"\0"
        b += u16(5) + u32(len(d)) + d
    for c in range(ncpu):
        p = os.path.join(cap, "cpu%d.stats" % c)
        if os.path.exists(p):
            d = ("CPU: %d\n" % c).encode() + open(p, "rb").read() + b"\0"
            b += u16(2) + u32(len(d)) + d
    b += u16(0)
    b += b"flyrecord\0"
    table = len(b)
    b += bytes(16 * ncpu)
    datas = []
    for c in range(ncpu):
        p = os.path.join(cap, "cpu%d.raw" % c)
        d = open(p, "rb").read() if os.path.exists(p) else b""
        if len(d) % page:
            die("%s: %d bytes is not a whole number of %d-byte pages" % (p, len(d), page))
        datas.append(d)
    off = (len(b) + page - 1) // page * page
    for c, d in enumerate(datas):
        struct.pack_into(E + "QQ", b, table + 16 * c, off if d else 0, len(d))
        if d:
            b += bytes(off - len(b)) + d
            off = (len(b) + page - 1) // page * page
    open(out, "wb").write(bytes(b))

def trimmed_cmdlines(cap):
    """saved_cmdlines, less the pids the trace never names. A busy machine's
    list is tens of KB; the kernel's text shows `comm-pid` for every pid it
    found there, so an entry whose `comm-pid` is not in trace.txt was not used."""
    text = open(os.path.join(cap, "trace.txt")).read()
    keep = []
    for ln in open(os.path.join(cap, "saved_cmdlines")).read().splitlines():
        pid, _, comm = ln.partition(" ")
        if "%s-%s " % (comm, pid) in text or "%s-%s\t" % (comm, pid) in text:
            keep.append(ln + "\n")
    return "".join(keep).encode()

def trimmed_kallsyms(cap):
    p = os.path.join(cap, "kallsyms.gz")
    if not os.path.exists(p):
        return b""
    lines = gzip.open(p).read().decode().splitlines()
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", open(os.path.join(cap, "trace.txt")).read()))
    syms = []
    for ln in lines:
        f = ln.split()
        if len(f) >= 3 and f[1] in "tTwW":
            syms.append((int(f[0], 16), f[2], ln))
    syms.sort(key=lambda s: s[0])
    keep = set()
    for i, (a, n, ln) in enumerate(syms):
        if n in words and a != 0:
            keep.add(i)
            if i + 1 < len(syms):
                keep.add(i + 1)
    return "".join(syms[i][2] + "\n" for i in sorted(keep)).encode()

main(sys.argv[1:])
