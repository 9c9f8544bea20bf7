# A reference pair of timer events (not in `all`): on 6.1 the hrtimer
# formats name HRTIMER_MODE_* without TRACE_DEFINE_ENUM, so a reader cannot
# know those values; everything else of each line it can print exactly.
# Same shape as fixtures.sh: x-timer.trace.txt is the kernel's `trace` text,
# x-timer.extract.dat the `trace-cmd extract` of that same buffer.
# x-timer.rawptr.txt is that buffer's text again with hash-ptr off (raw
# `%p` values, which a reader can reproduce; 6.1 then prints the first
# __print_symbolic of a line empty, a kernel bug, so both texts are kept).
put events/timer/enable 1
echo 0 >$T/tracing_on; : >$T/trace; echo 1 >$T/tracing_on
sleep 1
echo 0 >$T/tracing_on
cat $T/trace >$S/x-timer.trace.txt
put options/hash-ptr 0
cat $T/trace >$S/x-timer.rawptr.txt
put options/hash-ptr 1
run x-timer.extract trace-cmd extract -o x-timer.extract.dat
run x-timer.report trace-cmd report -i x-timer.extract.dat
put events/timer/enable 0
: >$T/trace
echo 1 >$T/tracing_on
