#!/bin/sh
# Boot a Debian kernel of another architecture under qemu-system (TCG) with
# a busybox initramfs running guest-init.sh, and unpack the tracefs capture it
# prints into OUT (default $WORK/capture/NAME, WORK=/tmp/ftbox-foreign).
#
#   scripts/foreign/run-vm.sh NAME [OUT]
#
# NAME picks kernel, busybox and machine:
#   i686       linux-image-686:i386          qemu-system-i386 -M pc, 2 CPUs
#   s390x      linux-image-s390x:s390x       qemu-system-s390x -M s390-ccw-virtio, 2 CPUs
#   malta      linux-image-5kc-malta:mips64el qemu-system-mips64el -M malta -cpu 5KEc, 1 CPU
#   loongson3  linux-image-loongson-3:mips64el qemu-system-mips64el -M loongson3-virt, 1 CPU
# Needs: apt (the guest's architecture is added with dpkg --add-architecture
# for the download and removed again; packages are only downloaded, never
# installed), the qemu-system package of the guest (installed if missing:
# qemu-system-x86, qemu-system-misc, qemu-system-mips), cpio, gzip. One VM
# at a time, and a hard time limit on each boot (VM_TIMEOUT seconds, default 600).
set -eu
name=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${2:-${WORK:-/tmp/ftbox-foreign}/capture/$name}
work=${WORK:-/tmp/ftbox-foreign}/$name
mkdir -p "$work"
bufkb=64 subbuf=""
case $name in
i686)      arch=i386     kpkg=linux-image-686 endian=little ;;
s390x)     arch=s390x    kpkg=linux-image-s390x endian=big ;;
malta)     arch=mips64el kpkg=linux-image-5kc-malta endian=little ;;
loongson3) arch=mips64el kpkg=linux-image-loongson-3 endian=little bufkb=128 ;;
*) echo "run-vm.sh: unknown NAME $name" >&2; exit 2 ;;
esac

qemu=$(case $arch in i386) echo qemu-system-i386:qemu-system-x86;; s390x) echo qemu-system-s390x:qemu-system-misc;; *) echo qemu-system-mips64el:qemu-system-mips;; esac)
command -v ${qemu%%:*} >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${qemu#*:} >&2
added=""
dpkg --print-foreign-architectures | grep -qx $arch || { dpkg --add-architecture $arch; added=1; apt-get update -qq || true; }
cd "$work"
# The meta package names the current versioned image package: fetch that.
kver=$(apt-cache depends $kpkg:$arch | sed -n 's/.*Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -1)
[ -n "$kver" ] || { echo "run-vm.sh: cannot resolve $kpkg:$arch" >&2; exit 1; }
ls ${kver}_*.deb >/dev/null 2>&1 || apt-get download $kver:$arch
ls busybox-static_*_$arch.deb >/dev/null 2>&1 || apt-get download busybox-static:$arch
# Only downloads were wanted: leave dpkg's architectures as they were.
[ -z "$added" ] || { dpkg --remove-architecture $arch; apt-get update -qq || true; }
rm -rf k bb initrd && mkdir -p k bb initrd/bin initrd/proc initrd/sys initrd/dev initrd/tmp
dpkg-deb -x ${kver}_*.deb k
dpkg-deb -x busybox-static_*_$arch.deb bb
kernel=$(ls k/boot/vmlinu*-* | head -1)
cp bb/bin/busybox initrd/bin/busybox
# Applet links: a fixed list (running the foreign busybox to ask is not needed).
for a in sh mount cat echo ls sleep kill cp mkdir tar gzip base64 timeout uname nproc sync poweroff printf true; do
	ln -s busybox initrd/bin/$a
done
cp "$here/guest-init.sh" initrd/init
cp "$here/capture.sh" initrd/capture.sh
printf 'BUFKB=%s\nSUBBUF_KB=%s\n' $bufkb "$subbuf" > initrd/capture.conf
(cd initrd && find . | cpio -o -H newc --quiet | gzip -9) > initrd.cpio.gz

app="no_hash_pointers panic=-1 quiet loglevel=0"
case $name in
i686)      set -- qemu-system-i386 -M pc -cpu qemu32 -smp 2 -m 256 -append "console=ttyS0 $app" ;;
s390x)     set -- qemu-system-s390x -M s390-ccw-virtio -cpu qemu -smp 2 -m 512 -append "console=ttysclp0 $app" ;;
malta)     set -- qemu-system-mips64el -M malta -cpu 5KEc -m 256 -append "console=ttyS0 $app" ;;
loongson3) set -- qemu-system-mips64el -M loongson3-virt -cpu Loongson-3A1000 -m 512 -append "console=ttyS0 $app" ;;
esac
log=$work/console.log
echo "run-vm.sh: booting $kver under $1 (limit ${VM_TIMEOUT:-600}s)" >&2
timeout -k 10 ${VM_TIMEOUT:-600} "$@" -kernel "$kernel" -initrd initrd.cpio.gz \
	-nographic -no-reboot -serial mon:stdio </dev/null > "$log" 2>&1 || true
grep -q FTBOX-CAPTURE-END "$log" || { echo "run-vm.sh: no capture in $log" >&2; tail -20 "$log" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
sed -n '/=====FTBOX-CAPTURE-BEGIN=====/,/=====FTBOX-CAPTURE-END=====/p' "$log" | sed '1d;$d' | tr -d '\r' |
	base64 -d | tar xzf - -C "$out" --strip-components=1
echo $endian > "$out/endian"
printf '%s\n' "$kver" "$(dpkg-deb -f ${kver}_*.deb Version)" > "$out/debian-package"
echo "run-vm.sh: capture in $out" >&2
