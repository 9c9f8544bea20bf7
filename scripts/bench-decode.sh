#!/bin/sh
# Decode speed: ftcat vs `trace-cmd report` on the same large trace.dat
# (issue 3 §8). Prints events/s for ftcat (default kernel style and
# --style trace-cmd) and trace-cmd report, the ratios and peak RSS.
#
#   scripts/bench-decode.sh [FILE]
#   MIXED=1 scripts/bench-decode.sh
#
# Without FILE, records one first with ftrec (needs root and tracefs):
# `dd bs=1` writing COUNT bytes (default 600000) with the write syscall and
# sched events, about 2 events per byte, so ≥ 1 M events. MIXED=1 records
# many event types instead (sched, irq, timer, syscalls, kmem) over LOOPS
# (default 600) runs of `ls -l /proc/self/`, about 2000 events each: there
# the print fmt interpreter does most of the work. KEEP=PATH keeps the
# recording.
# FTBOX names the binary (default: the static release build). Each program
# runs RUNS times (default 3); the best run counts. Times are CPU time
# (user+sys): on a loaded machine wall time measures the neighbours.
set -eu

FTBOX=${FTBOX:-target/x86_64-unknown-linux-musl/release/ftbox}
COUNT=${COUNT:-600000}
LOOPS=${LOOPS:-600}
RUNS=${RUNS:-3}
[ -x "$FTBOX" ] || { echo "bench-decode: no binary at $FTBOX (make, or set FTBOX)" >&2; exit 1; }
command -v trace-cmd >/dev/null || { echo "bench-decode: trace-cmd not installed" >&2; exit 1; }
/usr/bin/time -f %U true 2>/dev/null || { echo "bench-decode: needs GNU time (/usr/bin/time)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
bin=$(readlink -f "$FTBOX")
ln -s "$bin" "$tmp/ftcat"
ln -s "$bin" "$tmp/ftrec"

FILE=${1:-}
if [ -z "$FILE" ]; then
	FILE=$tmp/bench.dat
	if [ -n "${MIXED:-}" ]; then
		echo "recording: $LOOPS x ls -l /proc/self/ with sched, irq, timer, syscalls and kmem events"
		"$tmp/ftrec" --private -q -b 200000 -c -o "$FILE" \
			-e sched -e irq -e timer -e syscalls -e kmem \
			-- sh -c "i=0; while [ \$i -lt $LOOPS ]; do ls -l /proc/self/ > /dev/null; i=\$((i+1)); done"
	else
		echo "recording: dd bs=1 count=$COUNT with syscalls:sys_*_write and sched events"
		"$tmp/ftrec" --private -q -b 131072 -o "$FILE" \
			-e syscalls:sys_enter_write -e syscalls:sys_exit_write -e sched \
			-- dd if=/dev/zero of=/dev/null bs=1 count="$COUNT" 2>/dev/null
	fi
	[ -n "${KEEP:-}" ] && cp "$FILE" "$KEEP"
fi

events=$("$tmp/ftcat" --stat "$FILE" | sed -n 's/^records: //p')
size=$(wc -c < "$FILE")
echo "file: $FILE ($size bytes, $events events)"

# best: run "$@" RUNS times, print "cpu_seconds wall_seconds max_rss_kb" of
# the run with the least CPU time.
best() {
	i=0
	: > "$tmp/all"
	while [ $i -lt "$RUNS" ]; do
		/usr/bin/time -f '%U %S %e %M' -o "$tmp/t" "$@" > /dev/null 2> "$tmp/err" || {
			echo "bench-decode: failed: $*" >&2; cat "$tmp/err" >&2; exit 1; }
		awk '{ printf "%.3f %.2f %d\n", $1 + $2, $3, $4 }' "$tmp/t" >> "$tmp/all"
		i=$((i + 1))
	done
	sort -n "$tmp/all" | head -1
}

set -- $(best "$tmp/ftcat" "$FILE"); ft_cpu=$1 ft_wall=$2 ft_rss=$3
set -- $(best "$tmp/ftcat" --style trace-cmd "$FILE"); ftt_cpu=$1 ftt_wall=$2 ftt_rss=$3
set -- $(best trace-cmd report -i "$FILE"); tc_cpu=$1 tc_wall=$2 tc_rss=$3

awk -v n="$events" -v fc="$ft_cpu" -v fw="$ft_wall" -v fr="$ft_rss" \
    -v gc="$ftt_cpu" -v gw="$ftt_wall" -v gr="$ftt_rss" \
    -v tc="$tc_cpu" -v tw="$tc_wall" -v tr="$tc_rss" 'BEGIN {
	if (fc <= 0) fc = 0.001; if (gc <= 0) gc = 0.001; if (tc <= 0) tc = 0.001
	printf "%-24s %8s %8s %12s %11s\n", "", "cpu s", "wall s", "events/s", "peak RSS"
	printf "%-24s %8.3f %8.2f %12.0f %8d KB\n", "ftcat", fc, fw, n / fc, fr
	printf "%-24s %8.3f %8.2f %12.0f %8d KB\n", "ftcat --style trace-cmd", gc, gw, n / gc, gr
	printf "%-24s %8.3f %8.2f %12.0f %8d KB\n", "trace-cmd report", tc, tw, n / tc, tr
	printf "ratio (cpu): ftcat is %.1fx trace-cmd report (goal: 10x); --style trace-cmd %.1fx\n", tc / fc, tc / gc
}'
