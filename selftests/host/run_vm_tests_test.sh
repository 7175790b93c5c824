#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# run-vm-tests.sh, the VM's test runner, on programs of this test's own
# (shell scripts in a temporary build dir, no VM): two run at a time and
# a program named in its ALONE list has nothing beside it; a failed
# test, a plan cut short, a crash and a missing program each count as
# failures; the closing line adds up what the programs said; -j 1 runs
# them one after the other.  ~3 s.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
RUNNER=$here/run-vm-tests.sh
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; }
check() { if eval "$2"; then ok "$1"; else not_ok "$1"; fi; }

# prog NAME BODY: a TAP program that marks itself running in $dir/run
# (a file per running program) while BODY runs.
mkdir "$dir/run"
prog() {
	cat > "$dir/$1" <<PROG
#!/bin/bash
touch "$dir/run/$1"
trap 'rm -f "$dir/run/$1"' EXIT
echo 1..1
$2
PROG
	chmod +x "$dir/$1"
}
# Two pool programs that each wait (5 s at most, PAIR_TRIES tenths) for the other to be
# running: they pass only when run at the same time.
for me in dq_pa:dq_pb dq_pb:dq_pa; do
	prog "${me%%:*}" "for i in \$(seq \${PAIR_TRIES:-50}); do [ -e $dir/run/${me##*:} ] && break; sleep 0.1; done
if [ -e $dir/run/${me##*:} ]; then echo 'ok 1 - met'; echo '1 passed, 0 failed'
else echo 'not ok 1 - alone'; echo '0 passed, 1 failed'; exit 1; fi
[ ! -e $dir/run/dq_timing ] || echo 'BESIDE-ALONE'
sleep 0.3"
done
# dq_timing is in the runner's ALONE list: it fails when anything else
# runs beside it, at its start or 0.5 s in.
prog dq_timing "sleep 0.5
if [ \$(ls $dir/run | wc -l) -eq 1 ]; then echo 'ok 1 - alone'; echo '1 passed, 0 failed'
else echo 'not ok 1 - beside' \$(ls $dir/run); echo '0 passed, 1 failed'; exit 1; fi"
prog dq_skip "echo 'ok 1 - x # SKIP not here'; echo '0 passed, 0 failed, 1 skipped'"

out=$(DQ_TEST_BUILD=$dir DQ_TEST_JOBS=2 "$RUNNER" dq_pa dq_timing dq_pb dq_skip 2>&1)
rc=$?
check "two at a time: both pool programs met, exit 0" '[ $rc -eq 0 ] && [ $(grep -c "^ok 1 - met" <<< "$out") -eq 2 ]'
check "the ALONE program ran with nothing beside it" 'grep -q "^ok 1 - alone" <<< "$out" && ! grep -q BESIDE-ALONE <<< "$out"'
check "closing line: 3 passed, 0 failed, 1 skipped" '[ "$(tail -n 1 <<< "$out")" = "3 passed, 0 failed, 1 skipped" ]'
check "each program printed whole, with its time" '[ $(grep -c "^# ===== dq_p[ab] =====" <<< "$out") -eq 2 ] &&
	[ $(grep -c "^# dq_[a-z_]* took [0-9.]* s (the whole program)" <<< "$out") -eq 4 ]'

out=$(PAIR_TRIES=5 DQ_TEST_BUILD=$dir "$RUNNER" -j 1 dq_pa dq_pb 2>&1)
rc=$?
check "-j 1: one after the other (the pair cannot meet), exit 1" '[ $rc -ne 0 ] && [ $(grep -c "^not ok 1 - alone" <<< "$out") -eq 2 ] &&
	[ "$(tail -n 1 <<< "$out")" = "0 passed, 2 failed, 0 skipped" ]'

prog dq_fail "echo 'not ok 1 - planted'; echo '0 passed, 1 failed'; exit 1"
prog dq_short "echo 'ok 1 - one'; echo 1..3 >/dev/null; exit 0"
sed -i 's/^echo 1..1$/echo 1..3/' "$dir/dq_short"
prog dq_crash "echo 'ok 1 - one'; kill -SEGV \$\$"
out=$(DQ_TEST_BUILD=$dir DQ_TEST_JOBS=2 "$RUNNER" dq_fail dq_short dq_crash dq_missing dq_skip 2>&1)
rc=$?
check "a failed test, a plan 2 short, a crash, a missing program: 6 failed, exit 1" '[ $rc -eq 1 ] &&
	[ "$(tail -n 1 <<< "$out")" = "2 passed, 6 failed, 1 skipped" ]'
check "the short plan and the crash are named" 'grep -q "dq_short: broken run (.*1 results for a plan of 3" <<< "$out" &&
	grep -q "dq_crash: broken run (.*no closing line" <<< "$out" && grep -q "dq_missing: missing or not executable" <<< "$out"'
check "a bad -j is refused" '! "$RUNNER" -j 0 dq_pa > /dev/null 2>&1 && ! DQ_TEST_JOBS=x "$RUNNER" dq_pa > /dev/null 2>&1'

echo "1..$n"
echo "$((n - failed)) passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
