# A private instance with events, a trigger and markers; the top level is
# never touched. Read by the three readers with -B.
I=lab
mkdir $T/instances/$I || exit 1
D=instances/$I
put $D/events/sched/sched_process_exec/enable 1
put $D/events/sched/sched_process_exit/enable 1
put $D/events/syscalls/sys_enter_openat/enable 1
put $D/events/syscalls/sys_exit_openat/enable 1
put $D/events/sched/sched_process_exit/trigger stacktrace
three_readers $I
# trace-cmd 3.1.6 `extract -B NAME` removes the instance when it is done.
if [ -d $T/instances/$I ]; then rmdir $T/instances/$I; else note "trace-cmd extract -B $I removed the instance"; fi
