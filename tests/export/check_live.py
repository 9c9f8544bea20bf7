"""Check a Perfetto trace that `ftcat --live --once --export perfetto` wrote
from a short recording: SystemInfo carries the running kernel's uname
(sysname, release, machine), FtraceStats one entry per CPU of the
buffer, and the recorded events are there (the markers written, the
sched_switch records as Perfetto's own message).

usage: check_live.py TRACE NCPUS MARKER...
"""
import os
import sys

from common import fail

try:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
except ImportError as e:  # setup.sh installs it: missing is a failure
    fail(f"perfetto's Python bindings: {e} (run: sh scripts/setup.sh test)")


def main(trace_path, ncpus, *markers):
    trace = Trace()
    trace.ParseFromString(open(trace_path, "rb").read())
    u = os.uname()
    infos = [p.system_info for p in trace.packet if p.HasField("system_info")]
    if len(infos) != 1:
        fail(f"{len(infos)} SystemInfo packets, want 1")
    got = infos[0].utsname
    want = (u.sysname, u.release, u.machine)
    if (got.sysname, got.release, got.machine) != want:
        fail(f"SystemInfo.utsname {(got.sysname, got.release, got.machine)}, want {want}")

    stats = [p.ftrace_stats for p in trace.packet if p.HasField("ftrace_stats")]
    if len(stats) != 1:
        fail(f"{len(stats)} FtraceStats packets, want 1")
    cpus = sorted(s.cpu for s in stats[0].cpu_stats)
    if cpus != list(range(int(ncpus))):
        fail(f"FtraceStats for CPUs {cpus}, want 0..{ncpus}")
    if sum(s.entries for s in stats[0].cpu_stats) != 0:
        # --live consumes the buffer: what is left in it at the end is 0
        # unless the kernel wrote more after the read.
        print("note: entries left in the buffer at the end")
    if not any(s.bytes_read > 0 or s.read_events > 0 for s in stats[0].cpu_stats):
        fail(f"no CPU says it read anything: {stats[0]}")

    prints, switches = [], 0
    for p in trace.packet:
        for e in p.ftrace_events.event:
            if e.HasField("print"):
                prints.append(e.print.buf)
            if e.HasField("sched_switch"):
                switches += 1
    for m in markers:
        if not any(m in b for b in prints):
            fail(f"marker {m!r} missing from {len(prints)} print events")
    if switches == 0:
        fail("no sched_switch events")
    print(f"ok: {want}, {len(cpus)} CPUs of stats, {len(prints)} prints, {switches} sched_switch")


if __name__ == "__main__":
    main(*sys.argv[1:])
