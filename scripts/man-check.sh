#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The manual pages (man/) render and are true.  For every page: man(1)
# formats it with groff's warnings on and prints none, and its .TH says
# dq's VERSION.  Then what each page names must exist in the tree as
# built: the program of a section 8 page answers --version with its name;
# libdqshim(3)'s SYNOPSIS functions are exported (libdqshim.map, or
# inline in dqshim.h) and
# declared (dqshim.h); dq(4)'s DQ_IOC_/DQ_URING_CMD_/DQ_OFF_ names are
# defined in uapi/linux/dq.h and its module parameters are dq.ko's;
# dqctl(8) documents every option dqctl parses (args.c) and every command
# of its table (main.c), and names no other option; dqbridge.conf(5)
# lists exactly the keys `dqbridge --help-config` prints, and every
# --option dqbridge(8) names is one dqbridge takes.  TAP; the last line
# "N passed, N failed, N skipped".
#
# Usage: scripts/man-check.sh [USER_BUILD_DIR]   (default user/build)
set -u -o pipefail
cd "$(dirname "$0")/.." || exit 1
B=${1:-user/build}
V=$(cat VERSION)
pass=0 fail=0 skip=0 n=0
ok() {	# ok RC WHAT [DETAIL...]: DETAIL lines printed on failure
	local rc=$1 what=$2
	shift 2
	n=$((n + 1))
	if [ "$rc" = 0 ]; then
		echo "ok $n - $what"
		pass=$((pass + 1))
	else
		echo "not ok $n - $what"
		[ $# -gt 0 ] && printf '#   %s\n' "$@"
		fail=$((fail + 1))
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
	skip=$((skip + 1))
}
# missing LIST_WANTED LIST_HAVE: the words of the first not in the second
missing() { comm -23 <(tr ' ' '\n' <<< "$1" | sort -u | grep .) <(tr ' ' '\n' <<< "$2" | sort -u); }
# The page's text without troff escapes for '-' (what a reader sees).
text() { sed 's/\\-/-/g; s/\\f[BIRP]//g' "$1"; }

echo "TAP version 13"
PAGES=(man/*.[1-8])
if [ ! -f "${PAGES[0]}" ]; then
	ok 1 "man/ holds manual pages"
	echo "0 passed, $fail failed, 0 skipped"
	exit 1
fi
for p in "${PAGES[@]}"; do
	err=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$p" 2>&1 > /dev/null)
	rc=$?
	[ -z "$err" ] && [ $rc = 0 ]
	ok $? "$p renders without a warning" "exit $rc" "$err"
	th=$(sed -n 's/^\.TH .*"dq \([^"]*\)".*/\1/p' "$p")
	[ "$th" = "$V" ]
	ok $? "$p says dq $V in its .TH" "it says '$th'"
done

# Section 8: the program exists and is the one the page is about.
for p in man/*.8; do
	name=$(basename "$p" .8)
	if [ ! -x "$B/$name" ]; then
		skip "$name(8): $B/$name answers --version" "not built (its libraries are missing)"
		continue
	fi
	got=$("$B/$name" --version 2> /dev/null | awk '{ print $1; exit }')
	[ "$got" = "$name" ]
	ok $? "$name(8): $B/$name answers --version" "it said '$got'"
done

# libdqshim(3): the SYNOPSIS functions.
syn=$(sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' man/libdqshim.3 | grep -o 'dq_[a-z0-9_]*(' | tr -d '(' | sort -u)
# ... or inline in dqshim.h (dq_params_init(), dq_journal_params_init():
# they set the caller's sizeof, see docs/api.md, Extensible structs).
exported=$( (sed -n 's/^[[:space:]]*\(dq_[a-z0-9_]*\);/\1/p' user/libdqshim.map
	sed -n 's/^static inline [a-z_ ]*[ *]\(dq_[a-z0-9_]*\)(.*/\1/p' user/include/dqshim.h) |
	sort -u)
declared=$(grep -o '\bdq_[a-z0-9_]*(' user/include/dqshim.h | tr -d '(' | sort -u)
m=$(missing "$syn" "$exported")
[ -n "$syn" ] && [ -z "$m" ]
ok $? "libdqshim(3): its $(wc -w <<< "$syn") SYNOPSIS functions are exported (libdqshim.map)" $m
m=$(missing "$syn" "$declared")
[ -z "$m" ]
ok $? "libdqshim(3): ... and declared in dqshim.h" $m
[ -f "$B/libdqshim.so.$V" ]
ok $? "libdqshim(3): the library it names is built ($B/libdqshim.so.$V)"

# dq(4): the uapi names, the module parameters, the device name.
names=$(grep -o '\bDQ_\(IOC\|URING_CMD\|OFF\)_[A-Z][A-Z_]*' man/dq.4 | sort -u)
defined=$(sed -n 's/^#define[[:space:]]\{1,\}\(DQ_[A-Z_]*\)[[:space:]].*/\1/p' uapi/linux/dq.h | sort -u)
m=$(missing "$names" "$defined")
[ -n "$names" ] && [ -z "$m" ]
ok $? "dq(4): its $(wc -w <<< "$names") DQ_IOC_/DQ_URING_CMD_/DQ_OFF_ names are in uapi/linux/dq.h" $m
params=$(sed -n '/^\.SH MODULE PARAMETERS/,/^\.SH /p' man/dq.4 | sed -n 's/^\.BR \([a-z_]*\) .*/\1/p' | sort -u)
have=$(sed -n 's/.*module_param_named(\([a-z_]*\),.*/\1/p' kmod/*.c | sort -u)
m=$(missing "$params" "$have")
[ -n "$params" ] && [ -z "$m" ]
ok $? "dq(4): its module parameters ($(echo $params)) are dq.ko's" $m
grep -q '#define DQ_DEVICE_NAME[[:space:]]*"dq"' uapi/linux/dq.h
ok $? "dq(4): the device is /dev/dq (DQ_DEVICE_NAME)"

# dqctl(8): every option and command, and no other option.
opts=$(sed -n 's/^[[:space:]]*{ "\([a-z-]*\)", O_[A-Z_]*, \(true\|false\) },/\1/p' user/tools/dqctl/args.c)
cmds=$(sed -n 's/^[[:space:]]*{ "\([a-z]*\)", cmd_[a-z_]* },/\1/p' user/tools/dqctl/main.c)
page=$(text man/dqctl.8)
m=$(for o in $opts; do grep -q -- "--$o\b" <<< "$page" || echo "--$o"; done)
[ -n "$opts" ] && [ -z "$m" ]
ok $? "dqctl(8): documents every option of args.c ($(wc -w <<< "$opts"))" $m
m=$(for c in $cmds; do grep -qE "^\.(B|BI|BR|TP)?.*\b$c\b" <<< "$page" || echo "$c"; done)
[ -n "$cmds" ] && [ -z "$m" ]
ok $? "dqctl(8): documents every command of main.c ($(wc -w <<< "$cmds"))" $m
named=$(grep -o -- '--[a-z][a-z-]*' <<< "$page" | sed 's/^--//' | sort -u)
m=$(missing "$named" "$opts json verbose version help")
[ -z "$m" ]
ok $? "dqctl(8): names no option dqctl does not take" $m

# dqbridge: the keys, and the options of dqbridge(8).
if [ -x "$B/dqbridge" ]; then
	keys=$("$B/dqbridge" --help-config | awk 'NF { print $1 }' | sort -u)
	pkeys=$(sed -n '/^\.SH KEYS/,/^\.SH /p' man/dqbridge.conf.5 | sed -n 's/^\.BR \([a-z_0-9]*\) .*/\1/p' | sort -u)
	m=$(missing "$keys" "$pkeys")
	ok "$([ -z "$m" ] && echo 0 || echo 1)" "dqbridge.conf(5): lists every key of dqbridge --help-config ($(wc -w <<< "$keys"))" $m
	m=$(missing "$pkeys" "$keys")
	ok "$([ -z "$m" ] && echo 0 || echo 1)" "dqbridge.conf(5): lists no key dqbridge does not have" $m
	flags=$("$B/dqbridge" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sed 's/^--//')
	flags="$flags $(tr '_' '-' <<< "$keys")"
	named=$(text man/dqbridge.8 | grep -o -- '--[a-z][a-z-]*' | sed 's/^--//' | sort -u)
	m=$(missing "$named" "$flags")
	[ -z "$m" ]
	ok $? "dqbridge(8): every --option it names is dqbridge's (or a key's)" $m
else
	skip "dqbridge.conf(5) and dqbridge(8) against dqbridge" "dqbridge not built"
fi

# dqrecover(8): the options of its SYNOPSIS and OPTIONS are in dqrecover.c.
named=$(text man/dqrecover.8 | sed -n '/^\.SH SYNOPSIS/,/^\.SH DESCRIPTION/p; /^\.SH OPTIONS/,/^\.SH OUTPUT/p' | grep -o -- '--[a-z][a-z-]*' | sort -u)
m=$(for o in $named; do grep -q -- "\"$o\"" user/tools/dqrecover.c || echo "$o"; done)
[ -n "$named" ] && [ -z "$m" ]
ok $? "dqrecover(8): its options ($(echo $named)) are dqrecover's" $m

echo "1..$n"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
