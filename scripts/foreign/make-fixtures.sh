#!/bin/sh
# Regenerate fixtures/foreign/ from scratch: boot each foreign Debian kernel
# (run-vm.sh, one VM at a time), capture on this machine with an 8 KiB
# sub-buffer (capture-live.sh), and pack every capture into NAME.dat (pack.py)
# beside the kernel's own text NAME.trace.txt and NAME.info (where it came
# from). The trace-cmd oracle is not stored: tests run `trace-cmd report`.
#
#   scripts/foreign/make-fixtures.sh [NAME...]   default: all of them
# NAME: i686 s390x malta loongson3 subbuf8k. REPACK=1 skips the captures and
# packs again what $WORK/capture/NAME holds. Timestamps, pids and addresses
# differ from run to run: the tests compare each .dat with its own
# .trace.txt, so regenerate both together (and re-bless golden outputs).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=$root/fixtures/foreign
export WORK=${WORK:-/tmp/ftbox-foreign}
mkdir -p "$dest" "$WORK/capture"
for name in ${*:-i686 s390x malta loongson3 subbuf8k}; do
	cap=$WORK/capture/$name
	case ${REPACK:-}$name in
	1*) ;;
	subbuf8k) sh "$here/capture-live.sh" "$cap" 8 ;;
	*) sh "$here/run-vm.sh" "$name" "$cap" ;;
	esac
	python3 "$here/pack.py" "$cap" "$dest/$name.dat"
	cp "$cap/trace.txt" "$dest/$name.trace.txt"
	{
		echo "uname: $(cat "$cap/uname")"
		[ -f "$cap/debian-package" ] && echo "debian package: $(tr '\n' ' ' < "$cap/debian-package")"
		echo "command line: $(cat "$cap/cmdline")"
		echo "cpus: $(cat "$cap/nproc")"
		echo "byte order: $(cat "$cap/endian")"
		echo "trace_clock: $(cat "$cap/trace_clock")"
		[ -s "$cap/subbuf_size_kb" ] && echo "buffer_subbuf_size_kb: $(cat "$cap/subbuf_size_kb")"
		echo "header_page:"; cat "$cap/header_page"
		for s in "$cap"/cpu*.stats; do n=${s##*/}; echo "${n%.stats} stats ($(stat -c %s "${s%.stats}.raw") bytes of pages):"; sed 's/^/	/' "$s"; done
	} > "$dest/$name.info"
	echo "make-fixtures: $name: $(stat -c %s "$dest/$name.dat") bytes" >&2
done
