#!/bin/sh
# initrd-init.sh - /init of the small initramfs that run-systemd-vm.sh builds
# (busybox sh, PID 1). Loads the virtio disk and ext4 modules, mounts the
# root image (/dev/vda, written through a copy-on-write overlay), copies the
# run's files from the payload disk (/dev/vdb: root/ is the `make install
# DESTDIR=` tree, src/ the source tree's tests, vm/ the payloads and their
# runner) into it, enables the runner unit and hands over to systemd.
# Failures print `VMERROR reason` and power off.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec < /dev/console > /dev/console 2>&1
dmesg -n 1
# the firmware's escape codes end up on the first line: start a fresh one
echo

die() {
	echo "VMERROR $*"
	dmesg | tail -n 40
	poweroff -f
	sleep 10
}

while read -r m; do
	[ -n "$m" ] || continue
	insmod "/modules/$m" 2> /tmp.err || echo "VMINFO insmod $m: $(cat /tmp.err) (ignored)"
done < /modules.load

i=0
while { [ ! -b /dev/vda ] || [ ! -b /dev/vdb ]; } && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
[ -b /dev/vdb ] || die "no virtio disks /dev/vda and /dev/vdb (modules: $(tr '\n' ' ' < /modules.load))"

mkdir -p /newroot /payload
mount -t ext4 /dev/vda /newroot || die "cannot mount the root image /dev/vda"
mount -t ext4 -o ro /dev/vdb /payload || die "cannot mount the payload disk /dev/vdb"
N=/newroot
# the build first (make install DESTDIR=), then the tests and the runner
cp -a /payload/root/. $N/ || die "cannot install the build into the root image"
mkdir -p $N/src $N/vm
cp -a /payload/src/. $N/src/ && cp -a /payload/vm/. $N/vm/ || die "cannot copy the payloads"
U=$N/etc/systemd/system
mkdir -p $U/multi-user.target.wants
cp /payload/vm/cgpool-vmtest.service $U/ &&
	ln -sf ../cgpool-vmtest.service $U/multi-user.target.wants/cgpool-vmtest.service ||
	die "cannot install the runner unit"
umount /payload

for m in dev proc sys; do
	mount --move /$m $N/$m || die "cannot move /$m to the root image"
done
exec switch_root $N /lib/systemd/systemd
die "switch_root to systemd failed"
