#!/bin/sh
# make test-cross: the library, fixture and CLI tests of every cross target,
# run under qemu-user on this x86_64 machine.
#
# For each target the test harnesses are built (dev profile at opt-level 1:
# overflow checks stay on, which is what catches 32-bit arithmetic slips,
# and qemu does not crawl) and run through a cargo runner
# (CARGO_TARGET_<TRIPLE>_RUNNER=qemu-<arch>-static); the CLI tests run the
# target's *release* binary, the one `make cross` ships, through FTBOX_BIN.
# The CLI tests spawn that binary (and its argv[0] links) themselves, so the
# kernel must know how to run it: aarch64 and riscv64 through binfmt_misc
# entries for qemu-user-static (flag P keeps argv[0], which the multicall
# dispatch needs); i686 runs natively (IA32 emulation), or through
# qemu-i386-static when the kernel lacks it.
#
# Live tests (tracefs) are not run under emulation: a syscall translator is
# not the kernel ABI they are about. FTBOX_NO_LIVE=1 is exported, the
# convention that makes every live test skip with a message, and the
# integration tests named tests/*_live.rs are left out altogether.
#
#   scripts/test-cross.sh [TARGET...]      default: every cross target
set -eu
targets=${*:-aarch64-unknown-linux-musl i686-unknown-linux-musl riscv64gc-unknown-linux-gnu}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tdir=${CARGO_TARGET_DIR:-$root/target}
CARGO=${CARGO:-cargo}
log() { printf 'test-cross: %s\n' "$*" >&2; }

# Linkers, as `make cross` has them.
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld
export CARGO_TARGET_RISCV64GC_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
export CARGO_TARGET_RISCV64GC_UNKNOWN_LINUX_GNU_LINKER=${RISCV_LINKER:-riscv64-linux-gnu-gcc}
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_RUNNER=qemu-aarch64-static
export CARGO_TARGET_I686_UNKNOWN_LINUX_MUSL_RUNNER=qemu-i386-static
export CARGO_TARGET_RISCV64GC_UNKNOWN_LINUX_GNU_RUNNER=qemu-riscv64-static
export CARGO_PROFILE_DEV_OPT_LEVEL=1
export FTBOX_NO_LIVE=1

# binfmt_misc: register the qemu-user-static interpreter for a foreign ELF
# machine unless the kernel already runs it. Debian ships the entries in
# /usr/lib/binfmt.d; systemd-binfmt would load them at boot, but a CI
# machine or a chroot may not have done so.
binfmt() { # qemu-name
	bm=/proc/sys/fs/binfmt_misc
	[ -e $bm/qemu-$1 ] && return 0
	[ -e $bm/register ] || mount -t binfmt_misc binfmt_misc $bm 2>/dev/null || true
	[ -e $bm/qemu-$1 ] && return 0
	conf=/usr/lib/binfmt.d/qemu-$1.conf
	[ -w $bm/register ] && [ -f $conf ] || { log "cannot register qemu-$1 with binfmt_misc"; return 1; }
	grep -v '^#' $conf > $bm/register
	log "registered qemu-$1 with binfmt_misc"
}

tests=""
for f in tests/*.rs; do
	n=${f#tests/}; n=${n%.rs}
	case $n in *_live) log "not under emulation: tests/$n.rs" ;; *) tests="$tests --test $n" ;; esac
done

# Every target runs even when one fails; the summary says which failed.
failed=""
for t in $targets; do
	case $t in
	aarch64-*) binfmt aarch64 ;;
	riscv64*) binfmt riscv64 ;;
	i686-*) : ;;  # runs natively on x86_64 (IA32 emulation)
	*) log "unknown target $t"; exit 2 ;;
	esac
	log "$t: release binary"
	$CARGO build --release --target $t --quiet || { failed="$failed $t(build)"; continue; }
	bin=$tdir/$t/release/ftbox
	log "$t: tests under $(eval echo \$CARGO_TARGET_$(echo $t | tr a-z- A-Z_)_RUNNER)"
	# Unit tests and integration tests apart, so that one that does not
	# build does not hide the results of the other.
	FTBOX_BIN=$bin $CARGO test --target $t --lib --bins -- --test-threads=2 || failed="$failed $t(unit)"
	# shellcheck disable=SC2086
	FTBOX_BIN=$bin $CARGO test --target $t --no-fail-fast $tests -- --test-threads=2 || failed="$failed $t(integration)"
done
if [ -n "$failed" ]; then
	log "FAILED:$failed"
	exit 1
fi
log "passed: $targets"
