# Reference pairs for the decoder's tests that only a kernel with function
# tracing can make (the development host refuses it). Same shape as the
# shared fixtures: x-NAME.extract.dat (trace-cmd extract of a buffer) and
# x-NAME.trace.txt (the kernel's own `trace` text of that same buffer).
# The exact commands are in fixtures/README.md; keep the two in step.
pair() { # NAME: the buffer is filled and tracing is off
    cat $T/trace >$S/x-$1.trace.txt
    run x-$1.extract trace-cmd extract -o x-$1.extract.dat
    run x-$1.report trace-cmd report -i x-$1.extract.dat
}
restart() { echo 0 >$T/tracing_on; : >$T/trace; echo 1 >$T/tracing_on; }

# function_graph with return values (CONFIG_FUNCTION_GRAPH_RETVAL, 6.5+).
if [ -e $T/options/funcgraph-retval ]; then
    put set_graph_function do_sys_openat2
    put current_tracer function_graph
    put options/funcgraph-retval 1
    fill; pair fgretval
    put options/funcgraph-retval 0
    put current_tracer nop
    : >$T/set_graph_function
else
    note "options/funcgraph-retval absent: kernel built without CONFIG_FUNCTION_GRAPH_RETVAL"
fi

# func_repeats: the function tracer with func-no-repeats folds consecutive
# calls of one function from one caller; reading a directory calls filldir64
# once per entry, and the next getdents64's iterate_dir ends each run.
# A trace_marker line in the middle (print event).
if [ -e $T/options/func-no-repeats ]; then
    put set_ftrace_filter iterate_dir filldir64
    put current_tracer function
    put options/func-no-repeats 1
    restart
    ls /bin >/dev/null
    echo "fixture marker: between the two ls runs" >$T/trace_marker
    ls /vm /vm/scen >/dev/null
    echo 0 >$T/tracing_on
    pair funcrepeats
    put options/func-no-repeats 0
    put current_tracer nop
    : >$T/set_ftrace_filter
else
    note "options/func-no-repeats absent"
fi

# kprobe and kretprobe events with fetch args of several types (s32, x64,
# u64, string of a user pointer — the kernel prints what it can —, ustring),
# a stacktrace trigger (kernel_stack records) and markers; nop tracer.
put kprobe_events 'p:openat do_sys_openat2 dfd=%di:s32 filename=+0(%si):string ufile=+0(%si):ustring flags=+0(%dx):x64 mode=+8(%dx):u64'
echo 'r:openat_ret do_sys_openat2 ret=$retval:s32' >>$T/kprobe_events
put events/kprobes/openat/trigger 'stacktrace if dfd == -100'
put events/kprobes/enable 1
restart
echo "fixture marker: kprobe start" >$T/trace_marker
workload
echo "fixture marker: kprobe end" >$T/trace_marker
echo 0 >$T/tracing_on
pair kstack
put events/kprobes/enable 0
put events/kprobes/openat/trigger '!stacktrace if dfd == -100'
put kprobe_events ''
echo 1 >$T/tracing_on
