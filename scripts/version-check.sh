#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dq has one version, the file VERSION; everything that states a version
# must say the same.  Checked here against the built tree: dkms.conf,
# dqshim.h's macros, the library's file name (and its soname, whose
# number is the ABI's: user/Makefile's SOMAJOR, also the Debian library
# package's name), dqshim.pc,
# `dqctl --version`, `dqbridge --version`, `dqrecover --version`, dq.ko's
# modinfo version (when ./dq.ko is there and newer than VERSION),
# CHANGELOG.md's newest entry and, when packaging exists,
# debian/changelog's.  TAP; the last line "N passed, N failed, N skipped".
#
# Usage: scripts/version-check.sh [USER_BUILD_DIR]   (default user/build)
set -u
cd "$(dirname "$0")/.." || exit 1
B=${1:-user/build}
pass=0 fail=0 skip=0 n=0
ok() {	# ok WHAT GOT: GOT must be VERSION's (or what WANT says)
	local what=$1 got=$2 want=${3:-$V}
	n=$((n + 1))
	if [ "$got" = "$want" ]; then
		echo "ok $n - $what: $got"
		pass=$((pass + 1))
	else
		echo "not ok $n - $what: '$got', want '$want'"
		fail=$((fail + 1))
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
	skip=$((skip + 1))
}

echo "TAP version 13"
V=$(cat VERSION 2> /dev/null)
n=$((n + 1))
if [[ "$V" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
	echo "ok $n - VERSION is MAJOR.MINOR.PATCH: $V"
	pass=$((pass + 1))
else
	echo "not ok $n - VERSION '$V' is not MAJOR.MINOR.PATCH"
	fail=$((fail + 1))
fi

ok "dkms.conf PACKAGE_VERSION" "$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' dkms.conf)"
ok "dqshim.h DQSHIM_VERSION_*" "$(awk '/^#define DQSHIM_VERSION_(MAJOR|MINOR|PATCH)[ \t]/ {
	v[$2] = $3 } END { print v["DQSHIM_VERSION_MAJOR"] "." v["DQSHIM_VERSION_MINOR"] "." \
	v["DQSHIM_VERSION_PATCH"] }' user/include/dqshim.h)"
so=libdqshim.so.$V
ok "library file $B/$so" "$([ -f "$B/$so" ] && echo built || echo missing)" built
# The soname's number is the ABI's (user/Makefile's SOMAJOR), not the
# release's major; the Debian library package is named after it.
SOMAJOR=$(sed -n 's/^SOMAJOR := \([0-9][0-9]*\)$/\1/p' user/Makefile)
ok "library soname (user/Makefile SOMAJOR)" "$(readelf -d "$B/$so" 2> /dev/null |
	sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')" "libdqshim.so.${SOMAJOR:-?}"
ok "debian/control's library package" "$(sed -n 's/^Package: \(libdqshim[0-9][0-9]*\)$/\1/p' debian/control)" \
	"libdqshim${SOMAJOR:-?}"
ok "dqshim.pc (pkg-config --modversion)" \
	"$(PKG_CONFIG_PATH=$B pkg-config --modversion dqshim 2> /dev/null)"
ok "dqctl --version" "$("$B/dqctl" --version 2> /dev/null | awk '{ print $2; exit }')"
if [ -x "$B/dqbridge" ]; then
	ok "dqbridge --version" "$("$B/dqbridge" --version 2> /dev/null | awk '{ print $2; exit }')"
else
	skip "dqbridge --version" "not built (its libraries are missing)"
fi
ok "dqrecover --version" "$("$B/dqrecover" --version 2> /dev/null | awk '{ print $2; exit }')"
# A dq.ko older than VERSION was built before the version changed: it
# says nothing about the current tree.
if [ -f dq.ko ] && [ dq.ko -nt VERSION ]; then
	ok "dq.ko modinfo version" "$(/sbin/modinfo -F version ./dq.ko 2> /dev/null)"
else
	skip "dq.ko modinfo version" "no dq.ko built since VERSION changed"
fi
ok "CHANGELOG.md newest entry" "$(sed -n 's/^## \[\{0,1\}\([0-9][0-9.]*\)\]\{0,1\}.*/\1/p' CHANGELOG.md 2> /dev/null |
	head -n 1)"
if [ -f debian/changelog ]; then
	ok "debian/changelog newest entry" "$(dpkg-parsechangelog -l debian/changelog -S Version 2> /dev/null |
		sed 's/-[^-]*$//')"
else
	skip "debian/changelog newest entry" "no debian/ in this tree"
fi
echo "1..$n"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
