#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The product's quick checks (make test, make check: suite "product",
# a few seconds on a built tree): one version everywhere
# (version-check.sh).  Each prints its own "N passed, N failed" line
# (scripts/check.sh sums them); the exit status is non-zero when one
# failed.
#
# Usage: scripts/product-check.sh   (after `make user`)
cd "$(dirname "$0")/.." || exit 1
rc=0
for t in scripts/version-check.sh; do
	echo "# ---- $t"
	"$t" || rc=1
done
exit $rc
