#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The README's C example is examples/hello.c, and it works: README.md's
# first ```c block is that file (without its SPDX line), it builds with
# -Wall -Wextra -Werror against this tree's libdqshim, and it prints the
# three words in due order (hello 100 ms, world 200 ms, dq 300 ms after
# the commit, committed as world, hello, dq), taking at least 300 ms: a
# message released early would end it sooner.  On a host without /dev/dq
# (make test) it runs on the embedded engine; with dq.ko loaded, on dq.ko.
# TAP; the last line "N passed, N failed, 0 skipped".
#
# Usage: scripts/example-test.sh [USER_BUILD_DIR]   (default user/build)
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-user/build}
CC=${CC:-cc}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dq-example.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0 n=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
		pass=$((pass + 1))
	else
		echo "not ok $n - $2"
		fail=$((fail + 1))
	fi
}
echo "TAP version 13"
echo "1..4"

awk '/^```c$/ { on = 1; next } on && /^```$/ { exit } on' README.md > "$TMP/readme.c"
grep -v '^// SPDX-License-Identifier:' examples/hello.c > "$TMP/hello.c"
diff -u "$TMP/hello.c" "$TMP/readme.c" > "$TMP/diff"
rc=$?
[ $rc = 0 ] || sed 's/^/#   /' "$TMP/diff" | head -n 20
ok $rc "README.md's C example is examples/hello.c"

# shellcheck disable=SC2046
$CC -Wall -Wextra -Werror -Iuser/include -Iuapi -o "$TMP/hello" examples/hello.c \
	"$B/libdqshim.a" $(pkg-config --libs liburing libisal 2> /dev/null || echo -luring -lisal) \
	-pthread > "$TMP/cc.log" 2>&1
rc=$?
[ $rc = 0 ] || sed 's/^/#   /' "$TMP/cc.log" | head -n 20
ok $rc "examples/hello.c builds with -Wall -Wextra -Werror"

t0=$(date +%s%N)
timeout 10 "$TMP/hello" > "$TMP/out" 2> "$TMP/err"
rc=$?
t1=$(date +%s%N)
printf 'hello\nworld\ndq\n' > "$TMP/want"
if [ $rc = 0 ] && cmp -s "$TMP/want" "$TMP/out"; then rc=0; else
	echo "#   exit $rc, output:"; sed 's/^/#   /' "$TMP/out" "$TMP/err"; rc=1; fi
ok $rc "it prints hello, world, dq: the words in due order ($([ -e /dev/dq ] && echo "dq.ko" || echo "embedded engine"))"
ms=$(((t1 - t0) / 1000000))
[ "$ms" -ge 300 ]
ok $? "it took $ms ms, not less than the last due time (300 ms)"
echo "$pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
