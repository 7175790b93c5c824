#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The product's quick checks (make test, make check: suite "product",
# ~3 s on a built tree): one version everywhere (version-check.sh), a
# licence line in every file (spdx-check.sh), no dangling link in the
# markdown (link-check.py), man pages that render and are true
# (man-check.sh), the README's example built and run (example-test.sh).
# Each prints its own "N passed, N failed" line (scripts/check.sh sums
# them); the exit status is non-zero when one failed.
#
# Usage: scripts/product-check.sh   (after `make user`)
cd "$(dirname "$0")/.." || exit 1
rc=0
for t in scripts/version-check.sh scripts/spdx-check.sh scripts/link-check.py \
	scripts/man-check.sh scripts/example-test.sh; do
	echo "# ---- $t"
	"$t" || rc=1
done
exit $rc
