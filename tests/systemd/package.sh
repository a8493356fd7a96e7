#!/bin/sh
# package.sh - the Debian packages' life on a systemd node (a
# run-systemd-vm.sh payload, the last one: it removes the packages). The
# runner installed the .debs (/vm/debs) with dpkg before the payloads.
# Checks: the install enabled and started the socket; an upgrade to the same
# packages rebuilt with a higher version restarts the daemon once while a
# supervised job and an exec'd job run, and both keep their pid and slot;
# systemctl reload with a bad conf.d file fails, the journal names FILE:LINE
# and the old config stays; remove stops the daemon and leaves the jobs
# running in their slots; purge takes /etc/cgpool and /var/lib/cgpool.
. "${top_srcdir:-/src}/tests/systemd/lib.sh"

D=/vm/debs
[ -d "$D" ] || { echo "SKIP: $T_NAME: no /vm/debs (the guest has make install's tree, not the packages)"; exit 77; }
W=$(mktemp -d /var/tmp/package.XXXXXX)
ctl() { "$CGPOOLCTL" "$@"; }
main_pid() { systemctl show -p MainPID --value cgpoold.service; }
slot_of() { sed -n 's/^0:://p' "/proc/$1/cgroup"; }

check "the packages are installed: $(dpkg-query -W -f='${Package} ${Version}, ' cgpool libcgpool0 slurm-cgpool 2> /dev/null)" \
	sh -c "dpkg-query -W -f='\${Status}\n' cgpool libcgpool0 | grep -vq 'install ok installed' && exit 1 || exit 0"
check "the install enabled cgpoold.socket" test "$(systemctl is-enabled cgpoold.socket)" = enabled
check "the install enabled cgpoold.service" test "$(systemctl is-enabled cgpoold.service)" = enabled
check "the socket is listening" test "$(systemctl is-active cgpoold.socket)" = active
check "/etc/cgpool/cgpool.conf is a conffile of cgpool" sh -c "dpkg-query -W -f='\${Conffiles}' cgpool | grep -q /etc/cgpool/cgpool.conf"

# ---- jobs that must live through all of it
mkdir -p /etc/cgpool/conf.d
cat > /etc/cgpool/conf.d/pkg.conf << 'EOF'
[job pkgjob]
exec = sleep 100000
EOF
systemctl reload cgpoold || systemctl restart cgpoold
check "the supervised job runs" wait_for 20 sh -c "$CGPOOLCTL --json status pkgjob | grep -q '\"job_state\": *\"running\"'"
job=$(ctl --json status pkgjob | json main_pid)
# cgpoolctl exec moves itself into the slot and becomes the command: $! is the job
"$CGPOOLCTL" exec pkgexec -- sleep 100000 < /dev/null > /dev/null 2>&1 &
exe=$!
check "the exec'd job runs" wait_for 20 sh -c "$CGPOOLCTL --json status pkgexec | grep -q '\"state\": *\"running\"'"
jslot=$(slot_of "$job")
eslot=$(slot_of "$exe")
echo "supervised job: pid $job in $jslot; exec'd job: pid $exe in $eslot"
check "both jobs are known by pid" sh -c "[ -n '$job' ] && [ -n '$exe' ]"

# ---- upgrade: the same packages with a higher version
v=$(dpkg-query -W -f='${Version}' cgpool)
up=$v+up1
for deb in "$D"/*.deb; do
	x=$W/x
	rm -rf "$x" && dpkg-deb -R "$deb" "$x" || fail "dpkg-deb -R $deb"
	# the version, and the exact versions the packages require of each other
	sed -i "s/^Version: $v\$/Version: $up/; s/(= $v)/(= $up)/g" "$x/DEBIAN/control"
	dpkg-deb -b "$x" "$W/$(basename "$deb" | sed "s/_${v}_/_${up}_/")" > /dev/null || fail "dpkg-deb -b of $deb"
done
before=$(main_pid)
fails_before=$T_FAILS
since=$(date +%s)
check "upgrade to $up (dpkg -i)" sh -c "dpkg -i $W/*_${up}_*.deb > $W/upgrade.log 2>&1"
sed 's/^/  /' "$W/upgrade.log"
check "upgrade: the packages are at $up" test "$(dpkg-query -W -f='${Version}' cgpool)" = "$up"
check "upgrade: the daemon was restarted" wait_for 20 sh -c "p=\$(systemctl show -p MainPID --value cgpoold); [ -n \"\$p\" ] && [ \"\$p\" != 0 ] && [ \"\$p\" != $before ]"
check "upgrade: the daemon is active" test "$(systemctl is-active cgpoold.service)" = active
check "upgrade: the supervised job kept its pid ($job)" kill -0 "$job"
check "upgrade: ... and its slot" test "$(slot_of "$job")" = "$jslot"
check "upgrade: the exec'd job kept its pid ($exe)" kill -0 "$exe"
check "upgrade: ... and its slot" test "$(slot_of "$exe")" = "$eslot"
check "upgrade: status shows the supervised job running with the same pid" \
	sh -c "[ \"\$($CGPOOLCTL --json status pkgjob | sed -n 's/.*\"main_pid\": *\([0-9]*\).*/\1/p')\" = $job ]"
check "upgrade: the slots' scope was not stopped" test "$(systemctl is-active cgpoold-slots.scope)" = active
if [ "$T_FAILS" != "$fails_before" ]; then
	journalctl --sync
	show journalctl --no-pager -o short-monotonic --since "@$since"
fi

# ---- reload with a bad conf.d file: refused, the old config stays
printf '[daemon]\nwarm = lots\n' > /etc/cgpool/conf.d/zz-bad.conf
check "bad conf.d: systemctl reload fails" sh -c '! systemctl reload cgpoold'
journalctl --sync
check "bad conf.d: the journal names FILE:LINE" \
	sh -c "journalctl --no-pager -u cgpoold | grep -q '/etc/cgpool/conf.d/zz-bad.conf:2: '"
check "bad conf.d: the old config stays (the job is still known)" sh -c "$CGPOOLCTL status pkgjob > /dev/null"
rm -f /etc/cgpool/conf.d/zz-bad.conf

# ---- remove: the daemon stops, the jobs stay in their slots
check "apt-get remove cgpool slurm-cgpool" sh -c "DEBIAN_FRONTEND=noninteractive apt-get remove -y -q cgpool slurm-cgpool > $W/remove.log 2>&1"
tail -n 5 "$W/remove.log" | sed 's/^/  /'
check "remove: the daemon is stopped" sh -c "! systemctl is-active -q cgpoold.service"
check "remove: the socket is stopped" sh -c "! systemctl is-active -q cgpoold.socket"
check "remove: the supervised job still runs" kill -0 "$job"
check "remove: ... in its slot" test "$(slot_of "$job")" = "$jslot"
check "remove: the exec'd job still runs" kill -0 "$exe"
check "remove: the config is kept" test -f /etc/cgpool/cgpool.conf

# ---- purge: config and state gone
check "dpkg --purge cgpool" sh -c "dpkg --purge cgpool > $W/purge.log 2>&1"
check "purge: /etc/cgpool is gone" test ! -e /etc/cgpool
check "purge: /var/lib/cgpool is gone" test ! -e /var/lib/cgpool
kill "$job" "$exe" 2> /dev/null
rm -rf "$W"
finish
