#!/bin/sh
# /init of the capture guest (busybox only). It records a short, fixed
# workload with the kernel's own ring buffer, then writes a "tracefs capture"
# to the console as a base64 tar between two marker lines, and powers off.
# What is captured is exactly what a trace.dat needs (header_page,
# header_event, the formats of the events used, every ftrace/ format,
# per-CPU raw pages, saved_cmdlines, printk_formats, kallsyms) plus the
# oracle: the kernel's own `trace` text. run-vm.sh unpacks it, pack.py turns
# it into a trace.dat.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null ||
	mount -t debugfs nodev /sys/kernel/debug
T=/sys/kernel/tracing
[ -e $T/trace ] || T=/sys/kernel/debug/tracing
TOP=$T
. /capture.conf        # BUFKB, SUBBUF_KB (optional)
echo 0 > /proc/sys/kernel/printk


C=/tmp/cap
. /capture.sh
cd /tmp
echo "=====FTBOX-CAPTURE-BEGIN====="
tar cf - cap | gzip -9 | base64
echo "=====FTBOX-CAPTURE-END====="
sync
poweroff -f
