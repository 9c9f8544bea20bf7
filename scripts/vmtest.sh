#!/bin/sh
# The VM test lab: function tracers, function_graph, kprobes and the
# rescue-shell use of ftbox on real Debian kernels, which this machine's own
# kernel cannot give (it refuses function tracing).
#
#   scripts/vmtest.sh [-k KERNEL]... [-s SCEN[,SCEN]] [-o DIR] [-t SECONDS] [--shell]
#
# For each kernel: fetch the Debian package once (cached), build an initramfs
# (busybox-static, the static ftbox linked by `ftbox --install -s /bin` as a
# rescue shell has it, trace-cmd with its libraries and plugins as the
# reference, the scenario scripts), boot it under TCG with a time limit, take
# the results back over a second serial port, and compare (scripts/vm/check.sh).
# Exit 0 when nothing failed; checks waiting on an applet that is not written
# yet are reported as pending, and fail only with VMTEST_STRICT=1.
#
# `-s bench` (not part of `all`) makes the bench-sized function_graph and
# function recordings scripts/bench-decode.sh reads: OUT/KERNEL/bench-fg/fg.dat
# and OUT/KERNEL/bench-func/func.dat, about VMTEST_BENCH_RECORDS records each
# (default 1000000).
#
# Environment: FTBOX_BIN (a built static ftbox; else it is built here),
# FTBOX_VM_CACHE (kernels; default ${XDG_CACHE_HOME:-~/.cache}/ftbox-vm),
# VMTEST_KERNELS, VMTEST_SCEN, VMTEST_TIMEOUT (per boot, seconds),
# VMTEST_SCEN_LIMIT (per scenario, seconds), VMTEST_BENCH_RECORDS.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VM=$ROOT/scripts/vm
CACHE=${FTBOX_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ftbox-vm}
TGT=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$TGT/vmtest
KERNELS=${VMTEST_KERNELS:-"6.1.0-56-amd64 6.12.117+deb12-amd64"}
SCEN=${VMTEST_SCEN:-all}
TIMEOUT=${VMTEST_TIMEOUT:-900}
LIMIT=${VMTEST_SCEN_LIMIT:-400}
# One host thread runs both vCPUs in turn. Multi-threaded TCG makes every
# cross-CPU step of ftrace's code patching (IPIs, text_poke sync) wait for the
# other vCPU's host thread, which on a busy 2-core host stalls 6.1 for minutes;
# round-robin keeps the two vCPUs in step and uses one host core.
ACCEL=${VMTEST_ACCEL:-tcg,thread=single}
SHELL_MODE=

log() { printf 'vmtest: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

ks=
while [ $# -gt 0 ]; do
    case $1 in
    -k) ks="$ks $2"; shift ;;
    -s) SCEN=$2; shift ;;
    -o) OUT=$2; shift ;;
    -t) TIMEOUT=$2; shift ;;
    --shell) SHELL_MODE=1 ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
    esac
    shift
done
[ -n "$ks" ] && KERNELS=$ks

# --- 1. Host packages, idempotently -----------------------------------------
apt_install() { # PKG...: install what is missing; update the lists once if needed
    export DEBIAN_FRONTEND=noninteractive
    log "apt-get install $*"
    apt-get install -y -qq "$@" >&2 || { apt-get update -qq >&2 && apt-get install -y -qq "$@" >&2; }
}
need=
command -v qemu-system-x86_64 >/dev/null 2>&1 || need="$need qemu-system-x86"
dpkg -s busybox-static >/dev/null 2>&1 || need="$need busybox-static"
command -v cpio >/dev/null 2>&1 || need="$need cpio"
command -v trace-cmd >/dev/null 2>&1 || need="$need trace-cmd"
# trace-cmd report's output depends on libtraceevent's plugins: the guest
# must have the same ones as any host that compares with it.
[ -d /usr/lib/x86_64-linux-gnu/traceevent/plugins ] || need="$need libtraceevent1-plugin"
[ -z "$need" ] || apt_install $need

# --- 2. Kernels, cached -------------------------------------------------------
kernel() { # VERSION -> prints the cached vmlinuz path
    v=$1 d=$CACHE/$v
    if [ ! -s "$d/vmlinuz" ]; then
        mkdir -p "$d/dl"
        log "fetching linux-image-$v"
        ( cd "$d/dl" && { apt-get download "linux-image-$v" >&2 ||
            { apt-get update -qq >&2 && apt-get download "linux-image-$v" >&2; }; } ) ||
            die "cannot download linux-image-$v"
        deb=$(ls "$d"/dl/linux-image-*.deb | head -n1)
        # vmlinuz and config only: serial console, devtmpfs, tracefs, kprobes
        # and the function tracers are built into Debian's kernels, so the
        # guest needs no modules (checked below).
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$d/dl" "./boot/vmlinuz-$v" "./boot/config-$v"
        mv "$d/dl/boot/config-$v" "$d/config"
        mv "$d/dl/boot/vmlinuz-$v" "$d/vmlinuz.tmp" && mv "$d/vmlinuz.tmp" "$d/vmlinuz"
        rm -rf "$d/dl"
    fi
    for c in SERIAL_8250_CONSOLE DEVTMPFS BLK_DEV_INITRD FUNCTION_TRACER FUNCTION_GRAPH_TRACER KPROBE_EVENTS FTRACE_SYSCALLS; do
        grep -q "^CONFIG_$c=y" "$d/config" || die "$v: CONFIG_$c is not built in"
    done
    echo "$d/vmlinuz"
}

# --- 3. ftbox ------------------------------------------------------------------
if [ -z "${FTBOX_BIN:-}" ]; then
    log "building the static ftbox"
    sh "$ROOT/scripts/setup.sh" base
    (cd "$ROOT" && cargo build --release --target x86_64-unknown-linux-musl --quiet) || die "build failed"
    FTBOX_BIN=$TGT/x86_64-unknown-linux-musl/release/ftbox
fi
[ -x "$FTBOX_BIN" ] || die "no ftbox binary at $FTBOX_BIN"
file -L "$FTBOX_BIN" 2>/dev/null | grep -q 'static' || log "warning: $FTBOX_BIN is not static"

# --- 4. initramfs ----------------------------------------------------------------
mkdir -p "$OUT"
R=$OUT/root
rm -rf "$R" && mkdir -p "$R/bin" "$R/vm/scen" "$R/etc" "$R/root" "$R/usr/bin"
cp /bin/busybox "$R/bin/busybox"
cp "$FTBOX_BIN" "$R/bin/ftbox"
cp "$VM/init" "$R/init" && chmod 755 "$R/init"
cp "$VM/lib.sh" "$VM/workload" "$R/vm/" && cp "$VM"/scen/*.sh "$R/vm/scen/"
echo lab >"$R/etc/hostname"
echo 'root:x:0:0:root:/root:/bin/sh' >"$R/etc/passwd"
# trace-cmd as Debian ships it, with what the dynamic loader will ask for.
tc=$(command -v trace-cmd)
cp "$tc" "$R/usr/bin/trace-cmd"
ldd "$tc" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | while read -r lib; do
    mkdir -p "$R$(dirname "$lib")"; cp -L "$lib" "$R$lib"
done
for p in /usr/lib/x86_64-linux-gnu/traceevent/plugins /usr/lib/x86_64-linux-gnu/trace-cmd/plugins; do
    [ -d "$p" ] && { mkdir -p "$R$p"; cp -L "$p"/*.so "$R$p/" 2>/dev/null || true; }
done
INITRD=$OUT/initramfs.cpio
# Uncompressed: TCG would spend longer inflating it than the copy costs.
(cd "$R" && find . | cpio -o -H newc --quiet) >"$INITRD"
log "initramfs $(($(stat -c %s "$INITRD") / 1024)) KiB"

# --- 5. Boot, collect, check ------------------------------------------------------
# Extract the checksummed scenario archives: each is announced on the
# results port, either framed there in base64 or (FTBOX-SHM NAME OFFSET
# LENGTH MD5) lying in the shared memory file.
unpack() { # DIR
    tr -d '\r' <"$1/results.raw" | awk -v dir="$1" '
        /^FTBOX-SHM /   { print "shm", $2, $5, $3, $4; next }
        /^FTBOX-BEGIN / { name = $2; f = dir "/" name ".b64"; printf "" > f; inb = 1; next }
        /^FTBOX-END /   { close(f); print "b64", $2, $3; inb = 0; next }
        inb { print >> f }' | while read -r how name sum off len; do
        a=$1/$name.archive
        if [ "$how" = shm ]; then
            dd if="$1/results.shm" of="$a" bs=64K skip=$((off / 65536)) count="$len" iflag=count_bytes status=none || :
        else
            base64 -d <"$1/$name.b64" >"$a" 2>/dev/null || :
        fi
        if [ "$(md5sum <"$a" | cut -d' ' -f1)" = "$sum" ]; then
            tar -xf "$a" -C "$1"
        else
            log "results of $name damaged in transit"
        fi
        rm -f "$1/$name.b64" "$a"
    done
    rm -f "$1/results.shm"
}

status=0
for v in $KERNELS; do
    vmlinuz=$(kernel "$v")
    d=$OUT/$v
    rm -rf "$d" && mkdir -p "$d"
    # loglevel=5: warnings and the backtraces of soft lockups reach the
    # console tail. No softlockup_panic: under TCG on a loaded host the guest
    # clock jumps, and the detector then fires on a healthy guest.
    # trace_clock=local: TCG's TSC looks unstable to 6.1, which then boots
    # with the global clock; `ftctl reset` (like trace-cmd reset) sets local,
    # the documented default, and the state checks compare with the boot.
    append="console=ttyS0 quiet loglevel=5 panic=-1 mitigations=off trace_clock=local rdinit=/init ftbox.scen=$SCEN ftbox.limit=$LIMIT ${VMTEST_BENCH_RECORDS:+ftbox.bench=$VMTEST_BENCH_RECORDS} ${VMTEST_APPEND:-}"
    # The stream scenario's port: a PCI UART of its own (the ISA ones share
    # interrupts), captured byte for byte.
    devices="-chardev file,id=stream,path=$d/stream.port -device pci-serial,chardev=stream"
    # The results' fast lane (scripts/vm/lib.sh, ship): guest memory that is
    # a (sparse) file here. /dev/mem reaches no further than the end of RAM,
    # so RAM above 512 MB goes above 4 GB and the PCI hole, where the BAR
    # lies, below it. (QEMU warns in qemu.log that a split off a 1 GB
    # boundary may cost speed: it means huge pages under KVM, not TCG.)
    devices="$devices -machine max-ram-below-4g=512M -object memory-backend-file,id=results,share=on,mem-path=$d/results.shm,size=256M -device ivshmem-plain,memdev=results"
    if [ -n "$SHELL_MODE" ]; then
        exec qemu-system-x86_64 -accel $ACCEL -cpu max -smp 2 -m 1024 -nographic -no-reboot \
            -kernel "$vmlinuz" -initrd "$INITRD" -append "$append ftbox.shell=1" \
            -serial mon:stdio -serial file:"$d/results.raw" $devices
    fi
    log "booting $v (scenarios: $SCEN; limit ${TIMEOUT}s)"
    t0=$(date +%s)
    rc=0
    timeout -k 10 "$TIMEOUT" qemu-system-x86_64 -accel $ACCEL -cpu max -smp 2 -m 1024 -nographic -no-reboot \
        -kernel "$vmlinuz" -initrd "$INITRD" -append "$append" \
        -serial file:"$d/console.raw" -serial file:"$d/results.raw" $devices -monitor none \
        </dev/null >"$d/qemu.log" 2>&1 &
    qpid=$!
    # Follow the guest's progress lines while it runs.
    tail -n +1 -F --pid=$qpid "$d/console.raw" 2>/dev/null | tr -d '\r' | grep --line-buffered '^vm: ' | sed -u "s/^/[$v] /" >&2 &
    tpid=$!
    wait $qpid || rc=$?
    wait $tpid || true
    t1=$(date +%s)
    tr -d '\r' <"$d/console.raw" >"$d/console.log" 2>/dev/null || true
    if [ $rc = 124 ] || [ $rc = 137 ]; then
        log "$v: TIMEOUT after $((t1 - t0)) s; console tail:"
        tail -n 40 "$d/console.log" >&2
        status=1
    elif [ $rc != 0 ]; then
        log "$v: qemu exit $rc"; cat "$d/qemu.log" >&2; tail -n 40 "$d/console.log" >&2
        status=1
    elif grep -q 'Kernel panic' "$d/console.log"; then
        log "$v: guest kernel panic; console tail:"; tail -n 40 "$d/console.log" >&2
        status=1
    else
        log "$v: guest done in $((t1 - t0)) s"
    fi
    unpack "$d"
    sh "$VM/stream-host.sh" "$d" "$FTBOX_BIN"
    sh "$VM/check.sh" "$v" "$d" "$SCEN" || status=1
done
exit $status
