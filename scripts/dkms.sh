#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dq.ko through DKMS.
#
# Usage: scripts/dkms.sh install [KVER]  copy the module source (Kbuild,
#                                        VERSION, dkms.conf, kmod/, uapi/) to
#                                        /usr/src/dq-<version>, then dkms
#                                        add, build and install it for KVER
#                                        (default: the running kernel)
#        scripts/dkms.sh remove          dkms remove every build, drop the
#                                        copy in /usr/src
#        scripts/dkms.sh test KVER       build with dkms in private trees
#                                        under a temporary directory
#                                        (nothing on the host changes) and
#                                        check that dq.ko is for KVER
#        scripts/dkms.sh source DIR      copy the module source into DIR
#                                        only (the dq-dkms package's
#                                        /usr/src/dq-<version>, debian/rules)
#
# The version is dkms.conf's PACKAGE_VERSION.  Needs the dkms package and
# KVER's headers: /lib/modules/KVER/build, or for `test` DQ_DKMS_KDIR (what
# scripts/lab-kernel.sh dkms-test NAME passes: the lab kernel's headers in
# its cache, with the toolchain they need).

set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(readlink -f "$(dirname "$SELF")/..")
VERSION=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$REPO/dkms.conf")

die() {
	echo "dkms.sh: $*" >&2
	exit 1
}

[ -n "$VERSION" ] || die "no PACKAGE_VERSION in $REPO/dkms.conf"
[ "$VERSION" = "$(cat "$REPO/VERSION")" ] ||
	die "dkms.conf's PACKAGE_VERSION $VERSION is not VERSION's $(cat "$REPO/VERSION")"
[ "${1:-}" = source ] || command -v dkms > /dev/null ||
	die "dkms missing: apt-get install dkms"

# The module's sources only: no objects from an in-tree build, no tests.
copy_source() {
	local dest=$1 f
	mkdir -p "$dest"
	cp "$REPO/Kbuild" "$REPO/VERSION" "$REPO/dkms.conf" "$dest/"
	(cd "$REPO" && find kmod uapi -maxdepth 2 -type f -name '*.[ch]' \
		! -path 'kmod/tests/*') | while IFS= read -r f; do
		mkdir -p "$dest/$(dirname "$f")"
		cp "$REPO/$f" "$dest/$f"
	done
}

need_headers() {
	if [ -n "${DQ_DKMS_KDIR:-}" ]; then
		[ -f "$DQ_DKMS_KDIR/Makefile" ] || die "DQ_DKMS_KDIR=$DQ_DKMS_KDIR has no Makefile"
		return 0
	fi
	[ -d "/lib/modules/$1/build" ] ||
		die "no headers for $1 (apt-get install linux-headers-$1)"
}

case "${1:-}" in
install)
	KVER=${2:-$(uname -r)}
	need_headers "$KVER"
	SRC=/usr/src/dq-$VERSION
	if dkms status -m dq -v "$VERSION" | grep -q .; then
		dkms remove -m dq -v "$VERSION" --all
	fi
	rm -rf "$SRC"
	copy_source "$SRC"
	dkms add -m dq -v "$VERSION"
	dkms build -m dq -v "$VERSION" -k "$KVER"
	dkms install -m dq -v "$VERSION" -k "$KVER"
	echo "dq $VERSION installed for $KVER: modprobe dq"
	;;
remove)
	if dkms status -m dq -v "$VERSION" | grep -q .; then
		dkms remove -m dq -v "$VERSION" --all
	fi
	rm -rf "/usr/src/dq-$VERSION"
	;;
source)
	copy_source "${2:?usage: scripts/dkms.sh source DIR}"
	;;
test)
	KVER=${2:?usage: scripts/dkms.sh test KVER}
	need_headers "$KVER"
	T=$(mktemp -d "${TMPDIR:-/tmp}/dq-dkms.XXXXXX")
	trap 'rm -rf "$T"' EXIT
	copy_source "$T/src/dq-$VERSION"
	mkdir -p "$T/tree" "$T/install"
	DKMS=(dkms --sourcetree "$T/src" --dkmstree "$T/tree" --installtree "$T/install")
	[ -n "${DQ_DKMS_KDIR:-}" ] && DKMS+=(--kernelsourcedir "$DQ_DKMS_KDIR")
	"${DKMS[@]}" add -m dq -v "$VERSION" > "$T/log" 2>&1 &&
		"${DKMS[@]}" build -m dq -v "$VERSION" -k "$KVER" >> "$T/log" 2>&1 ||
		{ cat "$T/log" >&2; [ -f "$T/tree/dq/$VERSION/build/make.log" ] &&
			tail -n 30 "$T/tree/dq/$VERSION/build/make.log" >&2; die "dkms build failed"; }
	KO=$(find "$T/tree/dq/$VERSION/$KVER" -name 'dq.ko*' | head -n 1)
	[ -n "$KO" ] || die "dkms built no dq.ko"
	GOT=$(modinfo -F vermagic "$KO" | cut -d' ' -f1)
	[ "$GOT" = "$KVER" ] || die "dq.ko vermagic '$GOT', want '$KVER'"
	GOT=$(modinfo -F version "$KO")
	[ "$GOT" = "$VERSION" ] ||
		die "dq.ko MODULE_VERSION '$GOT', dkms.conf says '$VERSION'"
	echo "dkms: dq $VERSION built for $KVER ($(basename "$KO"))"
	;;
*)
	sed -n '/^# Usage:/,/^# The version/p' "$SELF" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
