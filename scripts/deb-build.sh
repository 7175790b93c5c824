#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# make deb: dq's Debian packages (debian/), built with dpkg-buildpackage
# out of the work tree: the files git knows (committed or not, ignored
# ones never: no build output of the work tree gets in) are copied to
# build/deb/dq-VERSION/, built there, and the .debs land in build/deb/.
#
# Usage: scripts/deb-build.sh [OUTDIR]   (default build/deb)
# Needs debhelper and dh-dkms (scripts/deps.sh); no root.
set -euo pipefail

REPO=$(readlink -f "$(dirname "${BASH_SOURCE[0]}")/..")
OUT=$(realpath -m "${1:-$REPO/build/deb}")
V=$(cat "$REPO/VERSION")

die() {
	echo "deb-build: $*" >&2
	exit 1
}

cd "$REPO"
# debian/changelog carries the version dpkg uses: it must be VERSION's.
CV=$(dpkg-parsechangelog -S Version)
[ "$CV" = "$V" ] || die "debian/changelog is $CV, VERSION is $V: add a changelog entry"
command -v dh_dkms > /dev/null || die "dh-dkms missing: make deps"

SRC=$OUT/dq-$V
rm -rf "$SRC"
mkdir -p "$SRC"
rm -f "$OUT"/*.deb "$OUT"/*.buildinfo "$OUT"/*.changes
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	tar --null -T - -cf - | tar -xf - -C "$SRC"
cd "$SRC"
echo "deb-build: dpkg-buildpackage in $SRC" >&2
if ! dpkg-buildpackage -b -us -uc -j"${DEB_JOBS:-2}" > "$OUT/build.log" 2>&1; then
	tail -n 40 "$OUT/build.log" >&2
	die "dpkg-buildpackage failed; log: $OUT/build.log"
fi
rm -rf "$SRC"
ls "$OUT"/*.deb
