#!/bin/sh
# Decode speed: ftcat against `trace-cmd report` (issue 14) on the four
# kinds of recording, or on the files given. Per file: events, CPU seconds
# of ftcat (kernel style and --style trace-cmd-3.1, the release installed here) and of trace-cmd report,
# events/s, the ratios and peak RSS. A benchmark, not a test: no pass/fail.
#
#   scripts/bench-decode.sh [FILE...]
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
# program runs RUNS times (default 1); the least CPU time counts. Times
# are CPU time (user+sys): on a loaded machine wall time measures the
# neighbours. Output goes to /dev/null.
set -eu

FTBOX=${FTBOX:-target/x86_64-unknown-linux-musl/release/ftbox}
REF=${REF:-}
BENCH_DIR=${BENCH_DIR:-/tmp/ftbox-bench}
COUNT=${COUNT:-600000}
ALL_LOOPS=${ALL_LOOPS:-20}
ALL_MIN_EVENTS=${ALL_MIN_EVENTS:-10000000}
RUNS=${RUNS:-1}
VM_KERNEL=${VM_KERNEL:-6.12.117+deb12-amd64}
[ -x "$FTBOX" ] || { echo "bench-decode: no binary at $FTBOX (make, or set FTBOX)" >&2; exit 1; }
command -v trace-cmd >/dev/null || { echo "bench-decode: trace-cmd not installed" >&2; exit 1; }
/usr/bin/time -f %U true 2>/dev/null || { echo "bench-decode: needs GNU time (/usr/bin/time)" >&2; exit 1; }

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

# best CMD...: "cpu_seconds max_rss_kb" of the run with the least CPU time.
best() {
	i=0
	: > "$tmp/all"
	while [ $i -lt "$RUNS" ]; do
		/usr/bin/time -f '%U %S %M' -o "$tmp/t" "$@" > /dev/null 2> "$tmp/err" || {
			echo "bench-decode: failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
		awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$tmp/t" >> "$tmp/all"
		i=$((i + 1))
	done
	sort -n "$tmp/all" | head -1
}

# row LABEL EVENTS TC_CPU CMD...: one line of the table.
row() {
	label=$1 n=$2 tc=$3
	shift 3
	set -- $(best "$@")
	awk -v l="$label" -v n="$n" -v c="$1" -v r="$2" -v tc="$tc" 'BEGIN {
		if (c <= 0) c = 0.001
		printf "  %-28s %8.3f %12.0f %7.1fx %9d KB\n", l, c, n / c, tc / c, r }'
}

for f in "$@"; do
	[ -f "$f" ] || { echo "bench-decode: no file $f" >&2; exit 1; }
	events=$(events "$f")
	types=$("$tmp/new/ftcat" --stat "$f" | awk '/^EVENT/ { on = 1; next } NF == 0 { on = 0 } on { n++ } END { print n + 0 }')
	echo "$f: $(wc -c < "$f") bytes, $events events, $types event types"
	printf "  %-28s %8s %12s %8s %12s\n" "" "cpu s" "events/s" "ratio" "peak RSS"
	set -- $(best trace-cmd report -i "$f")
	tc=$1
	awk -v n="$events" -v c="$1" -v r="$2" 'BEGIN { if (c <= 0) c = 0.001
		printf "  %-28s %8.3f %12.0f %8s %9d KB\n", "trace-cmd report", c, n / c, "1.0x", r }'
	row "ftcat" "$events" "$tc" "$tmp/new/ftcat" "$f"
	row "ftcat --style trace-cmd-3.1" "$events" "$tc" "$tmp/new/ftcat" --style trace-cmd-3.1 "$f"
	if [ -n "$REF" ]; then
		row "ref ftcat" "$events" "$tc" "$tmp/ref/ftcat" "$f"
		# (Builds before the 3.4 style called 3.1's output "trace-cmd".)
		row "ref ftcat --style trace-cmd" "$events" "$tc" "$tmp/ref/ftcat" --style "${REF_TC_STYLE:-trace-cmd}" "$f"
	fi
done
echo "goal (issue 14): ftcat >= 10x trace-cmd report, --style trace-cmd >= 5x, peak RSS <= 16 MiB"
