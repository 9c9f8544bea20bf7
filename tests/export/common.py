"""What both checkers read from ftcat's own outputs: `--stat` counts and
the `-R` (every field as name=value) lines, the reference the exports are
held to."""
import re
import sys
from collections import Counter

LINE = re.compile(rb"^\s*(.*)-(\d+)\s+\[(\d+)\] (\S+)\s+(\d+)\.(\d+): (\S+?): ?(.*)$")


def stat_counts(path):
    """`ftcat --stat`: {"system:name": records}, (lost events, losses of
    unknown size)."""
    counts, lost, unknown, in_events = Counter(), 0, 0, False
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.search(r"\(\+(\d+) losses of unknown size\)", line)
        if m:
            unknown += int(m.group(1))
        if line.startswith("EVENT"):
            in_events = True
            continue
        if in_events and not line.strip():
            in_events = False
        if in_events:
            name, n = line.rsplit(None, 1)
            counts[name.strip()] += int(n)
        if line.startswith("lost events:"):
            lost = int(line.split(":")[1])
    return counts, (lost, unknown)


def bare(counts):
    """{"system:name": n} -> {"name": n} (Perfetto names events without system)."""
    out = Counter()
    for k, v in counts.items():
        out[k.split(":", 1)[-1]] += v
    return out


def raw_lines(path):
    """`ftcat -R` records, in order: (comm, pid, cpu, event, body bytes)."""
    out = []
    for line in open(path, "rb"):
        if line.startswith(b"#"):
            continue
        m = LINE.match(line.rstrip(b"\n"))
        if m:
            out.append((m.group(1).strip(), int(m.group(2)), int(m.group(3)), m.group(7).decode(), m.group(8)))
    return out


def fields(body, names):
    """A -R body cut at the given field names (in the order it prints
    them): {name: text}; {} when a name is missing."""
    locs, pos = [], 0
    for i, n in enumerate(names):
        key = n.encode() + b"="
        if i == 0:
            if not body.startswith(key):
                return {}
            at = 0
        else:
            at = body.find(b" " + key, pos)
            if at < 0:
                return {}
            at += 1
        locs.append((n, at, at + len(key)))
        pos = at + len(key)
    out = {}
    for j, (n, at, start) in enumerate(locs):
        end = locs[j + 1][1] - 1 if j + 1 < len(locs) else len(body)
        out[n] = body[start:end]
    return out


NUM = re.compile(rb"^(?:0x([0-9a-f]+)|\S+) \((-?\d+)\)$")
PTR = re.compile(rb"^\(0x([0-9a-f]+)\)$")
DEC = re.compile(rb"^\((-?\d+)\)$")


def same_number(v, text):
    """Does the -R text of a number (`0x1a (26)`, `sym+0x4/0x10 (-123)`,
    `(0x7ffe…)`, or plain digits) show value v? The decimal in parentheses
    is the low 32 bits for pointers, so numbers agree modulo 2^32."""
    m = NUM.match(text)
    if m:
        return (v - int(m.group(2))) % (1 << 32) == 0
    m = PTR.match(text)
    if m:
        return v % (1 << 64) == int(m.group(1), 16)
    m = DEC.match(text)
    if m:
        return (v - int(m.group(1))) % (1 << 64) == 0
    try:
        return int(text) == v
    except ValueError:
        return False


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)
