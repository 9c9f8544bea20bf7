# ftrec -o - in the rescue shell, as a board with no room for a recording
# uses it. A whole recording leaves the guest as a stream over a serial port
# of its own (the lab's PCI UART, raw, which the host captures byte for
# byte) and is read on the host by scripts/vm/stream-host.sh. ftrec refuses
# a terminal as stdout and a serial port is one, so the stream goes through
# a pipe, as it would into ssh or nc; tee keeps the guest's copy, which the
# guest prints and whose size and md5 the host compares with what arrived
# (a tty layer that rewrote a byte would show). Then a recorder killed with
# -9 mid-way, read here: its stream stays in the guest, as the port carries
# a few hundred KB/s under TCG and the stream's metadata (kallsyms) alone is
# megabytes.
P=$(stream_port) || { say "  no PCI UART for the stream (qemu -device pci-serial)"; exit 1; }
stty -F "$P" raw -echo || exit 1
note "streams leave by $P"
# The sub-buffer size, for the host to cut the stream between pages.
echo $(($(cat $T/buffer_subbuf_size_kb 2>/dev/null || echo 4) * 1024)) >$S/subbuf

# to_port NAME FTREC-ARGS…: ftrec -o - through tee (a copy in NAME.stream)
# to the port; fails when ftrec or tee does.
to_port() {
    _n=$1; shift
    (set -o pipefail; ftrec -o - "$@" | tee "$_n.stream" >"$P")
}

# A whole recording: the system's scheduler events while the workload runs
# three times (enough pages for the host to cut between).
run whole.ftrec to_port whole -e sched -- sh -c 'for i in 1 2 3; do sh /vm/workload; done'
state >$S/state.whole
same "ftrec -o - restores the tracefs state" state.before state.whole - whole.ftrec
sum_of whole.stream >$S/whole.sum
run whole.local ftcat whole.stream
rm -f whole.stream

# A recorder killed mid-way: a small buffer (32 KiB per CPU, woken at half
# full) and the workload in a loop, so pages go out while it runs; -9 once
# a few have, then the command it left behind. Nothing restores the tracefs
# state after -9: the scenario does, as a person would.
kb=$(sed 's/^\([0-9]*\).*/\1/' $T/buffer_size_kb)
sh -c 'echo $$ >killed.pid; exec ftrec -o - -b 32 -e sched -- sh -c "echo \$\$ >killed.cmd; while :; do sh /vm/workload; done"' \
    2>$S/killed.ftrec.err | cat >killed.stream &
# The META frame comes first (head 16 bytes, frame header 16, its length at 24).
meta_end=
want=
i=0
while [ $i -lt 300 ]; do
    i=$((i + 1))
    sleep 0.2
    size=$(wc -c <killed.stream)
    if [ -z "$meta_end" ] && [ "$size" -ge 32 ]; then
        meta_end=$((32 + $(od -A n -t u8 -j 24 -N 8 killed.stream)))
        want=$((meta_end + 2 * (16 + 4096)))
    fi
    [ -n "$want" ] && [ "$size" -ge "$want" ] && break
done
kill -9 "$(cat killed.pid)"
wait
kill "$(cat killed.cmd)" 2>/dev/null
note "ftrec killed with -9 after $((i / 5)) s: $(wc -c <killed.stream) bytes, pages from byte ${meta_end:-?}"
echo "$kb" >$T/buffer_size_kb
lab_reset; cd "$S" || exit 1
run killed.ftcat cut_short ftcat killed.stream
run killed.pipe piped killed.stream cut_short ftcat -
events killed.ftcat >$S/killed.ev; events killed.pipe >$S/killed.pipe.ev
echo "records before the kill: some" >$S/killed.some.want
if [ -s $S/killed.ev ]; then echo "records before the kill: some"; else echo "records before the kill: none"; fi >$S/killed.some
same "the pages written before the kill are printed" killed.some.want killed.some - killed.ftcat
same "ftcat - (stdin a pipe): the same records in the same order (killed recorder)" \
    killed.ev killed.pipe.ev - killed.ftcat,killed.pipe
run killed.save piped killed.stream cut_short ftcat --save killed.dat -
run killed.report trace-cmd report -i killed.dat
events killed.report >$S/killed.report.ev
event_counts killed.ev >$S/killed.n; event_counts killed.report.ev >$S/killed.report.n
same "records per event: trace-cmd report of the saved file vs ftcat (killed recorder)" \
    killed.n killed.report.n - killed.ftcat,killed.save,killed.report
# Megabytes of kallsyms each: not worth the trip to the host.
rm -f killed.stream killed.dat killed.pid killed.cmd $S/.cut.err
