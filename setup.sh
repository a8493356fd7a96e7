#!/bin/sh
# setup.sh - install what cgpool needs from Debian's packages, then build it in
# this checkout. Run as root on Debian stable. Idempotent.
set -eu
cd "$(dirname "$0")"

PACKAGES="build-essential autoconf automake libtool pkg-config
	libev-dev libinih-dev libsystemd-dev libcgroup-dev libjansson-dev libcmocka-dev
	util-linux python3 procps
	qemu-system-x86 qemu-utils busybox-static cpio e2fsprogs kmod debootstrap"

missing=
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq $missing > /dev/null
fi

# runit for the test of a job that runsv supervises; without its
# recommends, which would replace the init system
if ! dpkg-query -W -f='${Status}' runit 2>/dev/null | grep -q 'ok installed'; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends runit > /dev/null ||
		echo "setup: runit not installed; its test will be skipped"
fi

# Slurm (a one-node cluster on loopback for tests/slurm) and its headers
# for the SPANK plug-in; without recommends, like runit; the tests skip
# when it cannot be installed
slurm_missing=
for p in slurm-wlm libslurm-dev munge; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || slurm_missing="$slurm_missing $p"
done
if [ -n "$slurm_missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $slurm_missing > /dev/null ||
		echo "setup: Slurm not installed; the tests under tests/slurm will be skipped"
fi

[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure --sysconfdir=/etc --localstatedir=/var
make -j"$(nproc)"
