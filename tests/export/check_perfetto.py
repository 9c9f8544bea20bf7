"""Check a Perfetto trace that `ftcat --export perfetto` wrote against
ftcat's own `--stat` and `-R` output of the same file.

usage: check_perfetto.py TRACE STAT RAW
"""
import sys
from collections import Counter

from common import bare, fail, fields, raw_lines, same_number, stat_counts

try:
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import FtraceEvent, Trace
except ImportError as e:  # setup.sh installs it: missing is a failure
    fail(f"perfetto's Python bindings: {e} (run: sh scripts/setup.sh test)")


def main(trace_path, stat_path, raw_path):
    trace = Trace()
    trace.ParseFromString(open(trace_path, "rb").read())
    want, want_lost = stat_counts(stat_path)

    events, lost_bundles, release, threads, syms = [], 0, None, {}, {}
    for p in trace.packet:
        if p.HasField("system_info"):
            release = p.system_info.utsname.release
        if p.HasField("process_tree"):
            for t in p.process_tree.threads:
                threads[t.tid] = (t.name, t.tgid)
        for s in p.interned_data.kernel_symbols:
            syms[s.iid] = s.str.decode()
        if p.HasField("ftrace_events"):
            b = p.ftrace_events
            lost_bundles += b.lost_events
            for e in b.event:
                events.append((e.timestamp, b.cpu, len(events), e))

    # Per event name, as --stat counts (Perfetto names carry no system).
    got = Counter()
    for *_, e in events:
        kind = e.WhichOneof("event")
        got[e.generic.event_name if kind == "generic" else kind] += 1
    # --stat leaves out the funcgraph_exit records folded into their entry
    # (`func();`): every record is exported.
    want = bare(want)
    graph = "funcgraph_entry" in got
    if graph and got["funcgraph_exit"] >= want["funcgraph_exit"]:
        want["funcgraph_exit"] = got["funcgraph_exit"]
    if got != want:
        diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
        fail(f"per-event counts differ (perfetto, --stat): {diff}")
    if any(want_lost) != (lost_bundles > 0):
        fail(f"--stat counts (lost, losses of unknown size) {want_lost}, {lost_bundles} bundles say lost_events")

    if release is None:
        fail("no SystemInfo packet")
    if not release:
        print("note: the recording has no uname: SystemInfo.utsname.release empty")

    # The merge order: by timestamp, lower CPU first, each CPU in its order.
    events.sort(key=lambda x: (x[0], x[1], x[2]))
    # (function_graph's text folds and indents: no record-by-record match.)
    text = [] if graph else raw_lines(raw_path)
    if graph:
        events = [x for x in events if x[3].WhichOneof("event") in ("funcgraph_entry", "funcgraph_exit")]
        text = [(b"", x[3].pid, x[1], x[3].WhichOneof("event"), b"") for x in events]
    if len(text) != len(events):
        fail(f"{len(events)} events, {len(text)} -R lines")
    checked = Counter()
    for (ts, cpu, _, e), (comm, pid, tcpu, name, body) in zip(events, text):
        kind = e.WhichOneof("event")
        ename = e.generic.event_name if kind == "generic" else kind
        if (e.pid, cpu) != (pid, tcpu) or ename != name:
            fail(f"at {ts}: perfetto says {ename} pid {e.pid} cpu {cpu}, -R says {name} pid {pid} cpu {tcpu}")
        if not graph and pid and pid in threads and threads[pid][0] and comm not in (b"<...>",) and threads[pid][0].encode() != comm:
            # The thread name is the saved cmdline, as the text shows it.
            fail(f"pid {pid}: ProcessTree names it {threads[pid][0]!r}, the text {comm!r}")
        if checked[ename] >= 50:
            continue
        msg = getattr(e, kind)
        if kind == "generic":
            names = [f.name for f in msg.field]
            tf = fields(body, names)
            if not tf:
                continue
            for f in msg.field:
                which = f.WhichOneof("value")
                v = getattr(f, which)
                t = tf[f.name]
                if which == "str_value":
                    if name in ("function", "bprint") or v.startswith("["):
                        continue  # symbol names / formatted text / arrays
                    if v.encode() != t and v.encode().rstrip(b"\n") != t.rstrip(b"\n"):
                        fail(f"{name} at {ts}: {f.name}={v!r}, -R shows {t!r}")
                elif not same_number(v, t):
                    fail(f"{name} at {ts}: {f.name}={v}, -R shows {t!r}")
        elif kind in ("sched_switch", "print"):
            names = [f.name for f, _ in msg.ListFields()]
            order = {"sched_switch": ["prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"], "print": ["ip", "buf"]}[kind]
            tf = fields(body, [n for n in order if n in names])
            for fd, v in msg.ListFields():
                t = tf.get(fd.name)
                if t is None:
                    fail(f"{kind} at {ts}: -R has no {fd.name}: {body!r}")
                if isinstance(v, str):
                    if v.encode().rstrip(b"\n") != t.rstrip(b"\n"):
                        fail(f"{kind} at {ts}: {fd.name}={v!r}, -R shows {t!r}")
                elif not same_number(v, t):
                    fail(f"{kind} at {ts}: {fd.name}={v}, -R shows {t!r}")
        elif kind in ("funcgraph_entry", "funcgraph_exit") and msg.func not in syms:
            fail(f"{kind} at {ts}: func {msg.func} is no interned kernel symbol")
        checked[ename] += 1

    if any(e.pid for *_, e in events) and not threads:
        fail("tasks ran, and the ProcessTree names none")
    if threads and not any(tg for _, tg in threads.values()):
        fail("ProcessTree threads without tgids")
    print(f"ok: {len(events)} events, {len(got)} event names, {len(threads)} threads, {len(syms)} symbols, checked {sum(checked.values())}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
