# A kprobe event with a fetched string argument, a stacktrace trigger on it,
# an exec event with a filter, and markers; nop tracer.
put kprobe_events 'p:openat do_sys_openat2 dfd=%di filename=+0(%si):string'
put events/kprobes/openat/enable 1
put events/kprobes/openat/trigger stacktrace
put events/sched/sched_process_exec/filter 'pid > 1'
put events/sched/sched_process_exec/enable 1
echo "kprobe scenario marker" >$T/trace_marker
three_readers
put events/kprobes/openat/trigger '!stacktrace'
put events/kprobes/openat/enable 0
put events/sched/sched_process_exec/enable 0
put events/sched/sched_process_exec/filter 0
put kprobe_events ''
