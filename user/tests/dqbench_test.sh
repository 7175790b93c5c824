#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbench as a test: a few workloads on the user backend must come back
# with nothing early, lost, duplicated or corrupt (dqbench's exit status).
# Usage: dqbench_test.sh [path/to/dqbench]
BENCH=${1:-$(dirname "$0")/../build/dqbench}
pass=0
fail=0
n=0

run() {
	name=$1
	shift
	n=$((n + 1))
	if out=$("$BENCH" "$@" 2>&1); then
		echo "$out" | sed 's/^/# /'
		echo "ok $n - $name"
		pass=$((pass + 1))
	else
		echo "$out" | sed 's/^/# /'
		echo "not ok $n - $name"
		fail=$((fail + 1))
	fi
}

echo "TAP version 13"
echo "1..4"
run "200k uniform 0-500ms" --backend user --count 200000 --delay uniform:0-500ms
run "backpressure: 4 producers, 2000 slots" --backend user --count 40000 \
	--producers 4 --slots 2000 --delay exp:20ms --payload 200 --batch 16
run "fixed delay, 1 KiB payload, batch 1" --backend user --count 5000 \
	--delay fixed:50ms --payload 1024 --batch 1
n=$((n + 1))
json=$("$BENCH" --backend user --count 1000 --delay uniform:0-20ms --json 2>&1)
case "$json" in
\{*\"backend\":\"user\"*\"ok\":true\}) echo "ok $n - json output"; pass=$((pass + 1)) ;;
*) echo "# $json"; echo "not ok $n - json output"; fail=$((fail + 1)) ;;
esac
echo "$pass passed, $fail failed, 0 skipped"
[ "$fail" -eq 0 ]
