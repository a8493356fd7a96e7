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

# the inits of tests/integ/init-*.sh and supervise-runit.sh: runit, OpenRC
# (supervise-daemon) and s6, without recommends; none of them replaces the
# init system (that would be sysvinit-core, runit-init or openrc's
# recommends); each test is skipped when its package cannot be installed
init_missing=
for p in runit openrc s6; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || init_missing="$init_missing $p"
done
for p in $init_missing; do
	export DEBIAN_FRONTEND=noninteractive
	# never one that would change /sbin/init or remove a package
	if apt-get -s install --no-install-recommends "$p" 2>/dev/null |
		grep -Eq '^Remv |^Inst (sysvinit-core|runit-init|openrc-init|s6-linux-init|systemd-sysv) '; then
		echo "setup: $p would replace the init system or remove packages; not installed, its test will be skipped"
		continue
	fi
	apt-get install -y -qq --no-install-recommends "$p" > /dev/null 2>&1 ||
		echo "setup: $p not installed; its test will be skipped"
done

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

# promtool (Prometheus's rule checker and rule unit tests) for
# tests/tree/prometheus.sh, taken out of Debian's prometheus package without
# installing it: its postinst would start a Prometheus server
PROMTOOL=/var/cache/cgpool-tools/promtool
if [ ! -x "$PROMTOOL" ]; then
	pt_tmp=
	pt_get() { (cd "$pt_tmp" && apt-get download -qq prometheus > /dev/null 2>&1); }
	if pt_tmp=$(mktemp -d) && { pt_get || { apt-get update -qq && pt_get; }; } &&
		dpkg-deb -x "$pt_tmp"/prometheus_*.deb "$pt_tmp/x" &&
		mkdir -p "${PROMTOOL%/*}" && cp "$pt_tmp/x/usr/bin/promtool" "$PROMTOOL.tmp" &&
		chmod 0755 "$PROMTOOL.tmp" && mv "$PROMTOOL.tmp" "$PROMTOOL"; then
		echo "setup: promtool in $PROMTOOL ($("$PROMTOOL" --version 2>&1 | head -n 1))"
	else
		rm -f "$PROMTOOL.tmp"
		echo "setup: promtool not available; tests/tree/prometheus.sh will be skipped"
	fi
	rm -rf "$pt_tmp"
fi

# gnuplot for the PNG plots of bench/plot.sh (pngcairo, with a font for its
# text); without recommends, like Slurm; the benches skip their plots and
# tests/tree/bench-plot.sh is skipped when it cannot be installed
plot_missing=
for p in gnuplot-nox fonts-liberation; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || plot_missing="$plot_missing $p"
done
if [ -n "$plot_missing" ]; then
	export DEBIAN_FRONTEND=noninteractive
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $plot_missing > /dev/null 2>&1 ||
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $plot_missing > /dev/null 2>&1; } ||
		echo "setup: gnuplot-nox not installed; bench/plot.sh's plots will be skipped"
fi

[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure --sysconfdir=/etc --localstatedir=/var
make -j"$(nproc)"
