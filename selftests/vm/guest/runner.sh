# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
#
# Runs inside the dq test VM, chrooted into the host's / (read-only 9p), with
# the host's /bin/sh.  Loads the job's modules, runs the command, unloads the
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
result() { printf 'RESULT=%s\nCMD_EXIT=%s\n' "$1" "$2" > "$RES"; }
uptime_s() { read -r up _ < /proc/uptime; echo "$up"; }

if ! cd "$DQ_CWD"; then
	echo "dq-vm: cannot cd to $DQ_CWD" >&2
	result cwd-failed ""
	exit 1
fi

# kmemleak (debug kernel): a scan and "clear" before anything is loaded, so
# boot-time objects are never reported; after rmmod, what is left is ours.
KMEMLEAK=/sys/kernel/debug/kmemleak
[ -w "$KMEMLEAK" ] || DQ_KMEMLEAK=0
if [ "${DQ_KMEMLEAK:-0}" = 1 ]; then
	echo scan > "$KMEMLEAK"
	echo clear > "$KMEMLEAK"
	kmsg "kmemleak baseline taken"
fi

loaded=""
i=1
while [ "$i" -le "${DQ_NMODS:-0}" ]; do
	eval "mod=\$DQ_MOD_$i; args=\$DQ_MODARGS_$i"
	# shellcheck disable=SC2154
	kmsg "insmod $mod $args"
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
if [ "${DQ_INTERACTIVE:-0}" = 1 ]; then
	(dq_cmd)
else
	(dq_cmd) < /dev/null
fi
rc=$?
kmsg "CMD exit=$rc uptime=$(uptime_s)"

if [ "$rc" -eq 0 ]; then
	for name in $loaded; do
		kmsg "rmmod $name"
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
	sleep 5
	echo scan > "$KMEMLEAK"
	echo scan > "$KMEMLEAK"
	if grep -q 'unreferenced object' "$KMEMLEAK"; then
		echo "dq-vm: kmemleak report after rmmod:" >&2
		cat "$KMEMLEAK" >&2
		# Into the kernel log too: the dmesg dump keeps it.
		sed 's/^/dq-vm: kmemleak: /' "$KMEMLEAK" | head -n 200 |
			while IFS= read -r l; do echo "$l" > /dev/kmsg; done
		result kmemleak "$rc"
		exit 1
	fi
	kmsg "kmemleak clean after rmmod"
fi
result ok "$rc"
