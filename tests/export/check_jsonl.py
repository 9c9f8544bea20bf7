"""Check the JSON Lines that `ftcat --export jsonl` wrote against ftcat's
own `--stat` and `-R` output of the same file, loading it with DuckDB.

usage: check_jsonl.py JSONL STAT RAW
"""
import json
import sys
from collections import Counter

from common import fail, raw_lines, stat_counts

try:
    import duckdb
except ImportError as e:  # setup.sh installs it: missing is a failure
    fail(f"duckdb: {e} (run: sh scripts/setup.sh test)")


def main(path, stat_path, raw_path):
    want, want_lost = stat_counts(stat_path)
    rows = []
    for n, line in enumerate(open(path, "rb"), 1):
        try:
            rows.append(json.loads(line))
        except ValueError as e:
            fail(f"line {n} is not JSON: {e}: {line[:200]!r}")
    records = [r for r in rows if r["event"] != "lost"]
    lost = sum(r["count"] or 0 for r in rows if r["event"] == "lost")
    unknown = sum(r["count"] is None for r in rows if r["event"] == "lost")
    if (lost, unknown) != want_lost:
        fail(f"lost rows: {lost} events and {unknown} losses of unknown size, --stat {want_lost}")

    if not rows:
        if want:
            fail(f"no rows, --stat counts {dict(want)}")
        print("ok: no records")
        return
    con = duckdb.connect()
    src = f"read_json('{path}', format='newline_delimited', sample_size=-1, field_appearance_threshold=0)"
    got = Counter(dict(con.execute(f"SELECT event, count(*) FROM {src} WHERE event <> 'lost' GROUP BY event").fetchall()))
    graph = "ftrace:funcgraph_entry" in got
    if graph and got["ftrace:funcgraph_exit"] >= want["ftrace:funcgraph_exit"]:
        want["ftrace:funcgraph_exit"] = got["ftrace:funcgraph_exit"]  # --stat leaves out folded exits
    if got != want:
        diff = {k: (got.get(k), want.get(k)) for k in set(got) | set(want) if got.get(k) != want.get(k)}
        fail(f"per-event counts differ (duckdb, --stat): {diff}")

    if graph:
        print(f"ok: {len(records)} rows (function_graph: no line-by-line text match)")
        return
    text = raw_lines(raw_path)
    if len(text) != len(records):
        fail(f"{len(records)} rows, {len(text)} -R lines")
    for r, (comm, pid, cpu, name, body) in zip(records, text):
        if (r["pid"], r["cpu"], r["event"].split(":", 1)[-1]) != (pid, cpu, name):
            fail(f"row {r} vs -R {pid} {cpu} {name}")
        # (A byte that is not UTF-8 is \u00XX: its Latin-1 reading.)
        if r["comm"].encode() != comm and r["comm"].encode("latin-1", "replace") != comm:
            fail(f"ts {r['ts']}: comm {r['comm']!r}, -R {comm!r}")

    # A join/aggregate: context switches into each task, by SQL and by text.
    if "sched:sched_switch" in got:
        sql = dict(con.execute(f"SELECT next_comm, count(*) FROM {src} WHERE event = 'sched:sched_switch' GROUP BY next_comm").fetchall())
        txt = Counter()
        for _, _, _, name, body in text:
            if name == "sched_switch":
                txt[body.split(b" next_comm=", 1)[1].split(b" next_pid=", 1)[0].decode("utf-8", "replace")] += 1
        if sql != dict(txt):
            fail(f"sched_switch per next_comm: duckdb {sql}, text {dict(txt)}")
        # ... and a join: each switch's next task against its wakeup.
        con.execute(f"CREATE TABLE t AS SELECT * FROM {src}")
        if "sched:sched_wakeup" in got:
            con.execute("SELECT s.next_comm, count(*) FROM t s JOIN t w ON w.event = 'sched:sched_wakeup' AND w.event_pid = s.next_pid AND w.ts <= s.ts WHERE s.event = 'sched:sched_switch' GROUP BY 1").fetchall()
    print(f"ok: {len(records)} rows, {len(got)} events")


if __name__ == "__main__":
    main(*sys.argv[1:4])
