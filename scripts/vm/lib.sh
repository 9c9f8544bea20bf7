# Guest-side helpers for the lab's scenarios (busybox sh). Sourced by /init.
#
# A scenario (scripts/vm/scen/NAME.sh) runs in /out/NAME ($S) and only
# *produces* evidence: the kernel's own text of a buffer, what ftbox and
# trace-cmd made of the same buffer, and a manifest saying which command made
# which file (with its exit code) and which files must be identical. The host
# (scripts/vm/check.sh) does the comparing, so a slow TCG guest does as little
# work as possible and every verdict is made by one piece of code.
#
# Manifest lines (tab separated):
#   run   NAME  RC  APPLET  COMMAND…   a command; stdout in NAME, stderr in NAME.err
#   same  LABEL A B IGNORE DEP   files A and B must be identical. IGNORE ("-": none)
#                                is an ERE of lines left out of both, its reason in
#                                the label; DEP ("-": none) runs (comma-separated)
#                                whose failure or pending state the check inherits
#   need  LABEL RUN              RUN must succeed (for runs a `same` also uses)
#   note  TEXT                         shown as is
T=/sys/kernel/tracing
TAB=$(printf '\t')

say() { read -r _up _ </proc/uptime; echo "vm: [$_up] $*"; }

# An applet is "there" once it answers --help with success; the skeleton's
# placeholders print their usage and exit 2.
have() { "$1" --help >/dev/null 2>&1; }

# run NAME CMD ARGS…: run in $S, keep stdout/stderr/rc for the host.
run() {
    _n=$1; shift
    (cd "$S" && "$@") >"$S/$_n" 2>"$S/$_n.err"
    _rc=$?
    echo "run$TAB$_n$TAB$_rc$TAB${1##*/}$TAB$*" >>"$S/manifest"
    [ "$_rc" = 0 ] || say "  $_n: exit $_rc ($(head -c 200 "$S/$_n.err" | head -n 2 | tr '\n' ' '))"
    return $_rc
}
same() { echo "same$TAB$1$TAB$2$TAB$3$TAB${4:--}$TAB${5:--}" >>"$S/manifest"; }
note() { echo "note$TAB$*" >>"$S/manifest"; }
need() { echo "need$TAB$1$TAB$2" >>"$S/manifest"; }

# Write a tracefs control file the plain way (what a person would type).
put() { # FILE VALUE…
    _f=$1; shift
    echo "$*" >"$T/$_f" || { say "  write '$*' > $_f failed"; return 1; }
}
putq() { _f=$1; shift; echo "$*" 2>/dev/null >"$T/$_f"; }

# The workload every scenario traces: a few opens and reads from a child
# process, small enough to keep function_graph output in the hundreds of lines.
workload() { sh /vm/workload; }

# Clear, trace the workload, stop. Tracing stays off so `trace` and the raw
# buffer hold exactly the same records while they are read.
fill() { # [INSTANCE-DIR]
    _d=$T${1:+/instances/$1}
    echo 0 >"$_d/tracing_on"; : >"$_d/trace"; echo 1 >"$_d/tracing_on"
    workload
    echo "lab marker after workload" >"$_d/trace_marker"
    echo 0 >"$_d/tracing_on"
}

# Three fills of the current configuration, each read non-destructively as
# the kernel's text first and then consumed by one reader:
#   live: ftcat --live --once            == trace
#   ext:  ftrec extract; ftcat FILE       == trace; --style trace-cmd-3.1 == report
#   tc:   trace-cmd extract; ftcat FILE   == trace; --style trace-cmd-3.1 == report
# (trace-cmd here is the host's 3.1.6, copied into the guest.)
# (plus: trace-cmd report reads ftrec's file). Tracer options are not part of
# a trace.dat, so a scenario that sets one passes it to ftcat's kernel style
# for the files in FTCAT_FILE_OPTS (-O funcgraph-tail), as a user would;
# trace-cmd report is run plain, and so is ftcat --style trace-cmd-3.1. A file
# of an instance is read plainly too: ftcat has -B only for --live, and
# the file holds that instance's buffer.
three_readers() { # [INSTANCE]
    _i=$1
    _b=${_i:+-B $_i}
    _d=$T${_i:+/instances/$_i}
    fill $_i; cat "$_d/trace" >"$S/live.trace.txt"
    run live.ftcat ftcat --live --once $_b
    same "ftcat --live --once vs kernel trace" live.trace.txt live.ftcat

    fill $_i; cat "$_d/trace" >"$S/ext.trace.txt"
    run ext.ftrec ftrec extract $_b -o ext.dat
    run ext.ftcat ftcat ${FTCAT_FILE_OPTS:-} ext.dat
    same "ftcat of ftrec extract vs kernel trace" ext.trace.txt ext.ftcat - ext.ftrec
    run ext.report trace-cmd report -i ext.dat
    need "trace-cmd report reads ftrec extract's file" ext.report
    run ext.tcstyle ftcat --style trace-cmd-3.1 ext.dat
    same "ftcat --style trace-cmd-3.1 vs trace-cmd report (ftrec extract)" ext.report ext.tcstyle - ext.ftrec

    fill $_i; cat "$_d/trace" >"$S/tc.trace.txt"
    run tc.extract trace-cmd extract $_b -o tc.dat
    run tc.ftcat ftcat ${FTCAT_FILE_OPTS:-} tc.dat
    same "ftcat of trace-cmd extract vs kernel trace" tc.trace.txt tc.ftcat
    run tc.report trace-cmd report -i tc.dat
    run tc.tcstyle ftcat --style trace-cmd-3.1 tc.dat
    same "ftcat --style trace-cmd-3.1 vs trace-cmd report (trace-cmd extract)" tc.report tc.tcstyle
    # (trace-cmd extract -B removes the instance it read.)
    [ -d "$_d" ] && { : >"$_d/trace"; echo 1 >"$_d/tracing_on"; }
}

# The control state a scenario must leave as it found it: everything
# `trace-cmd stat` would show, in one stable text.
state() {
    (
    cd $T || exit
    for f in current_tracer tracing_on trace_clock buffer_size_kb buffer_subbuf_size_kb \
        set_event set_event_pid set_event_notrace_pid set_ftrace_pid set_ftrace_notrace_pid \
        set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace \
        max_graph_depth kprobe_events uprobe_events dynamic_events tracing_cpumask \
        saved_cmdlines_size tracing_thresh stack_trace_filter; do
        [ -r $f ] || continue
        # buffer_size_kb reads "7 (expanded: 1408)" until first use: same size.
        printf '%s: ' $f; sed -e 's/^[0-9]* (expanded: \([0-9]*\))$/\1/' $f | tr '\n' ' '; echo
    done
    grep -H . options/* 2>/dev/null
    grep -H -v '^#' events/*/*/trigger 2>/dev/null
    grep -H -v -x none events/*/*/filter 2>/dev/null
    echo "instances: $(ls instances 2>/dev/null | tr '\n' ' ')"
    )
}

# Put the top level back to the boot state, the plain way, whatever a
# scenario (or a tool that failed) left behind. Used only between scenarios,
# after the "state after" snapshot has been taken.
lab_reset() {
    cd $T || return
    echo 0 >tracing_on
    echo nop >current_tracer
    echo >set_event
    # One grep over all the events, not a process per event: under TCG a
    # fork+exec costs tens of milliseconds and there are thousands of events.
    grep -H -v '^#' events/*/*/trigger 2>/dev/null | while IFS= read -r l; do
        t=${l#*:}; echo "!${t%%[ :]*}" >"${l%%:*}" 2>/dev/null
    done
    for f in $(grep -l -v -x none events/*/*/filter 2>/dev/null); do echo 0 >"$f"; done
    for f in set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace \
        set_event_pid set_ftrace_pid set_event_notrace_pid set_ftrace_notrace_pid; do
        [ -w $f ] && : >$f
    done
    echo 0 >max_graph_depth 2>/dev/null
    echo >kprobe_events 2>/dev/null
    for i in instances/*; do [ -d "$i" ] && rmdir "$i"; done
    for o in $(cat /tmp/options.boot); do putq trace_options "$o"; done
    echo local >trace_clock
    : >trace
    echo 1 >tracing_on
    cd /
}

# The results' fast lane: an ivshmem device (qemu -device ivshmem-plain)
# whose memory is a file on the host. The guest has no driver for it (no
# modules) and needs none: /dev/mem writes its BAR, which STRICT_DEVMEM
# allows as it is neither RAM nor claimed by a driver. ttyS1 then carries
# only where each archive lies. Without the device (or when it is full)
# archives cross ttyS1 itself, in base64, at a few hundred KB/s.
shm_find() {
    for _p in /sys/bus/pci/devices/*; do
        [ "$(cat $_p/vendor)" = 0x1af4 ] && [ "$(cat $_p/device)" = 0x1110 ] || continue
        echo 1 >$_p/enable 2>/dev/null
        set -- $(sed -n 3p $_p/resource)
        SHM_BASE=$(($1)) SHM_END=$(($2 + 1)) SHM_AT=$(($1))
        return 0
    done
    return 1
}

ship() { # NAME: send /out/NAME to the host, framed and checksummed on ttyS1
    _t=/tmp/ship.tar
    rm -f /tmp/ship.err
    tar -C /out -cf $_t "$1"
    _len=$(wc -c <$_t)
    if [ -n "${SHM_AT:-}" ] && [ $((SHM_AT + _len)) -le "$SHM_END" ] &&
        dd if=$_t of=/dev/mem bs=65536 seek=$((SHM_AT / 65536)) conv=notrunc 2>/tmp/ship.err; then
        echo "FTBOX-SHM $1 $((SHM_AT - SHM_BASE)) $_len $(md5sum <$_t | cut -d' ' -f1)" >/dev/ttyS1
        SHM_AT=$(((SHM_AT + _len + 65535) / 65536 * 65536))
    else
        [ -s /tmp/ship.err ] && say "ivshmem: $(tail -n 1 /tmp/ship.err); results go over ttyS1 in base64" && SHM_AT=
        gzip -1 <$_t >$_t.gz
        {
            echo "FTBOX-BEGIN $1"
            base64 <$_t.gz
            echo "FTBOX-END $1 $(md5sum <$_t.gz | cut -d' ' -f1)"
        } >/dev/ttyS1
    fi
    rm -f $_t $_t.gz
}

info() {
    S=/out/info; mkdir -p $S
    uname -r >$S/uname
    cat $T/available_tracers >$S/tracers
    ls $T/options >$S/options
    for a in ftctl ftrec ftcat; do
        if have $a; then echo "$a yes"; else echo "$a no"; fi
    done >$S/applets
    ls -l /bin/ftctl /bin/ftrec /bin/ftcat >$S/links 2>&1
    trace-cmd --version >$S/trace-cmd.version 2>&1
    say "kernel $(cat $S/uname); tracers: $(cat $S/tracers)"
    say "applets: $(tr '\n' ' ' <$S/applets)"
}

ALL="rescue fg fgtail func kprobe instance record stream"
# Not in `all`: the bench-sized recordings for scripts/bench-decode.sh.
BENCH="bench-fg bench-func"

# counts FILE STYLE: records per event type, in a form both texts share, so a
# recording can be checked against trace-cmd report where there is no kernel
# text of the same buffer (ftrec and trace-cmd record consume it).
counts() {
    for e in sched_process_exec sched_process_exit kmalloc; do
        echo "$e $(grep -c " $e: " "$S/$1")"
    done
    if [ "$2" = report ]; then o=" sys_enter_openat: "; else o=" sys_openat("; fi
    echo "sys_enter_openat $(grep -c -F "$o" "$S/$1")"
    echo "do_sys_openat2 calls $(grep -c -F 'do_sys_openat2() {' "$S/$1")"
}

# --- Streams (scen/stream.sh in the guest, stream-host.sh on the host) ---

# The serial port the guest's streams leave by: the PCI UART (qemu -device
# pci-serial; the console and results ports are the ISA ones).
stream_port() {
    for _t in /sys/class/tty/ttyS*; do
        case $(readlink "$_t/device") in */0000:*) echo "/dev/${_t##*/}"; return 0 ;; esac
    done
    return 1
}

# sum_of FILE: "SIZE MD5", what must arrive unchanged at the other end.
sum_of() { echo "$(wc -c <"$1") $(md5sum <"$1" | cut -d' ' -f1)"; }

# stdin_of FILE CMD…: CMD reading FILE on stdin (ftcat - then knows the
# whole stream is there). piped FILE CMD…: the same through a pipe, as it
# would arrive from ssh or a serial line.
stdin_of() { _f=$1; shift; "$@" <"$_f"; }
piped() { _f=$1; shift; cat "$_f" | "$@"; }

# cut_short CMD…: succeeds when CMD (ftcat reading a stream cut short)
# prints or saves what it can and then says the recording is cut short, with
# exit status 1, as the README promises.
cut_short() {
    "$@" 2>"$S/.cut.err"
    _rc=$?
    cat "$S/.cut.err" >&2
    [ "$_rc" = 1 ] && grep -q 'the recording is cut short' "$S/.cut.err"
}

# events FILE: "CPU TIMESTAMP EVENT" per record of a text of ftcat or
# trace-cmd report: what two readers of one recording agree on whatever task
# names each knows.
events() {
    awk '!/^#/ {
        c = 0
        for (i = 1; i < NF; i++) {
            if (!c && $i ~ /^\[[0-9]+\]$/) c = i
            else if (c && $i ~ /^[0-9]+\.[0-9]+:$/) { print $c, $i, $(i + 1); break }
        }
    }' "$S/$1"
}

# event_counts FILE: records per event type of an events list.
event_counts() { awk '{ n[$3]++ } END { for (e in n) print e, n[e] }' "$S/$1" | sort; }

# --- Bench-sized recordings (scen/bench-fg.sh, scen/bench-func.sh) ---

# The bench's workload, LOOPS times over or until the guest's uptime reaches
# UNTIL seconds: one byte at a time through dd (the hot read/write path),
# small files and /proc texts read whole, directories listed with their
# inodes' attributes: many calls of a few functions and a spread of others,
# as a real recording has.
bench_workload() { # LOOPS [UNTIL]
    _i=0 _up=0
    while [ $_i -lt "$1" ] && [ "${_up%.*}" -lt "${2:-999999}" ]; do
        dd if=/dev/zero of=/dev/null bs=1 count=200 2>/dev/null
        cat /proc/version /proc/meminfo /proc/stat /vm/lib.sh >/dev/null
        ls -l /vm /bin /sys/kernel/tracing >/dev/null
        _i=$((_i + 1))
        read -r _up _ </proc/uptime
    done
}

# records_of FILE: the records of a recording, as ftcat --stat counts them.
records_of() { ftcat --stat "$1" | sed -n 's/^records: //p'; }

# bench_record NAME FTREC-ARGS…: NAME.dat, an ftrec recording (-F -c) of
# the bench workload with about ftbox.bench= records (default 1 M). A short
# calibration run gives the records per loop on this kernel, which sets the
# loops of the real one. The buffer holds the whole recording, so nothing is
# lost when TCG gives ftrec's reader little time. The real run stops
# looping after half the scenario's time limit (ftbox.limit=) whatever the
# count, so a slow host gets a smaller recording rather than none.
bench_record() {
    _bn=$1; shift
    _want=$(sed -n 's/.*ftbox\.bench=\([0-9]*\).*/\1/p' /proc/cmdline)
    _want=${_want:-1000000}
    run $_bn.cal ftrec -b 65536 "$@" -F -c -o $_bn.cal.dat -- sh -c '. /vm/lib.sh; bench_workload 1' || return
    _r=$(records_of $S/$_bn.cal.dat)
    rm -f $S/$_bn.cal.dat
    [ "${_r:-0}" -gt 0 ] || { say "  $_bn: no records in the calibration run"; return 1; }
    _loops=$((_want / _r + 1))
    say "  $_bn: $_r records in a loop; $_loops loops for about $_want"
    note "$_bn: $_r records in a loop of the workload; $_loops loops recorded"
    _lim=$(sed -n 's/.*ftbox\.limit=\([0-9]*\).*/\1/p' /proc/cmdline)
    read -r _up _ </proc/uptime
    _until=$((${_up%.*} + ${_lim:-400} / 2))
    run $_bn.ftrec ftrec -b 65536 "$@" -F -c -o $_bn.dat -- sh -c ". /vm/lib.sh; bench_workload $_loops $_until" || return
    run $_bn.stat ftcat --stat $_bn.dat
    say "  $_bn: $(sed -n 's/^records: //p' $S/$_bn.stat) records, $(wc -c <$S/$_bn.dat) bytes"
}

lab_main() { # SCENARIOS LIMIT
    _list=$(echo "$1" | tr ',' ' ')
    _list=$(for _s in $_list; do
        case $_s in all) echo $ALL ;; bench) echo $BENCH ;; *) echo $_s ;; esac
    done)
    # Boot option state, to restore exactly (options are "name" or "noname").
    cat $T/trace_options >/tmp/options.boot
    echo  # the firmware leaves the console mid-line
    # Expand the ring buffer now: until first use buffer_size_kb reads
    # "7 (expanded: 1408)" and the size it expands to is rounded to whole
    # sub-buffers, which would show as a difference in the first scenario.
    _kb=$(sed -n 's/.*expanded: \([0-9]*\)).*/\1/p' $T/buffer_size_kb)
    [ -n "$_kb" ] && echo "$_kb" >$T/buffer_size_kb
    shm_find || say "no ivshmem device: results go over ttyS1 in base64"
    info; ship info
    for s in $_list; do
        S=/out/$s; mkdir -p $S; : >$S/manifest
        if [ ! -f /vm/scen/$s.sh ]; then say "no scenario $s"; note "no such scenario"; ship $s; continue; fi
        state >$S/state.before
        _t0=$(date +%s)
        say "scenario $s"
        S=$S timeout $2 sh -c ". /vm/lib.sh; cd $S; . /vm/scen/$s.sh"
        _rc=$?
        _t1=$(date +%s)
        echo "rc $_rc" >$S/status
        echo "seconds $((_t1 - _t0))" >>$S/status
        [ $_rc = 0 ] || say "scenario $s: exit $_rc"
        state >$S/state.after
        same "tracefs state after the scenario equals before" state.before state.after
        cmp -s $S/state.before $S/state.after || lab_reset
        say "scenario $s done in $((_t1 - _t0)) s"
        ship $s
    done
}
