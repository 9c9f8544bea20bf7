"""Check that `ftcat --export perfetto-compact` says what `--export
perfetto` says about scheduling, read as Perfetto's trace processor reads
compact_sched (src/trace_processor/importers/ftrace/ftrace_tokenizer.cc
and ftrace_sched_event_tracker.cc): a compact sched_switch takes its
prev_pid and prev_prio from the CPU's previous sched_switch (trace
processor drops it when there is none), a compact sched_waking takes its
waker from the task that switch left running (and is dropped when there
is none), timestamps are deltas from the previous one of the bundle's
array, comms indexes into the bundle's intern_table.

Both traces are reduced to the tuples trace processor builds its sched
slices and thread states from: per switch (ts, cpu, prev_pid, prev_prio,
prev_state, next_pid, next_prio, next_comm), per waking (ts, cpu, waker,
pid, prio, target_cpu, comm, common_flags); the two lists must be equal
and every other event the same.

usage: check_compact.py FULL_TRACE COMPACT_TRACE
"""
import sys

from common import fail

try:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace
except ImportError as e:  # setup.sh installs it: missing is a failure
    fail(f"perfetto's Python bindings: {e} (run: sh scripts/setup.sh test)")


def load(path):
    t = Trace()
    t.ParseFromString(open(path, "rb").read())
    return t


def events(trace):
    """Every event as (ts, cpu, kind, value), sorted as trace processor
    sorts them (by time; a CPU's own order kept for equal times)."""
    out = []
    for p in trace.packet:
        if not p.HasField("ftrace_events"):
            continue
        b = p.ftrace_events
        for e in b.event:
            out.append((e.timestamp, b.cpu, len(out), "event", e))
        if b.lost_events:
            out.append((-1, b.cpu, len(out), "lost", None))
        c = b.compact_sched
        comms = list(c.intern_table)
        ts = 0
        for i, d in enumerate(c.switch_timestamp):
            ts += d
            out.append((ts, b.cpu, len(out), "switch", (c.switch_prev_state[i], c.switch_next_pid[i], c.switch_next_prio[i], comms[c.switch_next_comm_index[i]])))
        ts = 0
        for i, d in enumerate(c.waking_timestamp):
            ts += d
            flags = c.waking_common_flags[i] if i < len(c.waking_common_flags) else 0
            out.append((ts, b.cpu, len(out), "waking", (c.waking_pid[i], c.waking_target_cpu[i], c.waking_prio[i], comms[c.waking_comm_index[i]], flags)))
    # (A loss marker keeps its place in its CPU's order: it is only used
    # to check that the exporter never leaves a compact event after one.)
    return sorted((x for x in out if x[3] != "lost"), key=lambda x: (x[0], x[1], x[2])), [x for x in out if x[3] == "lost"]


def sched_tuples(trace):
    """(switches, wakings, other events) as trace processor sees them."""
    evs, _ = events(trace)
    running = {}  # cpu -> (pid, prio) the last switch left running
    switches, wakings, other = [], [], []
    for ts, cpu, _, kind, v in evs:
        if kind == "switch":
            state, next_pid, next_prio, next_comm = v
            if cpu not in running:
                fail(f"a compact sched_switch at {ts} on CPU {cpu} with no switch before it: trace processor drops it")
            prev_pid, prev_prio = running[cpu]
            switches.append((ts, cpu, prev_pid, prev_prio, state, next_pid, next_prio, next_comm))
            running[cpu] = (next_pid, next_prio)
        elif kind == "waking":
            pid, target, prio, comm, flags = v
            if cpu not in running:
                fail(f"a compact sched_waking at {ts} on CPU {cpu} with no switch before it: trace processor drops it")
            wakings.append((ts, cpu, running[cpu][0], pid, prio, target, comm, flags))
        elif v.HasField("sched_switch"):
            s = v.sched_switch
            switches.append((ts, cpu, s.prev_pid, s.prev_prio, s.prev_state, s.next_pid, s.next_prio, s.next_comm))
            running[cpu] = (s.next_pid, s.next_prio)
        elif v.HasField("sched_waking"):
            w = v.sched_waking
            wakings.append((ts, cpu, v.pid, w.pid, w.prio, w.target_cpu, w.comm, v.common_flags))
        else:
            other.append((ts, cpu, v.SerializeToString(deterministic=True)))
    return switches, wakings, other


def main(full_path, compact_path):
    full, compact = load(full_path), load(compact_path)
    a, b = sched_tuples(full), sched_tuples(compact)
    for what, x, y in zip(("sched_switch", "sched_waking", "other events"), a, b):
        if x != y:
            diff = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            fail(f"{what} differ at #{diff} of {len(x)}/{len(y)}: full {x[diff:diff + 1]}, compact {y[diff:diff + 1]}")
    n_compact = sum(len(p.ftrace_events.compact_sched.switch_timestamp) + len(p.ftrace_events.compact_sched.waking_timestamp) for p in compact.packet)
    print(f"ok: {len(a[0])} sched_switch, {len(a[1])} sched_waking ({n_compact} compact), {len(a[2])} other events")


if __name__ == "__main__":
    main(*sys.argv[1:])
