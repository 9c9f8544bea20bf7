#!/bin/sh
# Capture on THIS machine, in a private tracefs instance with an 8 KiB
# sub-buffer (buffer_subbuf_size_kb, Linux 6.8+): real pages of a ring buffer
# whose sub-buffers are two system pages. Only this shell and its children
# are traced (set_event_pid + event-fork), so other work on the machine stays
# out of the fixture.
#
#   scripts/foreign/capture-live.sh [OUT] [SUBBUF_KB]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
C=${1:-${WORK:-/tmp/ftbox-foreign}/capture/subbuf8k}
SUBBUF_KB=${2:-8}
BUFKB=64
TOP=/sys/kernel/tracing
mountpoint -q $TOP || mount -t tracefs nodev $TOP
T=$TOP/instances/ftbox-foreign-$$
rm -rf "$C" && mkdir -p "$C"
mkdir $T
ONLY_PID=$$
# The workload runs busybox (busybox-static), as in the guests, so the
# fixture does not grow with the host's glibc start-up syscalls.
bb=$(mktemp -d)
for a in sh cat sleep kill printf timeout uname nproc gzip; do ln -s "$(command -v busybox)" $bb/$a; done
trap 'cd /; rmdir $T; rm -rf $bb' EXIT
PATH=$bb:$PATH
. "$here/capture.sh"
# The build machine is x86_64 (or another little-endian host).
echo $(python3 -c "import sys; print(sys.byteorder)") > "$C/endian"
