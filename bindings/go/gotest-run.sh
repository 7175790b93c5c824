#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# gotest-run.sh TEST_BINARY [ARGS...]: run a `go test -c` binary with -v
# and end with scripts/check.sh's result line, "N passed, N failed, N
# skipped", counting the leaf tests (a test with subtests counts through
# them).  A binary that dies without its own verdict (a panic, a signal,
# a VM timeout) is one more failure.  Runs on the host and in the VM.
set -u -o pipefail
bin=$1
shift
here=$(cd "$(dirname "$0")" && pwd)
export DQCTL=${DQCTL:-$here/../../user/build/dqctl}
DQ_LIB_VERSION=$(cat "$here/../../VERSION")
export DQ_LIB_VERSION
log=$(mktemp /tmp/gotest-run.XXXXXX)
trap 'rm -f "$log"' EXIT
# In the package directory: tests may read files next to their sources.
"$bin" -test.v -test.count=1 -test.timeout 280s "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
awk -v rc="$rc" '
	/^ *--- (PASS|FAIL|SKIP): / {
		name = $3; st[name] = $2; order[++n] = name
	}
	END {
		for (i = 1; i <= n; i++) {
			name = order[i]; leaf = 1
			for (j = 1; j <= n; j++)
				if (index(order[j], name "/") == 1) { leaf = 0; break }
			if (!leaf) continue
			if (st[name] == "PASS:") p++
			else if (st[name] == "FAIL:") f++
			else k++
		}
		if (rc != 0 && f == 0) f = 1
		printf "%d passed, %d failed, %d skipped\n", p, f, k
	}' "$log"
exit "$rc"
