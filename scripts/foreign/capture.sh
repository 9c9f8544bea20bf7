#!/bin/sh
# The capture itself, shared by the guest (/init, see guest-init.sh) and by
# capture-live.sh on the build machine. Sourced with:
#   T    the tracefs directory whose ring buffer records (top level or an instance)
#   TOP  the tracefs mount (saved_cmdlines, printk_formats are global)
#   C    the output directory
#   BUFKB, SUBBUF_KB (optional), ONLY_PID (optional: trace only this shell
#        and its children, for a live machine that is busy with other work)
# It records a short fixed workload and writes into $C: header_page,
# header_event (of this buffer), events/SYSTEM/EVENT (the formats of the
# enabled events), ftrace/EVENT (every ftrace format), cpuN.raw (the
# trace_pipe_raw pages, consumed after tracing_on=0), cpuN.stats,
# trace.txt (the kernel's own text: the oracle), saved_cmdlines,
# printk_formats, trace_clock, uname, nproc, kallsyms.gz, cmdline.
[ -n "${SUBBUF_KB:-}" ] && echo "$SUBBUF_KB" > $T/buffer_subbuf_size_kb
cd $T || { echo "capture.sh: no tracefs at $T" >&2; exit 1; }
echo 0 > tracing_on
echo "$BUFKB" > buffer_size_kb
echo > trace
[ -e options/hash-ptr ] && echo 0 > options/hash-ptr
if [ -n "${ONLY_PID:-}" ]; then
	echo 1 > options/event-fork
	echo "$ONLY_PID" > set_event_pid
fi
# Events whose text needs no kallsyms (no %pS/%ps): formats with longs,
# pointers (no_hash_pointers is on the command line), strings, arrays,
# __data_loc, symbolic/flags tables, and the syscall events' own printer.
# (Not raw_syscalls:sys_exit, softirq_raise, softirq_exit: the timer tick
# under emulation would make most of a fixture out of them.)
for e in sched/sched_switch sched/sched_wakeup sched/sched_waking \
	sched/sched_process_fork sched/sched_process_exec sched/sched_process_exit \
	sched/sched_process_wait sched/sched_wakeup_new \
	raw_syscalls/sys_enter \
	syscalls/sys_enter_openat syscalls/sys_exit_openat \
	syscalls/sys_enter_write syscalls/sys_exit_write \
	syscalls/sys_enter_nanosleep syscalls/sys_exit_nanosleep \
	task/task_newtask task/task_rename \
	signal/signal_generate signal/signal_deliver \
	irq/irq_handler_entry irq/irq_handler_exit \
	irq/softirq_entry \
	oom/mark_victim; do
	[ -e events/$e/enable ] && echo 1 > events/$e/enable
done

echo 1 > tracing_on
# The workload: short (a fixture stays a few tens of KB), the same on every
# machine: a fork, a signal to self, an exec, a sleep, a file read, and
# trace_marker writes (one with a tab and a long tail).
echo "ftbox capture start" > trace_marker
sh -c 'kill -USR1 $$' 2>/dev/null || true
sleep 0.01
cat /proc/version > /dev/null
printf 'marker with\ttab and a long tail %s\n' 0123456789abcdef0123456789abcdef > trace_marker
echo "ftbox capture end" > trace_marker
echo 0 > tracing_on

mkdir -p $C/events $C/ftrace
cp $T/events/header_page $T/events/header_event $C/
for f in $TOP/events/ftrace/*/format; do
	n=${f%/format}; n=${n##*/}; cat $f > $C/ftrace/$n
done
for e in events/*/*/enable; do
	[ "$(cat $e)" = 1 ] || continue
	d=${e%/enable}; ev=${d##*/}; s=${d%/*}; s=${s##*/}
	mkdir -p $C/events/$s; cat $d/format > $C/events/$s/$ev
done
cat trace > $C/trace.txt
cat $TOP/saved_cmdlines > $C/saved_cmdlines
cat $TOP/printk_formats > $C/printk_formats 2>/dev/null
cat trace_clock > $C/trace_clock
cat buffer_subbuf_size_kb > $C/subbuf_size_kb 2>/dev/null
for d in per_cpu/cpu*; do
	n=${d##*/cpu}
	# trace_pipe_raw blocks when empty: give it a moment, then stop it.
	timeout 3 cat $d/trace_pipe_raw > $C/cpu$n.raw || true
	cat $d/stats > $C/cpu$n.stats
done
uname -a > $C/uname
nproc > $C/nproc
gzip -c /proc/kallsyms > $C/kallsyms.gz
cat /proc/cmdline > $C/cmdline
