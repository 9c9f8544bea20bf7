#!/bin/sh
# Judge one kernel's lab results (see scripts/vm/lib.sh for the manifest).
#   check.sh KERNEL DIR SCENARIOS
# Prints, per scenario, every comparison with its lines compared and
# identical, and every command that failed. A check whose input comes from an
# applet that is not implemented yet (it answers --help with failure) is
# PENDING, not FAIL; VMTEST_STRICT=1 makes pending checks fail too.
set -u
K=$1 D=$2 SCEN=$3
ALL="rescue fg fgtail func kprobe instance record stream"
BENCH="bench-fg bench-func"
SCEN=$(for s in $(echo "$SCEN" | tr ',' ' '); do
    case $s in all) echo $ALL ;; bench) echo $BENCH ;; *) echo $s ;; esac
done)
TAB=$(printf '\t')

nok=0 npend=0 nfail=0 lines=0 ident=0
missing_applets=
if [ -f "$D/info/applets" ]; then
    missing_applets=$(awk '$2 == "no" { printf "%s ", $1 }' "$D/info/applets")
    printf '[%s] kernel %s; applets not implemented yet: %s\n' "$K" "$(cat "$D/info/uname")" "${missing_applets:-none}"
fi

verdict() { # KIND TEXT
    case $1 in
    ok) nok=$((nok + 1)); printf '  ok       %s\n' "$2" ;;
    pending) npend=$((npend + 1)); printf '  PENDING  %s\n' "$2" ;;
    fail) nfail=$((nfail + 1)); printf '  FAIL     %s\n' "$2" ;;
    esac
}

# Status of a run in the current scenario: "ok", "pending:WHY" or "fail:WHY".
# A failed run is pending when its applet is not written yet, when ftcat
# refuses --style (a later issue), or when its input file was to be made by
# a run that is itself pending.
run_status() { # NAME
    line=$(awk -F"$TAB" -v n="$1" '$1 == "run" && $2 == n' "$S/manifest" | tail -n1)
    [ -n "$line" ] || { echo "fail:no run named $1"; return; }
    rc=$(echo "$line" | cut -f3)
    app=$(echo "$line" | cut -f4)
    cmd=$(echo "$line" | cut -f5-)
    [ "$rc" = 0 ] && { echo ok; return; }
    case " $missing_applets " in *" $app "*) echo "pending:$app is not implemented yet"; return ;; esac
    if [ "$app" = ftcat ] && [ "$rc" = 2 ] && echo "$cmd" | grep -q -- '--style'; then
        echo "pending:ftcat rejects --style trace-cmd (issue 5): $(head -n1 "$S/$1.err")"; return
    fi
    for a in $cmd; do
        case $a in *.dat)
            [ -e "$S/$a" ] && continue
            prod=$(awk -F"$TAB" -v f="$a" '$1 == "run" && index($5, "-o " f) { print $2 }' "$S/manifest" | head -n1)
            if [ -n "$prod" ] && [ "$prod" != "$1" ]; then
                ps=$(run_status "$prod")
                case $ps in
                pending:*) echo "pending:input $a not made ($prod ${ps#pending:})"; return ;;
                fail:*) echo "fail:input $a not made ($prod failed)"; return ;;
                esac
            fi ;;
        esac
    done
    echo "fail:exit $rc: $(head -c 300 "$S/$1.err" | head -n 3 | tr '\n' ' ')"
}

# Status of a file: made by a run (its status) or by the guest script (ok).
file_status() {
    if awk -F"$TAB" -v n="$1" '$1 == "run" && $2 == n { f = 1 } END { exit !f }' "$S/manifest"; then
        run_status "$1"
    elif [ -e "$S/$1" ]; then echo ok
    else echo "fail:$1 missing"
    fi
}

compare() { # LABEL A B IGNORE DEP
    label=$1 a=$2 b=$3 ign=$4 dep=$5
    for x in $(echo "$dep" | tr , ' ') $a $b; do
        st=$(file_status "$x")
        case $st in
        pending:*) verdict pending "$label: ${st#pending:}"; return ;;
        fail:*) verdict fail "$label: ${st#fail:}"; return ;;
        esac
    done
    if [ -n "$ign" ]; then
        grep -E -v -- "$ign" "$S/$a" >"$S/.a"; grep -E -v -- "$ign" "$S/$b" >"$S/.b"
    else
        cp "$S/$a" "$S/.a"; cp "$S/$b" "$S/.b"
    fi
    na=$(wc -l <"$S/.a")
    diff "$S/.a" "$S/.b" >"$S/.diff"
    nd=$(grep -c '^<' "$S/.diff")
    nadd=$(grep -c '^>' "$S/.diff")
    same=$((na - nd))
    lines=$((lines + na)); ident=$((ident + same))
    if [ "$nd" = 0 ] && [ "$nadd" = 0 ]; then
        verdict ok "$label: $na lines compared, $same identical"
    else
        dn=$(echo "$label" | tr -c 'A-Za-z0-9\n' '_' | cut -c1-60).diff
        cp "$S/.diff" "$S/$dn"
        verdict fail "$label: $na lines compared, $same identical ($nd differ, $nadd extra; $s/$dn)"
        head -n 12 "$S/.diff" | sed 's/^/             /'
    fi
    rm -f "$S/.a" "$S/.b" "$S/.diff"
}

for s in $SCEN; do
    S=$D/$s
    if [ ! -f "$S/manifest" ]; then
        printf '[%s] %s: no results\n' "$K" "$s"
        verdict fail "$s: the guest sent no results (timeout or crash: see $D/console.log)"
        continue
    fi
    secs=$(awk '$1 == "seconds" { print $2 }' "$S/status" 2>/dev/null)
    rc=$(awk '$1 == "rc" { print $2 }' "$S/status" 2>/dev/null)
    printf '[%s] %s (%s s in the guest)\n' "$K" "$s" "${secs:-?}"
    [ "${rc:-x}" = 0 ] || verdict fail "$s: scenario script exit ${rc:-unknown} (143: killed at its time limit)"
    used=" "
    while IFS="$TAB" read -r kind f1 f2 f3 f4 f5; do
        case $kind in
        note) printf '  note     %s\n' "$f1" ;;
        need)
            st=$(run_status "$f2")
            case $st in
            ok) verdict ok "$f1: exit 0, $(wc -l <"$S/$f2") lines" ;;
            pending:*) verdict pending "$f1: ${st#pending:}" ;;
            fail:*) verdict fail "$f1: ${st#fail:}" ;;
            esac ;;
        same)
            [ "$f4" = - ] && f4=
            [ "$f5" = - ] && f5=
            compare "$f1" "$f2" "$f3" "$f4" "$f5"; used="$used$f2 $f3 $(echo "$f5" | tr , ' ') " ;;
        esac
    done <"$S/manifest"
    # Runs no comparison looked at still have to succeed.
    while IFS="$TAB" read -r kind n rc app cmd; do
        [ "$kind" = run ] || continue
        case $used in *" $n "*) continue ;; esac
        st=$(run_status "$n")
        case $st in
        ok) verdict ok "$cmd" ;;
        pending:*) verdict pending "$cmd: ${st#pending:}" ;;
        fail:*) verdict fail "$cmd: ${st#fail:}" ;;
        esac
    done <"$S/manifest"
done
printf '[%s] summary: %d ok, %d pending, %d FAIL; %d lines compared, %d identical\n' \
    "$K" $nok $npend $nfail $lines $ident
[ $nfail = 0 ] || exit 1
[ "${VMTEST_STRICT:-0}" = 1 ] && [ $npend != 0 ] && exit 1
exit 0
