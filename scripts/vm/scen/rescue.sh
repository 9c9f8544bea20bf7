# ftctl alone, as a person in a rescue shell would use it: graph one function,
# add an event with a filter and a stacktrace trigger, look, then reset.
# Every step is also checked against the control files it should have set.
if ! have ftctl; then note "ftctl is not implemented yet: rescue scenario pending"; fi
run set.funcs ftctl funcs --graph do_sys_openat2
run set.tracer ftctl tracer function_graph
run set.enable ftctl enable sched:sched_process_exec
run set.filter ftctl filter sched:sched_process_exec 'pid > 1'
run set.trigger ftctl trigger sched:sched_process_exec stacktrace
# What the control files say now (the kernel's view of what ftctl did).
{
    echo "current_tracer: $(cat $T/current_tracer)"
    echo "set_graph_function: $(cat $T/set_graph_function)"
    echo "set_event: $(cat $T/set_event)"
    echo "filter: $(cat $T/events/sched/sched_process_exec/filter)"
    echo "trigger: $(grep -v '^#' $T/events/sched/sched_process_exec/trigger)"
} >$S/control.got
{
    echo "current_tracer: function_graph"
    echo "set_graph_function: do_sys_openat2"
    echo "set_event: sched:sched_process_exec"
    echo "filter: pid > 1"
    echo "trigger: stacktrace:unlimited"
} >$S/control.want
same "control files after ftctl funcs/tracer/enable/filter/trigger" control.want control.got - set.trigger
: >$T/trace
run on ftctl on
workload
run mark ftctl mark rescue shell marker
run off ftctl off
cat $T/trace >$S/trace.txt
run show ftctl show
same "ftctl show vs kernel trace" trace.txt show
run status ftctl status
# status must mention what is set; the exact layout is ftctl's own.
for w in function_graph do_sys_openat2 sched_process_exec 'pid > 1' stacktrace; do
    grep -qF "$w" $S/status || echo "status does not mention: $w"
done >$S/status.missing
: >$S/empty
same "ftctl status mentions tracer, graph function, event, filter, trigger" empty status.missing - status
run reset ftctl reset
state >$S/state.reset
same "ftctl reset restores the boot state" state.before state.reset - reset
