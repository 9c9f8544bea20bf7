# Record a command with ftrec (-F -c: the command and its children) and with trace-cmd record
# on the same workload; both files are read by both tools. ftrec must leave
# every control file as it found it, on its own (checked before any cleanup).
run ftrec.fg ftrec -p function_graph -g do_sys_openat2 -F -c -o ftrec-fg.dat -- sh /vm/workload
state >$S/state.ftrec-fg
same "ftrec -p function_graph restores the tracefs state" state.before state.ftrec-fg - ftrec.fg
run ftrec-fg.report trace-cmd report -i ftrec-fg.dat
need "trace-cmd report reads ftrec's recording (fg)" ftrec-fg.report
run ftrec-fg.tcstyle ftcat --style trace-cmd-3.1 ftrec-fg.dat
same "ftcat --style trace-cmd-3.1 vs trace-cmd report (ftrec record fg)" ftrec-fg.report ftrec-fg.tcstyle
run ftrec-fg.ftcat ftcat ftrec-fg.dat
counts ftrec-fg.report report >$S/ftrec-fg.n-report; counts ftrec-fg.ftcat kernel >$S/ftrec-fg.n-ftcat
same "records per event type: ftcat vs trace-cmd report (ftrec-fg)" ftrec-fg.n-report ftrec-fg.n-ftcat - ftrec-fg.report,ftrec-fg.ftcat

run ftrec.ev ftrec -e sched:sched_process_exec -e sched:sched_process_exit -e syscalls:sys_enter_openat \
    -e kmem:kmalloc -F -c -o ftrec-ev.dat -- sh /vm/workload
state >$S/state.ftrec-ev
same "ftrec -e restores the tracefs state" state.before state.ftrec-ev - ftrec.ev
run ftrec-ev.report trace-cmd report -i ftrec-ev.dat
need "trace-cmd report reads ftrec's recording (ev)" ftrec-ev.report
run ftrec-ev.tcstyle ftcat --style trace-cmd-3.1 ftrec-ev.dat
same "ftcat --style trace-cmd-3.1 vs trace-cmd report (ftrec record events)" ftrec-ev.report ftrec-ev.tcstyle
run ftrec-ev.ftcat ftcat ftrec-ev.dat
counts ftrec-ev.report report >$S/ftrec-ev.n-report; counts ftrec-ev.ftcat kernel >$S/ftrec-ev.n-ftcat
same "records per event type: ftcat vs trace-cmd report (ftrec-ev)" ftrec-ev.n-report ftrec-ev.n-ftcat - ftrec-ev.report,ftrec-ev.ftcat

run tc.fg trace-cmd record -q -p function_graph -g do_sys_openat2 -F -c -o tc-fg.dat sh /vm/workload
run tc-fg.report trace-cmd report -i tc-fg.dat
run tc-fg.tcstyle ftcat --style trace-cmd-3.1 tc-fg.dat
same "ftcat --style trace-cmd-3.1 vs trace-cmd report (trace-cmd record fg)" tc-fg.report tc-fg.tcstyle
run tc-fg.ftcat ftcat tc-fg.dat
counts tc-fg.report report >$S/tc-fg.n-report; counts tc-fg.ftcat kernel >$S/tc-fg.n-ftcat
same "records per event type: ftcat vs trace-cmd report (tc-fg)" tc-fg.n-report tc-fg.n-ftcat - tc-fg.report,tc-fg.ftcat

run tc.ev trace-cmd record -q -e sched:sched_process_exec -e sched:sched_process_exit -e syscalls:sys_enter_openat \
    -e kmem:kmalloc -F -c -o tc-ev.dat sh /vm/workload
run tc-ev.report trace-cmd report -i tc-ev.dat
run tc-ev.tcstyle ftcat --style trace-cmd-3.1 tc-ev.dat
same "ftcat --style trace-cmd-3.1 vs trace-cmd report (trace-cmd record events)" tc-ev.report tc-ev.tcstyle
run tc-ev.ftcat ftcat tc-ev.dat
counts tc-ev.report report >$S/tc-ev.n-report; counts tc-ev.ftcat kernel >$S/tc-ev.n-ftcat
same "records per event type: ftcat vs trace-cmd report (tc-ev)" tc-ev.n-report tc-ev.n-ftcat - tc-ev.report,tc-ev.ftcat
# trace-cmd record leaves things behind by design; put the top level back.
trace-cmd reset >/dev/null 2>&1
