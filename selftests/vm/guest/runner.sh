# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# Runs inside the dq test VM with the host's / (read-only 9p) as its root,
# moved onto the mount namespace's / (not a plain chroot: user namespaces
# need that), with the host's /bin/sh.  Loads the job's modules, runs the command, unloads the
# modules, and leaves the outcome in /run/dq-vm/result for the init.
#
# The job file (/run/dq-vm/job.sh, written by selftests/vm/run) sets:
#   DQ_CWD            directory to run the command in
#   DQ_INTERACTIVE    1: the command reads the console, else /dev/null
#   DQ_NMODS          number of modules to insmod, in order
#   DQ_MOD_<i>        path of module i (1-based)
#   DQ_MODARGS_<i>    its parameters (split on white space)
#   DQ_KMEMLEAK       1: kmemleak baseline before insmod, scan after rmmod
#   dq_cmd()          the command, one shell function
# and exports the forwarded DQ_* environment.

BB=/run/dq-vm/busybox
RES=/run/dq-vm/result

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp/home
export TERM="${TERM:-vt100}"

# shellcheck disable=SC1091
. /run/dq-vm/job.sh

kmsg() { echo "dq-vm: $*" > /dev/kmsg 2>/dev/null; }
# phase NAME: progress for the host, on the status channel (see init).
phase() { echo "DQ-VM-PHASE=$1 uptime=$(uptime_s)" > /dev/ttyS1 2>/dev/null; }
result() { printf 'RESULT=%s\nCMD_EXIT=%s\n' "$1" "$2" > "$RES"; }
uptime_s() { read -r up _ < /proc/uptime; echo "$up"; }

if ! cd "$DQ_CWD"; then
	echo "dq-vm: cannot cd to $DQ_CWD" >&2
	result cwd-failed ""
	exit 1
fi

# kmemleak (debug kernel): after rmmod, the objects it reports that were
# allocated after the first insmod are ours.  Boot-time objects are told
# apart by their allocation time (each report gives it in jiffies), not by
# a baseline scan and "clear" before insmod: that scan cost ~65 s of every
# debug boot under TCG.
KMEMLEAK=/sys/kernel/debug/kmemleak
[ -w "$KMEMLEAK" ] || DQ_KMEMLEAK=0
# No automatic scans (kmemleak's thread scans a minute after boot, then
# every 10 min, ~65 s of a vCPU each under TCG, beside the tests): the
# lab scans when it judges, below and in the tests that check for leaks.
[ -w "$KMEMLEAK" ] && echo scan=off > "$KMEMLEAK" 2> /dev/null
if [ "${DQ_KMEMLEAK:-0}" = 1 ]; then
	if ! LOADED_AT=$("$BB" sh /run/dq-vm/kmemleak-since --now); then
		echo "dq-vm: kmemleak: cannot read jiffies" >&2
		result kmemleak-setup ""
		exit 1
	fi
	kmsg "kmemleak baseline at jiffies $LOADED_AT"
fi

loaded=""
i=1
while [ "$i" -le "${DQ_NMODS:-0}" ]; do
	eval "mod=\$DQ_MOD_$i; args=\$DQ_MODARGS_$i"
	# shellcheck disable=SC2154
	kmsg "insmod $mod $args"
	phase "insmod:$(basename "$mod")"
	# shellcheck disable=SC2086,SC2154
	if ! "$BB" insmod "$mod" $args; then
		echo "dq-vm: insmod $mod $args failed" >&2
		kmsg "insmod $mod failed"
		result insmod-failed ""
		exit 1
	fi
	name=$(basename "$mod" .ko | tr - _)
	loaded="$name $loaded"
	i=$((i + 1))
done

kmsg "CMD start uptime=$(uptime_s)"
phase cmd
if [ "${DQ_INTERACTIVE:-0}" = 1 ]; then
	(dq_cmd)
else
	(dq_cmd) < /dev/null
fi
rc=$?
kmsg "CMD exit=$rc uptime=$(uptime_s)"
phase "cmd-exit:$rc"

if [ "$rc" -eq 0 ]; then
	for name in $loaded; do
		kmsg "rmmod $name"
		phase "rmmod:$name"
		if ! "$BB" rmmod "$name"; then
			echo "dq-vm: rmmod $name failed" >&2
			kmsg "rmmod $name failed"
			result rmmod-failed "$rc"
			exit 1
		fi
	done
fi
if [ "$rc" -eq 0 ] && [ "${DQ_KMEMLEAK:-0}" = 1 ]; then
	# An object is reported once it is older than 5 s and stayed
	# unreferenced over a scan: wait, then scan twice.
	phase kmemleak
	sleep 5
	echo scan > "$KMEMLEAK"
	echo scan > "$KMEMLEAK"
	"$BB" sh /run/dq-vm/kmemleak-since "$LOADED_AT" > /run/dq-vm/kmemleak.ours 2> /run/dq-vm/kmemleak.older
	krc=$?
	# Its stderr: "older: ..." for each object left out, else its errors.
	while IFS= read -r l; do
		case $l in
		"older: "*) kmsg "kmemleak older object, not counted: ${l#older: }" ;;
		*) echo "dq-vm: $l" >&2 ;;
		esac
	done < /run/dq-vm/kmemleak.older
	if [ "$krc" -eq 0 ] || [ "$krc" -gt 1 ]; then
		[ "$krc" -gt 1 ] && echo "dq-vm: kmemleak-since failed ($krc): every report counts" >&2 &&
			cat "$KMEMLEAK" > /run/dq-vm/kmemleak.ours
		echo "dq-vm: kmemleak report after rmmod (objects allocated from jiffies $LOADED_AT on):" >&2
		cat /run/dq-vm/kmemleak.ours >&2
		# Into the kernel log too: the dmesg dump keeps it.
		sed 's/^/dq-vm: kmemleak: /' /run/dq-vm/kmemleak.ours | head -n 200 |
			while IFS= read -r l; do echo "$l" > /dev/kmsg; done
		result kmemleak "$rc"
		exit 1
	fi
	kmsg "kmemleak clean after rmmod"
fi
result ok "$rc"
