#!/bin/sh
# Recorder benchmark (a script, not a timed test): a getppid storm pinned to
# CPU 0 with syscalls/sys_enter_getppid and sys_exit_getppid enabled, a 4 MiB
# per-CPU buffer, the recorder pinned to CPU 1. For each recorder prints the
# events produced (2 per getppid call), recorded, lost (the kernel's overrun
# plus dropped counts) and the recorder's CPU time.
#
#   scripts/bench-record.sh [SECONDS]      (default 5; root and tracefs needed)
#
# Recorders: ftrec with splice, ftrec --no-splice (read()), ftrec --mmap when
# the binary has it, ftrec --compression zstd (the CPU time then includes
# compressing, after the recording), and `cat per_cpu/cpu0/trace_pipe_raw` as
# the naive baseline. Each run uses its own tracefs instance, removed afterwards.
set -eu
SECS=${1:-5}
HERE=$(cd "$(dirname "$0")/.." && pwd)
FTREC=${FTREC:-$HERE/bin/ftrec}
T=${TRACEFS:-/sys/kernel/tracing}
[ "$(id -u)" = 0 ] || { echo "bench-record: needs root" >&2; exit 1; }
[ -e "$T/trace" ] || mount -t tracefs nodev "$T"
[ -x "$FTREC" ] || { echo "bench-record: $FTREC missing (run make)" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "bench-record: needs 2 CPUs" >&2; exit 1; }
W=$(mktemp -d /tmp/bench-record.XXXXXX)
trap 'rm -rf "$W"; for i in "$T"/instances/bench-*; do [ -d "$i" ] && rmdir "$i" 2>/dev/null; done; true' EXIT

# The storm: getppid as fast as possible for SECS seconds; prints the count.
cat > "$W/storm.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(int argc, char **argv) {
	double secs = atof(argv[1]);
	struct timespec a, b;
	unsigned long n = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		for (int i = 0; i < 65536; i++)
			syscall(SYS_getppid);
		n += 65536;
		clock_gettime(CLOCK_MONOTONIC, &b);
		if ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 >= secs)
			break;
	}
	printf("%lu\n", n);
	return 0;
}
EOF
cc -O2 -o "$W/storm" "$W/storm.c"

# CPU seconds (user+sys) of a finished process, from /proc before reaping is
# not possible for background jobs, so wrap with /usr/bin/time when present.
TIME=/usr/bin/time
[ -x $TIME ] || TIME=

stat_sum() { # instance cpu key
	awk -v k="$3:" '$0 ~ "^"k {print $NF}' "$T/instances/$1/per_cpu/cpu$2/stats"
}

report() { # name produced lost cputime recorded
	awk -v n="$1" -v p="$2" -v l="$3" -v c="$4" -v r="$5" 'BEGIN {
		printf "%-22s produced %10d  recorded %10d  lost %9d (%5.2f%%)  recorder cpu %6.2fs (%4.1f%% of a core)\n",
			n, p, r, l, (p ? 100 * l / p : 0), c, 100 * c / '"$SECS"' }'
}

run_ftrec() { # name extra-args...
	name=$1; shift
	f=$(printf %s "$name" | tr -c 'A-Za-z0-9' _)
	out="$W/$f.dat"
	# --private: ftrec makes and removes its own instance; stats come from its summary.
	dest=$out to=/dev/null
	if [ -n "${PIPE_TO:-}" ]; then
		# -o -: the stream goes through a FIFO to the reader $PIPE_TO, on the
		# recorder's CPU (as ssh or nc would be on a board).
		rm -f "$W/fifo"; mkfifo "$W/fifo"
		taskset -c 1 sh -c "$PIPE_TO" < "$W/fifo" > "$out" &
		dest=- to=$W/fifo
	fi
	taskset -c 1 ${TIME:+$TIME -f "%U %S" -o "$W/$f.time"} "$FTREC" --private -b 4096 \
		-e syscalls:sys_enter_getppid -e syscalls:sys_exit_getppid "$@" -o "$dest" > "$to" 2> "$W/$f.err" &
	pid=$!
	sleep 1
	# $pid is /usr/bin/time (or ftrec itself); its readers are ftrec's children.
	main=$pid
	[ -n "$TIME" ] && main=$(pgrep -P $pid | head -1)
	# The readers start once the metadata is written: on a slow pipe that
	# takes seconds (kallsyms), and the storm must not run before.
	i=0
	while [ -z "$(pgrep -P "$main")" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
	n=$(taskset -c 0 "$W/storm" "$SECS")
	sleep 0.5
	rd=0
	for r in $(pgrep -P "$main"); do
		rd=$((rd + $(awk '{print $14 + $15}' /proc/$r/stat)))
	done
	kill -INT "$main" 2>/dev/null || true
	wait || true
	# Summary lines: "CPU0: B bytes, E events recorded" and "CPU 0: L events lost".
	rec=$(awk '/events recorded/ {s += $4} END {print s+0}' "$W/$f.err")
	lost=$(awk '/events lost|events dropped/ {s += $3} END {print s+0}' "$W/$f.err")
	if [ -n "${PIPE_TO:-}" ]; then
		# A stream's summary has no event counts (its pages are not parsed
		# on the board): count what reached the far end.
		"$(dirname "$FTREC")/ftcat" --stat "$out" > "$W/$f.stat" 2>&1 || true
		rec=$(awk '/^records:/ {print $2}' "$W/$f.stat")
	fi
	cpu=$(awk '{print $1 + $2}' "$W/$f.time" 2>/dev/null || echo 0)
	report "$name" $((n * 2)) "$lost" "$cpu" "$rec"
	# How much of that the per-CPU readers used; the rest is writing trace.dat.
	awk -v t=$rd -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%-22s of which the readers %.2fs\n", "", t / hz}'
	printf '%-22s file %d bytes\n' "" "$(stat -c %s "$out" 2>/dev/null || echo 0)"
	rm -f "$out"
}

run_cat() {
	I=bench-cat-$$
	mkdir "$T/instances/$I"
	D=$T/instances/$I
	echo 4096 > "$D/buffer_size_kb"
	echo 1 > "$D/events/syscalls/sys_enter_getppid/enable"
	echo 1 > "$D/events/syscalls/sys_exit_getppid/enable"
	taskset -c 1 ${TIME:+$TIME -f "%U %S" -o "$W/cat.time"} cat "$D/per_cpu/cpu0/trace_pipe_raw" > "$W/cat.raw" &
	pid=$!
	sleep 1
	n=$(taskset -c 0 "$W/storm" "$SECS")
	sleep 0.5
	echo 0 > "$D/tracing_on"
	kill -INT $(pgrep -P $pid 2>/dev/null || true) $pid 2>/dev/null || true
	wait $pid 2>/dev/null || true
	lost=$(( $(stat_sum $I 0 overrun) + $(stat_sum $I 0 'dropped events') ))
	read_ev=$(stat_sum $I 0 'read events')
	cpu=$(awk '{print $1 + $2}' "$W/cat.time" 2>/dev/null || echo 0)
	report "cat trace_pipe_raw" $((n * 2)) "$lost" "$cpu" "$read_ev"
	echo 0 > "$D/events/syscalls/sys_enter_getppid/enable"
	echo 0 > "$D/events/syscalls/sys_exit_getppid/enable"
	rm -f "$W/cat.raw"
	rmdir "$D"
}

echo "getppid storm on CPU 0 for ${SECS}s, recorder on CPU 1, 4 MiB per-CPU buffer"
run_ftrec "ftrec splice"
run_ftrec "ftrec read()" --no-splice
if "$FTREC" --help | grep -q -- --mmap; then
	run_ftrec "ftrec mmap" --mmap
fi
if "$FTREC" --help | grep -q -- --compression; then
	run_ftrec "ftrec splice zstd" --compression zstd
fi
if "$FTREC" --help | grep -q "streams to stdout"; then
	# A stream on a pipe that keeps up, and one that does not (a reader of
	# about 1 MB/s, a slow serial line or link): what it cannot take is lost
	# in the kernel's ring buffer and counted, as with a slow disk.
	PIPE_TO=cat
	run_ftrec "ftrec -o - | cat"
	PIPE_TO="python3 -c 'import sys,time
while True:
  d = sys.stdin.buffer.read1(65536)
  if not d: break
  sys.stdout.buffer.write(d); time.sleep(0.06)'"
	run_ftrec "ftrec -o - | 1 MB/s"
	PIPE_TO=
fi
run_cat
