#!/bin/sh
# The host's half of the stream scenario (scen/stream.sh): the guest sent
# an `ftrec -o -` stream over its stream port into DIR/stream.port. Here it
# is checked byte for byte against the size and md5 the guest stated, and
# read as a workstation reads it: `ftcat -` from a file and from a pipe,
# `ftcat --save` and then trace-cmd report, and cut at a random offset
# (VMTEST_STREAM_CUT=OFFSET repeats a cut). The evidence goes into the scenario's manifest beside the guest's,
# for check.sh to judge.
#   stream-host.sh DIR FTBOX
set -u
D=$1 FTBOX=$(readlink -f "$2")
S=$D/stream
[ -f "$S/manifest" ] || exit 0
. "$(dirname "$0")/lib.sh"
mkdir -p "$S/.bin" && ln -sf "$FTBOX" "$S/.bin/ftcat" && PATH=$S/.bin:$PATH
cd "$S" || exit 1
[ -f whole.sum ] || { note "no whole.sum from the guest: the stream is not checked"; exit 0; }

# --- What arrived: exactly the guest's bytes ---------------------------------
port=$D/stream.port
[ -f "$port" ] || : >"$port"
cp "$port" whole.port
sum_of whole.port >whole.port.sum
same "the stream port carried the guest's bytes: size and md5 equal" whole.sum whole.port.sum - whole.ftrec

# --- The whole stream -------------------------------------------------------------
run whole.host stdin_of whole.port ftcat -
same "ftcat - (stdin a file) vs ftcat in the guest (whole stream)" whole.local whole.host
run whole.pipe piped whole.port ftcat -
events whole.local >whole.ev; events whole.pipe >whole.pipe.ev
same "ftcat - (stdin a pipe): the guest's records in its order, CPU/timestamp/event (whole)" \
    whole.ev whole.pipe.ev - whole.local,whole.pipe
run whole.save piped whole.port ftcat --save whole.dat -
run whole.report trace-cmd report -i whole.dat
need "trace-cmd report reads ftcat --save's file (whole)" whole.report
events whole.report >whole.report.ev
event_counts whole.ev >whole.n; event_counts whole.report.ev >whole.report.n
same "records per event: trace-cmd report of the saved file vs ftcat in the guest" \
    whole.n whole.report.n - whole.local,whole.report
run whole.dat.ftcat ftcat whole.dat
same "ftcat of the saved trace.dat vs ftcat of the stream in the guest" whole.local whole.dat.ftcat - whole.save
run whole.tcstyle ftcat --style trace-cmd-3.1 whole.dat
same "ftcat --style trace-cmd-3.1 vs trace-cmd report (saved file)" whole.report whole.tcstyle - whole.save

# --- The whole stream cut at a random offset ------------------------------------------
# Its frames: head 16 bytes, then per frame a 16-byte header (tag, CPU, u64
# payload length) and the payload, a PAGE frame's being whole sub-buffers.
# The cut falls after the second page's end; its text must equal that of a
# cut at the last page end before it (a partial page adds nothing and loses
# nothing before it), show more records than a cut at the page end before
# that (the last whole page is printed), and per CPU be the first records of
# the whole stream's.
ps=$(cat subbuf 2>/dev/null || echo 4096)
off=16 size=$(wc -c <whole.port) ends=
while [ $((off + 16)) -le "$size" ]; do
    tag=$(dd if=whole.port bs=1 skip=$off count=4 2>/dev/null)
    len=$(od -A n -t u8 -j $((off + 8)) -N 8 whole.port | tr -d ' ')
    if [ "$tag" = PAGE ]; then
        e=$((off + 16 + ps))
        while [ $e -le $((off + 16 + len)) ] && [ $e -le "$size" ]; do ends="$ends $e"; e=$((e + ps)); done
    fi
    off=$((off + 16 + len))
done
set -- $ends
if [ $# -lt 3 ]; then
    note "the whole stream has $# pages: too few to cut between them"
    exit 0
fi
if [ -n "${VMTEST_STREAM_CUT:-}" ]; then
    x=$VMTEST_STREAM_CUT
else
    for last; do :; done
    r=$(od -A n -t u4 -N 4 /dev/urandom | tr -d ' ')
    x=$(($2 + r % (last - $2)))
fi
b= bp=
for e; do [ "$e" -le "$x" ] && { bp=$b; b=$e; }; done
if [ -z "$bp" ]; then
    note "cut at byte $x: before the second page's end ($ends)"
else
    note "whole stream cut at byte $x of $size, $((x - b)) bytes after a page's end; VMTEST_STREAM_CUT=$x repeats it"
    head -c "$x" whole.port >cut.x; head -c "$b" whole.port >cut.b; head -c "$bp" whole.port >cut.bp
    run cut.x.ftcat stdin_of cut.x cut_short ftcat -
    run cut.b.ftcat stdin_of cut.b cut_short ftcat -
    run cut.bp.ftcat stdin_of cut.bp cut_short ftcat -
    same "cut stream: the text of the whole pages before the cut" cut.b.ftcat cut.x.ftcat
    events cut.x.ftcat >cut.x.ev; events cut.b.ftcat >cut.b.ev; events cut.bp.ftcat >cut.bp.ev
    n=$(wc -l <cut.b.ev) np=$(wc -l <cut.bp.ev)
    echo "the page before the cut adds records: yes" >cut.more.want
    if [ "$n" -gt "$np" ]; then echo "the page before the cut adds records: yes"; else echo "no ($np then $n)"; fi >cut.more
    same "cut stream: the last whole page is printed" cut.more.want cut.more - cut.b.ftcat,cut.bp.ftcat
    # Per CPU: the cut's records are the first ones of the whole stream's.
    for c in $(awk '{ print $1 }' cut.x.ev whole.ev | sort -u); do
        k=$(awk -v c="$c" '$1 == c' cut.x.ev | wc -l)
        awk -v c="$c" '$1 == c' whole.ev | head -n "$k"
    done >cut.prefix.want
    for c in $(awk '{ print $1 }' cut.x.ev whole.ev | sort -u); do awk -v c="$c" '$1 == c' cut.x.ev; done >cut.prefix
    same "cut stream: per CPU, the first records of the whole stream" cut.prefix.want cut.prefix - cut.x.ftcat,whole.local
    run cut.x.pipe piped cut.x cut_short ftcat -
    events cut.x.pipe >cut.x.pipe.ev
    same "cut stream, read from a pipe: the same records in the same order" cut.x.ev cut.x.pipe.ev - cut.x.ftcat,cut.x.pipe
fi
rm -f "$S/.cut.err"
