# Record a command with ftrec (-c: follow children) and with trace-cmd record
# on the same workload; both files are read by both tools. ftrec must leave
# every control file as it found it, on its own (checked before any cleanup).
run ftrec.fg ftrec -p function_graph -g do_sys_openat2 -c -o ftrec-fg.dat -- sh /vm/workload
state >$S/state.ftrec-fg
same "ftrec -p function_graph restores the tracefs state" state.before state.ftrec-fg - ftrec.fg
run ftrec-fg.report trace-cmd report -i ftrec-fg.dat
run ftrec-fg.tcstyle ftcat --style trace-cmd ftrec-fg.dat
same "ftcat --style trace-cmd vs trace-cmd report (ftrec record fg)" ftrec-fg.report ftrec-fg.tcstyle
run ftrec-fg.ftcat ftcat ftrec-fg.dat

run ftrec.ev ftrec -e sched:sched_process_exec -e sched:sched_process_exit -e syscalls:sys_enter_openat \
    -e kmem:kmalloc -c -o ftrec-ev.dat -- sh /vm/workload
state >$S/state.ftrec-ev
same "ftrec -e restores the tracefs state" state.before state.ftrec-ev - ftrec.ev
run ftrec-ev.report trace-cmd report -i ftrec-ev.dat
run ftrec-ev.tcstyle ftcat --style trace-cmd ftrec-ev.dat
same "ftcat --style trace-cmd vs trace-cmd report (ftrec record events)" ftrec-ev.report ftrec-ev.tcstyle
run ftrec-ev.ftcat ftcat ftrec-ev.dat

run tc.fg trace-cmd record -q -p function_graph -g do_sys_openat2 -F -c -o tc-fg.dat sh /vm/workload
run tc-fg.report trace-cmd report -i tc-fg.dat
run tc-fg.tcstyle ftcat --style trace-cmd tc-fg.dat
same "ftcat --style trace-cmd vs trace-cmd report (trace-cmd record fg)" tc-fg.report tc-fg.tcstyle
run tc-fg.ftcat ftcat tc-fg.dat

run tc.ev trace-cmd record -q -e sched:sched_process_exec -e sched:sched_process_exit -e syscalls:sys_enter_openat \
    -e kmem:kmalloc -F -c -o tc-ev.dat sh /vm/workload
run tc-ev.report trace-cmd report -i tc-ev.dat
run tc-ev.tcstyle ftcat --style trace-cmd tc-ev.dat
same "ftcat --style trace-cmd vs trace-cmd report (trace-cmd record events)" tc-ev.report tc-ev.tcstyle
run tc-ev.ftcat ftcat tc-ev.dat
# trace-cmd record leaves things behind by design; put the top level back.
trace-cmd reset >/dev/null 2>&1
