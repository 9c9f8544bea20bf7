#!/bin/sh
# Decode speed: ftcat against `trace-cmd report` (issue 14) on the four
# kinds of recording, or on the files given. Per file: events, CPU seconds
# of ftcat (kernel style and --style trace-cmd-3.1, the release installed here) and of trace-cmd report,
# events/s, the ratios and peak RSS. A benchmark, not a test: no pass/fail.
#
#   scripts/bench-decode.sh [FILE...]
#   RUNS=10 scripts/bench-decode.sh fixtures/linux-6.12/*.dat   # small files
#
# Without FILE, the four kinds:
#   all   `-e all` over a mixed workload (file-tree listing, compression, a
#         compiler run, disk writes): $BENCH_DIR/all.dat, recorded with
#         ftrec when missing (root and tracefs; goal >= 10 M events).
#   fg    function_graph and
#   func  function: $FG and $FUNC, else the VM lab's bench recordings
#         $BENCH_DIR/{fg,func}-V.dat (V: $VM_KERNEL's version, 6.12 by
#         default; about 1 M records each of a mixed workload, recorded
#         with ftrec in the guest), made when missing by
#         `scripts/vmtest.sh -k $VM_KERNEL -s bench` (this host refuses
#         function tracing; QEMU under TCG, a few minutes of one core).
#         If the lab cannot make them: the last `make vmtest`'s small
#         recordings (target/vmtest/KERNEL/{fg,func}/ext.dat), else the
#         linux-6.12 fixtures.
#   dd    syscalls:sys_*_write and sched on `dd bs=1 count=$COUNT`:
#         $BENCH_DIR/dd.dat, recorded when missing.
# BENCH_DIR defaults to /tmp/ftbox-bench (recordings of hundreds of MB do
# not belong in the tree). LOCK, when set, is a file that the recordings
# hold with flock(1) (helpers sharing one tracefs). ALL_LOOPS (default
# 20) sizes the mixed workload; the whole system is traced, so the count
# follows the machine's load too (on a busy 2-CPU machine 10 loops gave
# 5.4 M events, 20 gave 41 M; on a quieter one 20 gave 8 M): a recording
# of fewer than ALL_MIN_EVENTS (default 10 M) is made again, longer.
#
# FTBOX names the binary (default: the static release build); REF, when
# set, names a second one (an older build) measured beside it. Each
# program runs RUNS times (default 3), the programs taking turns, so that
# a neighbour's load falls on all of them alike; the least CPU time
# counts. Times are CPU time (user+sys, from wait4's rusage to the
# microsecond: GNU time rounds to 10 ms, a tenth of a small file's
# time): on a loaded machine wall time measures the neighbours. Output
# goes to /dev/null.
set -eu

FTBOX=${FTBOX:-target/x86_64-unknown-linux-musl/release/ftbox}
REF=${REF:-}
BENCH_DIR=${BENCH_DIR:-/tmp/ftbox-bench}
COUNT=${COUNT:-600000}
ALL_LOOPS=${ALL_LOOPS:-20}
ALL_MIN_EVENTS=${ALL_MIN_EVENTS:-10000000}
RUNS=${RUNS:-3}
VM_KERNEL=${VM_KERNEL:-6.12.117+deb12-amd64}
[ -x "$FTBOX" ] || { echo "bench-decode: no binary at $FTBOX (make, or set FTBOX)" >&2; exit 1; }
command -v trace-cmd >/dev/null || { echo "bench-decode: trace-cmd not installed" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-decode: needs python3 (to read each run's rusage)" >&2; exit 1; }
/usr/bin/time -f %M true 2>/dev/null || { echo "bench-decode: needs GNU time (/usr/bin/time)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/new" "$tmp/ref"
for a in ftcat ftrec; do ln -s "$(readlink -f "$FTBOX")" "$tmp/new/$a"; done
[ -z "$REF" ] || ln -s "$(readlink -f "$REF")" "$tmp/ref/ftcat"

# locked CMD...: run CMD holding $LOCK, when set.
locked() {
	if [ -n "${LOCK:-}" ]; then flock "$LOCK" "$@"; else "$@"; fi
}

# The mixed workload of the -e all recording: each loop lists a file
# tree, compresses and decompresses it, compiles a small C file, and
# writes and syncs a file.
cat > "$tmp/mixed.sh" <<'EOF'
w=$(mktemp -d)
printf 'int main(void) { return 0; }\n' > "$w/t.c"
i=0
while [ "$i" -lt "$1" ]; do
	ls -lR /usr/include > "$w/ls" 2>/dev/null || true
	gzip -c "$w/ls" | gzip -dc > /dev/null
	cc -O2 -c -o "$w/t.o" "$w/t.c" 2>/dev/null || true
	dd if=/dev/zero of="$w/dd" bs=64k count=64 conv=fsync 2>/dev/null
	i=$((i + 1))
done
rm -rf "$w"
EOF

# events FILE: how many records FILE holds.
events() {
	"$tmp/new/ftcat" --stat "$1" | sed -n 's/^records: //p'
}

# The count follows the machine's load, so a recording short of
# $ALL_MIN_EVENTS (the issue's 10 M) is made again with more loops, in
# proportion.
record_all() {
	loops=$ALL_LOOPS
	while :; do
		echo "recording $1: -e all over $loops loops of a mixed workload"
		locked "$tmp/new/ftrec" --private -q -b 65536 -o "$1" -e all -- sh "$tmp/mixed.sh" "$loops"
		n=$(events "$1")
		[ "${n:-0}" -ge "$ALL_MIN_EVENTS" ] && return
		loops=$((loops * ALL_MIN_EVENTS / (${n:-0} + 1) + 1))
		echo "  $n events, fewer than $ALL_MIN_EVENTS"
	done
}

record_dd() {
	echo "recording $1: dd bs=1 count=$COUNT with syscalls:sys_*_write and sched events"
	locked "$tmp/new/ftrec" --private -q -b 131072 -o "$1" \
		-e syscalls:sys_enter_write -e syscalls:sys_exit_write -e sched \
		-- dd if=/dev/zero of=/dev/null bs=1 count="$COUNT" 2>/dev/null
}

# The VM lab's bench recordings of $VM_KERNEL into $BENCH_DIR/{fg,func}-V.dat,
# when missing; a lab that fails leaves them missing.
vm_bench() {
	v=$(echo "$VM_KERNEL" | cut -d. -f1,2)
	[ -f "$BENCH_DIR/fg-$v.dat" ] && [ -f "$BENCH_DIR/func-$v.dat" ] && return
	echo "recording $BENCH_DIR/{fg,func}-$v.dat in the VM lab ($VM_KERNEL, -s bench)"
	o=$BENCH_DIR/vmtest
	bin=
	file -L "$FTBOX" 2>/dev/null | grep -q static && bin=$(readlink -f "$FTBOX")
	FTBOX_BIN=$bin nice sh "$(dirname "$0")/vmtest.sh" -k "$VM_KERNEL" -s bench -o "$o" >&2 ||
		echo "bench-decode: the VM lab failed (see $o/$VM_KERNEL/console.log)" >&2
	for k in fg func; do
		[ -f "$o/$VM_KERNEL/bench-$k/$k.dat" ] && mv "$o/$VM_KERNEL/bench-$k/$k.dat" "$BENCH_DIR/$k-$v.dat"
	done
	return 0
}

# A VM lab recording of kind $1: the bench one, else the last vmtest's,
# else the fixture $2.
vm_or_fixture() {
	f=$BENCH_DIR/$1-$(echo "$VM_KERNEL" | cut -d. -f1,2).dat
	[ -f "$f" ] && { echo "$f"; return; }
	for f in "${CARGO_TARGET_DIR:-target}"/vmtest/*/"$1"/ext.dat; do
		[ -f "$f" ] && { echo "$f"; return; }
	done
	echo "fixtures/linux-6.12/$2"
}

if [ $# -eq 0 ]; then
	mkdir -p "$BENCH_DIR"
	[ -f "$BENCH_DIR/all.dat" ] || record_all "$BENCH_DIR/all.dat"
	[ -f "$BENCH_DIR/dd.dat" ] || record_dd "$BENCH_DIR/dd.dat"
	[ -n "${FG:-}" ] && [ -n "${FUNC:-}" ] || vm_bench
	set -- "$BENCH_DIR/all.dat" "${FG:-$(vm_or_fixture fg fg.dat)}" "${FUNC:-$(vm_or_fixture func func.dat)}" "$BENCH_DIR/dd.dat"
fi

# measure.py RUNS -- CMD... [-- CMD...]: runs the commands in turn, RUNS
# rounds; prints for each "least_cpu_seconds peak_rss_kb", a line each.
# The peak RSS comes from a first round under GNU time (which also warms
# the page cache), not from these rusages: a child of python starts from
# python's own memory, and the kernel counts that into its peak.
cat > "$tmp/measure.py" <<'EOF'
import os, sys
runs, cmds = int(sys.argv[1]), []
for a in sys.argv[2:]:
    if a == "--":
        cmds.append([])
    else:
        cmds[-1].append(a)
tmp = os.path.dirname(sys.argv[0])
err, rss = os.path.join(tmp, "err"), os.path.join(tmp, "rss")

def run(argv):
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)])
    _, status, ru = os.wait4(pid, 0)
    if status != 0:
        sys.stderr.write("bench-decode: failed: " + " ".join(argv) + "\n" + open(err).read())
        sys.exit(1)
    return ru.ru_utime + ru.ru_stime

peak = []
for c in cmds:
    run(["/usr/bin/time", "-f", "%M", "-o", rss] + c)
    peak.append(int(open(rss).read().split()[-1]))
least = [float("inf")] * len(cmds)
for _ in range(runs):
    least = [min(t, run(c)) for t, c in zip(least, cmds)]
for cpu, kb in zip(least, peak):
    print("%.4f %d" % (cpu, kb))
EOF

# row LABEL EVENTS TC_CPU CPU RSS: one line of the table.
row() {
	awk -v l="$1" -v n="$2" -v tc="$3" -v c="$4" -v r="$5" 'BEGIN {
		if (c <= 0) c = 0.0001
		printf "  %-28s %8.3f %12.0f %7.1fx %9d KB\n", l, c, n / c, tc / c, r }'
}

for f in "$@"; do
	[ -f "$f" ] || { echo "bench-decode: no file $f" >&2; exit 1; }
	events=$(events "$f")
	types=$("$tmp/new/ftcat" --stat "$f" | awk '/^EVENT/ { on = 1; next } NF == 0 { on = 0 } on { n++ } END { print n + 0 }')
	echo "$f: $(wc -c < "$f") bytes, $events events, $types event types"
	printf "  %-28s %8s %12s %8s %12s\n" "" "cpu s" "events/s" "ratio" "peak RSS"
	set -- -- trace-cmd report -i "$f" -- "$tmp/new/ftcat" "$f" -- "$tmp/new/ftcat" --style trace-cmd-3.1 "$f"
	# (Builds before the 3.4 style called 3.1's output "trace-cmd".)
	[ -z "$REF" ] || set -- "$@" -- "$tmp/ref/ftcat" "$f" -- "$tmp/ref/ftcat" --style "${REF_TC_STYLE:-trace-cmd}" "$f"
	python3 "$tmp/measure.py" "$RUNS" "$@" > "$tmp/times"
	tc=$(awk 'NR == 1 { print $1 }' "$tmp/times")
	for label in "trace-cmd report" "ftcat" "ftcat --style trace-cmd-3.1" "ref ftcat" "ref ftcat --style trace-cmd"; do
		read -r cpu rss || break
		row "$label" "$events" "$tc" "$cpu" "$rss"
	done < "$tmp/times"
done
echo "goal (issue 14): ftcat >= 10x trace-cmd report, --style trace-cmd >= 5x, peak RSS <= 16 MiB;"
echo "  on small files (a few MB, where start-up counts) ftcat >= 2x"
