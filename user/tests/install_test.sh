#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# `make -C user install` as a user of the library sees it: installed into
# a staging root, a program that includes <dqshim.h> builds with nothing
# but `pkg-config --cflags --libs dqshim` (shared) and `--static`, runs
# against the installed library, and the dq ABI header is under the
# library's own directory (dqshim/linux/dq.h), never over the system's
# <linux/...>; benchmark-only tools are not installed.
# Usage: install_test.sh USER_SRCDIR
SRC=${1:-$(dirname "$0")/..}
CC=${CC:-cc}
TMP=$(mktemp -d /tmp/dqshim-install.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
n=0

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
echo "1..7"
ROOT=$TMP/root
PREFIX=/usr/local
# A build tree of its own: the caller's objects stay as they are.
timeout 300 make -s -C "$SRC" O="$TMP/build" PREFIX=$PREFIX DESTDIR="$ROOT" \
	install > "$TMP/install.log" 2>&1
rc=$?
[ $rc = 0 ] || sed 's/^/#   /' "$TMP/install.log" | tail -n 20
ok $rc "make install into a staging root"

# The tools an operator uses are installed; benchmark-only ones are not.
B=$ROOT$PREFIX/bin
test -x "$B/dqrecover" && test -x "$B/dqdemo" && test ! -e "$B/dqbench_hot" &&
	test ! -e "$B/dqbench"
rc=$?
[ $rc = 0 ] || echo "#   installed: $(ls "$B" 2>&1 | tr '\n' ' ')"
ok $rc "bin/ has dqrecover and dqdemo, not the benchmarks dqbench, dqbench_hot"

I=$ROOT$PREFIX/include
test -f "$I/dqshim.h" && test -f "$I/dqshim/linux/dq.h" && test ! -e "$I/linux"
ok $? "dqshim.h at include/, the ABI at include/dqshim/linux/dq.h, no include/linux/"

cat > "$TMP/app.c" <<'C'
#include <stdio.h>
#include <dqshim.h>

int main(void)
{
	struct dq_params p;
	struct dqshim_queue *q;
	struct dqshim_msg m;
	int ret;

	dq_params_init(&p);
	p.backend = DQ_BACKEND_USER;
	p.slot_count = 4;
	ret = dq_queue_open(&p, &q);
	if (ret)
		return 1;
	ret = dq_reserve(q, &m);
	dq_queue_close(q);
	/* DQ_ABI_VERSION comes from the installed dqshim/linux/dq.h. */
	printf("abi %d reserve %d\n", DQ_ABI_VERSION, ret);
	return ret ? 1 : 0;
}
C
export PKG_CONFIG_SYSROOT_DIR="$ROOT"
export PKG_CONFIG_PATH="$ROOT$PREFIX/lib/pkgconfig"
flags=$(pkg-config --cflags --libs dqshim 2>&1)
ok $? "pkg-config --cflags --libs dqshim: $flags"

# Only the staged headers: the repository's uapi/ is not on the path.
# shellcheck disable=SC2086
$CC -o "$TMP/app" "$TMP/app.c" $flags > "$TMP/cc.log" 2>&1
rc=$?
[ $rc = 0 ] || sed 's/^/#   /' "$TMP/cc.log"
ok $rc "a program builds against the installed library (shared)"

out=$(LD_LIBRARY_PATH="$ROOT$PREFIX/lib" "$TMP/app" 2>&1)
rc=$?
echo "#   $out"
ok $rc "it runs against the installed libdqshim.so"

# shellcheck disable=SC2046
$CC -o "$TMP/app-static" "$TMP/app.c" $(pkg-config --cflags dqshim) \
	"$ROOT$PREFIX/lib/libdqshim.a" $(pkg-config --static --libs-only-l --libs-only-other dqshim | sed 's/-ldqshim//') \
	> "$TMP/cc2.log" 2>&1 && "$TMP/app-static" > /dev/null
rc=$?
[ $rc = 0 ] || sed 's/^/#   /' "$TMP/cc2.log"
ok $rc "and against libdqshim.a (pkg-config --static)"

# The manual pages: every man/NAME.N under MANDIR/manN.
rc=0
for m in "$SRC"/../man/*.[1-8]; do
	p=$(basename "$m")
	cmp -s "$m" "$ROOT$PREFIX/share/man/man${p##*.}/$p" || { echo "#   $p not installed"; rc=1; }
done
ok $rc "the man pages are installed under share/man/manN"

echo "$pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
