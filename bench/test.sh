#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# bench/test.sh - does the benchmark harness catch what it must?  (make -C
# bench test; about 30 s, natively, no server, no dq.ko.)
#
# 1. The harness (bench/common/bench.c) against peer-check, a small heap
#    delay queue whose knobs break it on purpose (bench/peers/check.c): it
#    must flag an early release, a lost message and a message released
#    twice by two threads as violations (exit 4),
#    see a late one in its lateness, cut off a system that cannot take the
#    offered rate (cannot_offer, not a failure), count the release-capacity
#    workload right, and measure a known per-message memory cost exactly,
#    with the harness's own arrays out of the figure.
# 2. bench/report.sh against a synthetic results CSV whose figures the test
#    chose: medians with min-max over the repetitions, the equal-lateness
#    rule (a system that missed the target is "missed", never a ratio, never
#    the worst ratio), the goals' verdicts, a violation in any repetition
#    failing the report; then one figure of the CSV is changed and the
#    verdict must follow it (the verdicts come from the CSV).
# 3. bench/report.sh against synthetic bench/held_scale.sh results: the
#    12 M goal (met, missed, a failed run, missing sizes, a host too small
#    for 12 M) and bytes per held message from held_scale where the scale
#    run has no such size; held_scale.sh --plan sizing the VM from a given
#    /proc/meminfo.
# 4. bench/run.sh --check-systems: every system has a definition in both
#    modes (a definition that returned false once made run.sh skip dq-user
#    in the VM as an "unknown system", silently).
#
# Exit status: 0 when every check passed, 1 otherwise.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BIN=${DQ_BENCH_BIN:-$HERE/build}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/dq-bench-test.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT
FAILS=0
NT=0

ok() { NT=$((NT + 1)); echo "ok $NT - $1"; }
not_ok() { NT=$((NT + 1)); FAILS=$((FAILS + 1)); echo "not ok $NT - $1"; }
check() { # description, then a command that must succeed
	local d=$1
	shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}
# field NAME of the last JSON line of FILE
field() {
	tail -n 1 "$2" | grep -o "\"$1\":[^,}]*" | head -n 1 | sed 's/^[^:]*://; s/^"//; s/"$//'
}
num_in() { # value lo hi
	awk -v x="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(x != "" && x != "null" && x + 0 >= lo && x + 0 <= hi) }'
}

[ -x "$BIN/peer-check" ] || { echo "bench/test.sh: build bench/ first (make -C bench)" >&2; exit 1; }

# ------------------------------------------------------------------ 1. harness
run() { # json, peer args...: the exit status in RC
	local j=$1
	shift
	"$BIN/peer-check" --json "$j" "$@" 2> "$TMP/stderr"
	RC=$?
}
LAT=(--workload lateness --rate 5000 --duration 1 --dmin-ms 0 --dmax-ms 50 --grace-s 2)

run "$TMP/ok.json" "${LAT[@]}"
check "a correct system passes (exit 0, no early, lost or dup)" \
	test "$RC:$(field early "$TMP/ok.json"):$(field lost "$TMP/ok.json"):$(field dup "$TMP/ok.json")" = "0:0:0:0"

run "$TMP/early.json" "${LAT[@]}" --opt early-us=300
check "an early release is a violation (exit 4, early counted)" \
	test "$RC" = 4 -a "$(field early "$TMP/early.json")" -gt 0
check "... and its verdict says so" grep -q '"verdict":"violation: early' "$TMP/early.json"

run "$TMP/lost.json" "${LAT[@]}" --opt lose-every=100
check "a lost message is a violation (exit 4, 50 of 5000 lost)" \
	test "$RC:$(field lost "$TMP/lost.json")" = "4:50"

# Consumer threads keep their own tallies: a message released a second time
# by another thread (peer-check hands a copy of every 100th to a helper
# thread) must still be a duplicate, counted from the helper's tally.
run "$TMP/dup.json" "${LAT[@]}" --opt dup-every=100
check "a release repeated by another thread is a violation (exit 4, 50 dups, nothing lost)" \
	test "$RC:$(field dup "$TMP/dup.json"):$(field lost "$TMP/dup.json"):$(field delivered "$TMP/dup.json")" = "4:50:0:5000"
check "... and its verdict says so" grep -q '"verdict":"violation: dup 50"' "$TMP/dup.json"

run "$TMP/late.json" "${LAT[@]}" --opt late-us=5000
check "a late system is not a violation but its lateness shows it (p50 >= 5 ms)" \
	eval 'test "$RC" = 0 && num_in "$(field late_p50_us "$TMP/late.json")" 5000 1e9'

run "$TMP/slow.json" --workload lateness --rate 200000 --duration 2 --dmin-ms 0 --dmax-ms 10 \
	--max-lag-ms 200 --opt spin-ns=20000
check "a system that cannot take the offered rate is cut off: cannot_offer, not a failure" \
	test "$RC:$(field cannot_offer "$TMP/slow.json"):$(field ok "$TMP/slow.json")" = "0:1:true"
check "... and only what it took is measured (sent < offered)" \
	test "$(field sent "$TMP/slow.json")" -lt 400000

# The counting, not this host's speed: a window of 1 s (make bench's is
# 50 ms), 6x the longest stall of a loaded host seen here (152 ms).  With
# 50 ms a correct peer failed it once in a cold make check (2026-12-06,
# beside the lab self-test's VMs and the host lane's builds).
run "$TMP/cap.json" --workload capacity --n 20000 --lead-s 1 --grace-s 3 --ontime-ms 1000
echo "# capacity: exit $RC, on time $(field cap_ontime "$TMP/cap.json") of sent $(field sent "$TMP/cap.json"), last out $(field cap_last_out_ms "$TMP/cap.json") ms after the second, fill overrun $(field fill_overrun "$TMP/cap.json")"
check "release capacity: 20000 due in one second, all within the window" \
	test "$RC:$(field cap_ontime "$TMP/cap.json"):$(field sent "$TMP/cap.json")" = "0:20000:20000"
run "$TMP/caplate.json" --workload capacity --n 20000 --lead-s 1 --grace-s 3 --ontime-ms 1000 --opt late-us=1200000
check "release capacity: 1.2 s late is not on time (0 within 1 s; last out > 1 s after the second)" \
	eval 'test "$(field cap_ontime "$TMP/caplate.json")" = 0 && num_in "$(field cap_last_out_ms "$TMP/caplate.json")" 1000 1e9'

# Memory: peer-check keeps 16 B (heap entry) + 4 B (free list) per slot
# beyond the payload, so its figure must be 20 B; extra-bytes=64 adds
# exactly 64 B, populated lazily.  The harness's own record (8 B per id)
# would show up as ~28 B if it were touched inside the window.
PEND=(--workload pending --n 200000 --probe 1000 --idle-s 0 --far-s 30 --grace-s 5)
run "$TMP/mem.json" "${PEND[@]}"
check "bytes/msg of a 20 B/msg system reads 20 +- 1.5 (harness arrays excluded): $(field mem_bytes_per_msg "$TMP/mem.json")" \
	num_in "$(field mem_bytes_per_msg "$TMP/mem.json")" 18.5 21.5
check "... the harness's own records were populated before the baseline (harness_bytes >= 8 B x ids)" \
	num_in "$(field harness_bytes "$TMP/mem.json")" $((201000 * 8)) 1e12
run "$TMP/mem64.json" "${PEND[@]}" --opt extra-bytes=64
check "a lazily populated 64 B per message is counted: 84 +- 1.5 ($(field mem_bytes_per_msg "$TMP/mem64.json"))" \
	num_in "$(field mem_bytes_per_msg "$TMP/mem64.json")" 82.5 85.5

# ------------------------------------------------------------------ 2. report
# A synthetic host result: three repetitions per run, figures chosen here.
R=$TMP/results/host
mkdir -p "$R" "$TMP/docs/records/bench"
printf '{"env":"host","date":"2026-12-03T00:00:00Z","host":"test","kernel":"k","cpu":"c","ncpu":2,"mem_mb":1,"quick":0,"kind":"full","overrides":"","n":1000,"rate":"10000 100000","lat_s":1,"scale_ns":"1000000","probe":10,"repeat":3,"long_s":120,"long_rate":10000,"cap_n":500000,"lead_s":8,"idle_n":1000,"idle_s":1,"payload":500,"caps":"","redis":"","beanstalkd":"","git":"test"}\n' > "$R/env.json"
line() { # label workload rep rate p99_us cpu_us [extra json]
	printf '{"system":"x","label":"%s","workload":"%s","env":"host","stress":0,"rep":%s,"n":%s,"rate":%s,"duration_s":1,"payload":500,"dmin_ms":0,"dmax_ms":1000,"sent":%s,"delivered":%s,"early":0,"lost":0,"dup":0,"corrupt":0,"errors":0,"overdue":0,"late_p50_us":10,"late_p99_us":%s,"late_max_us":%s,"cpu_us_per_msg":%s,"offered_rate":%s,"cannot_offer":0,%s"violation":false,"verdict":"ok","ok":true,"error":null,"notes":""}\n' \
		"$1" "$2" "$3" "$4" "$4" "$4" "$4" "$5" "$5" "$6" "$4" "${7:-}"
}
{
	# dq-user at 100k: p99 500, 900, 5000 µs -> median 900 (met); CPU 0.4
	line dq-user lateness 1 100000 500 0.3
	line dq-user lateness 2 100000 900 0.4
	line dq-user lateness 3 100000 5000 0.5
	# uring-timeout at 100k: met, CPU 1.0 -> ratio 0.4 (goal: <= 0.5)
	for k in 1 2 3; do line uring-timeout lateness "$k" 100000 800 1.0; done
	# fifo-sleep: far cheaper, but p99 900 ms: missed, never a ratio
	for k in 1 2 3; do line fifo-sleep lateness "$k" 100000 900000 0.1; done
	# dq-user at 10k: met; fifo-sleep at 10k: missed
	for k in 1 2 3; do line dq-user lateness "$k" 10000 300 2.0; line fifo-sleep lateness "$k" 10000 800000 0.2; done
	# capacity: 500k of 500k on time in every repetition
	for k in 1 2 3; do printf '{"system":"dq","label":"dq-user","workload":"capacity","env":"host","stress":0,"rep":%s,"n":500000,"sent":500000,"delivered":500000,"early":0,"lost":0,"dup":0,"corrupt":0,"errors":0,"overdue":0,"cap_ontime":500000,"cap_in_second":499990,"cap_last_out_ms":0.1,"late_p99_us":900,"violation":false,"verdict":"ok","ok":true}\n' "$k"; done
} > "$R/results.jsonl"
REP=(--results "$TMP/results" --docs "$TMP/docs")
"$HERE/report.sh" "${REP[@]}" > "$TMP/report.out" 2>&1
RC=$?
MD=$TMP/docs/benchmarks.md
check "report.sh passes a CSV without violations (exit 0)" test "$RC" = 0
check "the CSV keeps every repetition (18 rows + header)" test "$(wc -l < "$TMP/docs/records/bench/results.csv")" = 19
check "lateness is the median with min-max: 900 µs (500 µs–5.0 ms)" grep -qF '900 µs (500 µs–5.0 ms)' "$MD"
check "the CPU goal is met from the CSV's figures (0.40 vs 1.00: 0.40×)" \
	grep -qE '^\| Natively at 100k.*0\.40×.*\| \*\*met\*\* \|$' "$MD"
check "release capacity: 500000 of 500000 within 50 ms: met" \
	grep -qE '^\| Release capacity natively.*500000 of 500000.*\| \*\*met\*\* \|$' "$MD"
check "a system that missed the target is shown as missed, not as a ratio" \
	grep -qE '^\| fifo-sleep \| missed \(p99 800\.0 ms\) \| missed \(p99 900\.0 ms\) \|' "$MD"
check "... and supplies no worst ratio (the worst is against uring-timeout)" \
	grep -qE 'Worst ratio for dq .*: \*\*2\.50×, CPU per message against uring-timeout' "$MD"
check "report.sh --check agrees with what it wrote" "$HERE/report.sh" --check --docs "$TMP/docs"

# The Go package's goal (issue 37) from a synthetic docs/records/bench/go.txt
# (bindings/go/gobench/run.sh's goal-figures line): met at 1.80 us and p99
# 900 us; missed by the CPU at 2.40 us; without the file, not measured.
GOTXT=$TMP/docs/records/bench/go.txt
check "without go.txt the Go goal is not measured" \
	grep -qE '^\| Natively at 100k.*dq-go .*\| – \| not measured' "$MD"
gofig() { # cpu_net_us p99_us
	printf '# Go designs against dq-go, 2026-12-06 10:00 UTC, commit test, machine t, load 0.1\n' > "$GOTXT"
	printf 'goal-figures: cpu_net_us=%s cpu_min=1.50 cpu_max=2.50 p99_us=%s p99_min=700 p99_max=1200 reps=3 gran_us=500 load=0.1\n' "$1" "$2" >> "$GOTXT"
	"$HERE/report.sh" --from-csv "${REP[@]}" > /dev/null 2>&1
}
gofig 1.80 900
check "the Go goal is met at 1.80 us/msg net, p99 900 us (median of 3)" \
	grep -qE '^\| Natively at 100k.*dq-go .*\| 1\.80 \(1\.50–2\.50\) µs/msg, p99 900 µs .*median of 3.*\| \*\*met\*\* \|$' "$MD"
gofig 2.40 900
check "... and missed by the CPU at 2.40 us/msg" \
	grep -qE '^\| Natively at 100k.*dq-go .*\| \*\*missed\*\* by CPU 2\.40 µs > 2 µs \|$' "$MD"
gofig 1.80 1500
check "... and missed by the p99 at 1.5 ms" \
	grep -qE '^\| Natively at 100k.*dq-go .*\| \*\*missed\*\* by p99 1\.5 ms > 1 ms \|$' "$MD"
rm -f "$GOTXT"
"$HERE/report.sh" --from-csv "${REP[@]}" > /dev/null 2>&1

# Bite: the verdict follows the CSV.  Raise dq-user's 100k p99 in two
# repetitions: the median misses the 1 ms target, the goal must say so,
# and --check must see the documents are stale.
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
	$c["label"] == "dq-user" && $c["rate"] == 100000 && $c["rep"] != 1 { $c["late_p99_us"] = 2500 } { print }' \
	"$TMP/docs/records/bench/results.csv" > "$TMP/csv" && cp "$TMP/csv" "$TMP/docs/records/bench/results.csv"
check "--check sees documents that are not what the changed CSV gives" \
	eval '! "$HERE/report.sh" --check --docs "$TMP/docs" > /dev/null 2>&1'
"$HERE/report.sh" --from-csv "${REP[@]}" > /dev/null 2>&1
check "with the median p99 at 2.5 ms the CPU goal is missed, by the p99" \
	grep -qE '^\| Natively at 100k.*\| \*\*missed\*\* by p99 2\.5 ms > 1 ms \|$' "$MD"
check "... and dq-user is no longer compared at 100k (no ratio for a missed target)" \
	grep -qE '^\| uring-timeout \| not run \| dq missed \(p99 2\.5 ms\)' "$MD"

# A violation in one repetition fails the report, whatever the medians.
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
	$c["label"] == "uring-timeout" && $c["rep"] == 2 { $c["early"] = 1; $c["violation"] = "true"; $c["verdict"] = "violation: early 1" } { print }' \
	"$TMP/docs/records/bench/results.csv" > "$TMP/csv" && cp "$TMP/csv" "$TMP/docs/records/bench/results.csv"
"$HERE/report.sh" --from-csv "${REP[@]}" > "$TMP/report.out" 2>&1
RC=$?
check "one early release in one repetition fails report.sh (exit 1)" test "$RC" = 1
check "... and the Correctness section lists it" grep -q '^| uring-timeout | lateness | 100k | 0 | violation: early 1 |' "$MD"

# The VM's two goals against cyclictest in the same boot: dq-uring (one
# thread) and dq-uring-2t (a consumer thread parked in WAIT), each p99 <=
# 1.2x cyclictest's p99, medians of the repetitions.
RV=$TMP/results-vm
mkdir -p "$RV/vm" "$TMP/docs-vm/records/bench"
sed 's/"env":"host"/"env":"vm"/; s/"rate":"10000 100000"/"rate":"1000"/' "$R/env.json" > "$RV/vm/env.json"
{
	# cyclictest: p99 2 ms; dq-uring 1 ms (0.50x, met); dq-uring-2t
	# 3, 5, 6 ms -> median 5 ms: 2.50x, missed by 2.08x
	for k in 1 2 3; do
		printf '{"system":"cyclictest","label":"cyclictest-other","workload":"lateness","env":"vm","stress":0,"rep":%s,"n":5000,"duration_s":5,"sent":"n/a","delivered":"n/a","early":"n/a","lost":"n/a","dup":"n/a","corrupt":"n/a","violation":false,"verdict":"ok (no messages: n = wake-up samples)","late_p50_us":100,"late_p99_us":2000,"late_max_us":3000,"ok":true}\n' "$k"
		line dq-uring lateness "$k" 1000 1000 1.0
	done
	line dq-uring-2t lateness 1 1000 3000 1.0
	line dq-uring-2t lateness 2 1000 5000 1.0
	line dq-uring-2t lateness 3 1000 6000 1.0
	# whole-VM CPU: uring-timeout 100 us (met, the best peer); redis-10ms
	# 50 us but p99 20 ms (missed: no peer); dq-uring-budget 150 us at p99
	# 4 ms: 1.50x, missed by 3.00x
	for k in 1 2 3; do
		line uring-timeout lateness "$k" 1000 1500 1.0 '"cpu_sys_us_per_msg":100,'
		line redis-10ms lateness "$k" 1000 20000 1.0 '"cpu_sys_us_per_msg":50,'
		line dq-uring-budget lateness "$k" 1000 4000 1.0 '"cpu_sys_us_per_msg":150,'
	done
} | sed 's/"env":"host"/"env":"vm"/' > "$RV/vm/results.jsonl"
"$HERE/report.sh" --results "$RV" --docs "$TMP/docs-vm" > "$TMP/report-vm.out" 2>&1
MDV=$TMP/docs-vm/benchmarks.md
check "VM: dq-uring 1.0 ms vs cyclictest 2.0 ms: 0.50x, met" \
	grep -qE '^\| In the VM: dq-uring p99 lateness ≤ 1\.2× .*\| dq-uring 1\.0 ms at 1\.0 k msg/s, cyclictest 2\.0 ms: 0\.50× \| \*\*met\*\* \|$' "$MDV"
check "VM: dq-uring-2t's median 5.0 ms vs 2.0 ms: 2.50x, missed by 2.08x" \
	grep -qE '^\| In the VM, two threads .*\| dq-uring-2t 5\.0 ms at 1\.0 k msg/s, cyclictest 2\.0 ms: 2\.50× \| \*\*missed\*\* by 2\.08× \|$' "$MDV"
check "VM at the budget: dq-uring-budget 150 us vs uring-timeout 100 us: 1.50x, missed by 3.00x" \
	grep -qE '^\| In the VM at an equal p99 lateness budget .*\| dq-uring-budget 150(\.0+)? µs \(p99 4\.0 ms\) vs uring-timeout 100(\.0+)? µs at 1\.0 k msg/s \(whole-VM CPU\): 1\.50× \| \*\*missed\*\* by 3\.00× \|$' "$MDV"

# ------------------------------------------------------------------ 3. held
# bench/held_scale.sh's results (make bench: RESULTS/held-{vm,host}) fill
# the goals "<= 32 B per held message" (at a size the scale run lacks) and
# "12 M held, insert and release flat" (12 M <= 2x the 10k figure, for
# probe insert, release and release CPU).  Synthetic held rows, figures
# chosen here; report.sh copies them into DOCS/records/bench/held-{vm,host}/.
hline() { # env label n rep insert_ns release_ns release_cpu_us bytes [ok]
	printf '{"system":"dq","label":"%s","workload":"pending","env":"%s","n":%s,"rep":%s,"payload":500,"insert_ns_per_msg":%s,"release_ns_per_msg":%s,"release_cpu_us_per_msg":%s,"mem_bytes_per_msg":%s,"violation":false,"verdict":"%s","ok":%s}\n' \
		"$2" "$1" "$3" "$4" "$5" "$6" "$7" "$8" "$([ "${9:-true}" = true ] && echo ok || echo "failed: x")" "${9:-true}"
}
hmeta() { # dir mode [not_measured lines...]
	local d=$1 m=$2
	shift 2
	{
		printf 'mode=%s\ndate=2026-12-04T00:00:00Z\ngit=abc1234\nhost=testhost\ncpu=c\nncpu=2\nhost_mem_mb=24000\nkernel=k\nsizes=10000 1000000 4000000 12000000\nrepeats=3\nexit=0\n' "$m"
		[ "$m" = vm ] && printf 'host_avail_mb=20000\nvm_mem_mb=16384\n'
		for x in "$@"; do echo "not_measured=$x"; done
	} > "$d/held.meta"
	echo "# bench/held_scale.sh --$m, 2026-12-04" > "$d/held.txt"
}
HV=$TMP/results/held-vm HH=$TMP/results/held-host
mkdir -p "$HV" "$HH"
# VM: 10k insert 1000, release 1000, release CPU 1.0 us; 12 M at 1.9x, 1.5x,
# 1.2x (met); bytes 20 B at 1 M (met), 40 B at 4 M (missed by 8 B)
{
	for k in 1 2 3; do
		hline vm dq-kernel 10000 "$k" 1000 1000 1.0 100
		hline vm dq-kernel 1000000 "$k" 1100 1100 1.1 20
		hline vm dq-kernel 4000000 "$k" 1200 1200 1.2 40
		hline vm dq-kernel 12000000 "$k" 1900 1500 1.2 30
	done
	# another label (DQ_HELD_LABEL): not the goal's, would move the medians
	for k in 1 2 3; do hline vm dq-kernel-other 12000000 "$k" 9000 9000 9.0 900; done
} > "$HV/held.jsonl"
hmeta "$HV" vm
for k in 1 2 3; do hline host dq-user 1000000 "$k" 100 100 0.1 $((60 + k)); done > "$HH/held.jsonl"
hmeta "$HH" host
rm -rf "$TMP/hd" && mkdir -p "$TMP/hd/records/bench"
HREP=(--results "$TMP/results" --docs "$TMP/hd")
HREPC=(--docs "$TMP/hd")	# --from-csv: the held files in DOCS
"$HERE/report.sh" "${HREP[@]}" > "$TMP/report.out" 2>&1
MD=$TMP/hd/benchmarks.md
G12='^\| 12 M × 500 B held in one VM sized for it'
check "held: report.sh copies RESULTS/held-vm to DOCS/records/bench/held-vm/ (held.jsonl, held.meta)" \
	cmp -s "$HV/held.meta" "$TMP/hd/records/bench/held-vm/held.meta"
check "held: 12 M at 1.90x / 1.50x / 1.20x of 10k is met, with the VM's size and the source" \
	grep -qE "$G12.*12M 1\.90× / 1\.50× / 1\.20×.*git abc1234.*VM 16 GiB.*\| \*\*met\*\* \|$" "$MD"
check "held: bytes at 1 M in the VM from held_scale (20 B, met), saying the source" \
	grep -qE '^\| ≤ 32 B per held message beyond the payload, dq-uring at 1M held \(memcg, in the VM\) \| 20\.0 B \(median of 3; bench/held_scale.sh --vm, docs/records/bench/held-vm/, 2026-12-04, git abc1234.*\| \*\*met\*\* \|$' "$MD"
check "held: bytes at 4 M in the VM, 40 B: missed by 8.0 B" \
	grep -qE '^\| ≤ 32 B per held message beyond the payload, dq-uring at 4M held .*\| 40\.0 B .*\| \*\*missed\*\* by 8\.0 B \(1\.2×\) \|$' "$MD"
check "held: bytes natively at 1 M from held-host: 62.0 (61.0–63.0) B, missed" \
	grep -qE '^\| ≤ 32 B per held message beyond the payload, dq-user at 1M held \(smaps, natively\) \| 62\.0 \(61\.0–63\.0\) B .*--host.*\| \*\*missed\*\* by 30\.0 B' "$MD"
check "held: no figure natively at 4 M: not measured, saying held_scale has none" \
	grep -qE '^\| ≤ 32 B per held message beyond the payload, dq-user at 4M held .*\| – \| not measured \(.*held_scale \(bench/held_scale.sh --host.*has no reading at that size\) \|$' "$MD"
check "held: --check agrees with what it wrote (the held files are read from DOCS)" \
	"$HERE/report.sh" --check --docs "$TMP/hd"
# --from-csv takes held results given --results, and only then
mkdir -p "$TMP/r2/held-host"
cp "$HH/held.jsonl" "$HH/held.txt" "$TMP/r2/held-host/"
sed 's/^git=.*/git=def5678/' "$HH/held.meta" > "$TMP/r2/held-host/held.meta"
cp -r "$TMP/hd" "$TMP/hd2"
"$HERE/report.sh" --from-csv --docs "$TMP/hd2" > /dev/null 2>&1
check "held: --from-csv without --results keeps DOCS' held results" grep -qx 'git=abc1234' "$TMP/hd2/records/bench/held-host/held.meta"
"$HERE/report.sh" --from-csv --results "$TMP/r2" --docs "$TMP/hd2" > /dev/null 2>&1
check "held: --from-csv --results DIR takes DIR/held-host (git def5678 cited)" \
	eval 'grep -qx "git=def5678" "$TMP/hd2/records/bench/held-host/held.meta" && grep -qE "dq-user at 1M held .*git def5678" "$TMP/hd2/benchmarks.md"'
# missed: release at 12 M 2.5x the 10k figure, in two of three runs (the median)
sed -i -E '/"n":12000000,"rep":[23],/s/"release_ns_per_msg":1500/"release_ns_per_msg":2500/' "$TMP/hd/records/bench/held-vm/held.jsonl"
check "held: --check sees documents that are not what the changed held results give" \
	eval '! "$HERE/report.sh" --check --docs "$TMP/hd" > /dev/null 2>&1'
"$HERE/report.sh" --from-csv "${HREPC[@]}" > /dev/null 2>&1
check "held: release at 12 M at 2.50x of 10k: missed, by that" \
	grep -qE "$G12.*\| \*\*missed\*\* by release at 12 M is 2\.50× the 10k figure \(goal ≤ 2×\) \|$" "$MD"
# a failed 12 M run counts against the goal
sed -i -E '/"n":12000000,"rep":1,/s/"ok":true/"ok":false/' "$TMP/hd/records/bench/held-vm/held.jsonl"
"$HERE/report.sh" --from-csv "${HREPC[@]}" > /dev/null 2>&1
check "held: one 12 M run of three failed: missed, saying so" \
	grep -qE "$G12.*\| \*\*missed\*\* by 1 of 3 12 M runs failed; release at 12 M" "$MD"
# missing sizes: no 12 M run, no 10k baseline
grep -v '"n":12000000' "$TMP/hd/records/bench/held-vm/held.jsonl" > "$TMP/j" && cp "$TMP/j" "$TMP/hd/records/bench/held-vm/held.jsonl"
"$HERE/report.sh" --from-csv "${HREPC[@]}" > /dev/null 2>&1
check "held: 12 M asked, no run reported: not measured, saying so" \
	grep -qE "$G12.*\| – \| not measured: 12 M was asked but no run reported \(the VM exited 0" "$MD"
sed -i 's/^sizes=.*/sizes=10000 200000/' "$TMP/hd/records/bench/held-vm/held.meta"
"$HERE/report.sh" --from-csv "${HREPC[@]}" > /dev/null 2>&1
check "held: a quick run (10k, 200k): not measured, naming the sizes run" \
	grep -qE "$G12.*\| – \| not measured \(held_scale ran 10000 200000 held, not 12 M" "$MD"
hline vm dq-kernel 12000000 1 1000 1000 1.0 30 >> "$TMP/hd/records/bench/held-vm/held.jsonl"
grep -v '"n":10000,' "$TMP/hd/records/bench/held-vm/held.jsonl" > "$TMP/j" && cp "$TMP/j" "$TMP/hd/records/bench/held-vm/held.jsonl"
"$HERE/report.sh" --from-csv "${HREPC[@]}" > /dev/null 2>&1
check "held: no 10k run to compare with: not measured" \
	grep -qE "$G12.*\| – \| not measured \(no completed 10k run to compare with" "$MD"
# host too small: held_scale ran 10k and 1 M, and recorded why not 4 M and 12 M
grep -E '"n":(1000000),' "$TMP/hd/records/bench/held-vm/held.jsonl" > "$TMP/j" && cp "$TMP/j" "$TMP/hd/records/bench/held-vm/held.jsonl"
hmeta "$TMP/hd/records/bench/held-vm" vm "4000000:host has 6.7 GiB available (MemAvailable of 7.6 GiB), needs 7.0 GiB for the VM + 1.0 GiB" \
	"12000000:host has 6.7 GiB available (MemAvailable of 7.6 GiB), needs 16.0 GiB for the VM + 1.0 GiB"
"$HERE/report.sh" --from-csv "${HREPC[@]}" > /dev/null 2>&1
check "held: host too small for 12 M: not measured, saying what the host has and needs" \
	grep -qE "$G12.*\| – \| not measured: host has 6\.7 GiB available \(MemAvailable of 7\.6 GiB\), needs 16\.0 GiB for the VM \+ 1\.0 GiB" "$MD"
check "held: ... and 4 M bytes the same" \
	grep -qE '^\| ≤ 32 B per held message beyond the payload, dq-uring at 4M held .*not measured \(.*held_scale: host has 6\.7 GiB available .*needs 7\.0 GiB' "$MD"
check "held: ... and the held section lists both" \
	eval 'grep -q "^- not measured at 4000000 held: host has 6.7 GiB" "$MD" && grep -q "^- not measured at 12000000 held: host has 6.7 GiB" "$MD"'
# held_scale.sh's own plan: what a host of 7.6 GiB (6.7 available) can hold
printf 'MemTotal:        8000000 kB\nMemAvailable:    7000000 kB\n' > "$TMP/meminfo"
DQ_HELD_MEMINFO=$TMP/meminfo "$HERE/held_scale.sh" --plan > "$TMP/plan" 2>&1
check "held_scale --plan: a 7.6 GiB host runs 10k and 1 M in a 3 GiB VM, not 4 M or 12 M, and says why" \
	eval 'grep -qx "vm_mem_mb=3072" "$TMP/plan" && grep -qx "sizes=10000 1000000" "$TMP/plan" && grep -q "^not_measured=12000000:host has 6.7 GiB available (MemAvailable of 7.6 GiB), needs 16.0 GiB" "$TMP/plan"'
printf 'MemTotal:        24000000 kB\nMemAvailable:    22000000 kB\n' > "$TMP/meminfo"
DQ_HELD_MEMINFO=$TMP/meminfo "$HERE/held_scale.sh" --plan > "$TMP/plan" 2>&1
check "held_scale --plan: a 22 GiB host runs up to 12 M in a 16 GiB VM" \
	eval 'grep -qx "vm_mem_mb=16384" "$TMP/plan" && grep -qx "sizes=10000 1000000 4000000 12000000" "$TMP/plan" && ! grep -q not_measured "$TMP/plan"'
# held_scale --vm waits for the VM lock at most DQ_HELD_LOCK_WAIT s, then
# fails with the reason and records the failure (no VM boots)
: > "$TMP/vmlock"
flock "$TMP/vmlock" sleep 30 &
LOCKER=$!
# Held before held_scale asks, by construction, not after a fixed sleep: a
# host slow to start flock would leave the lock free, and held_scale would
# take it and boot a VM.  Polled for at most 10 s, then a failure that says so.
for _ in $(seq 200); do
	flock -n "$TMP/vmlock" true || break
	sleep 0.05
done
RC=none
if flock -n "$TMP/vmlock" true; then
	not_ok "held_scale --vm: the test's locker did not hold the VM lock within 10 s"
else
	DQ_HELD_LOCK=$TMP/vmlock DQ_HELD_LOCK_WAIT=1 DQ_HELD_VM_TIMEOUT=5 DQ_HELD_REPEATS=1 DQ_HELD_MEMINFO=$TMP/meminfo \
		timeout 120 "$HERE/held_scale.sh" --vm --out "$TMP/lockout" --sizes 10000 > "$TMP/lock.out" 2>&1
	RC=$?
fi
kill "$LOCKER" 2> /dev/null
wait "$LOCKER" 2> /dev/null
check "held_scale --vm: the VM lock held elsewhere: exit 1 after DQ_HELD_LOCK_WAIT, saying why, exit=1 in held.meta" \
	eval 'test "$RC" = 1 && grep -q "not free within 1 s" "$TMP/lock.out" && grep -qx "exit=1" "$TMP/lockout/held.meta"'

# ------------------------------------------------------------------ 4. systems
for mode in host vm; do
	check "run.sh --$mode --check-systems: every system is defined" \
		"$HERE/run.sh" "--$mode" --check-systems > "$TMP/systems-$mode.out" 2>&1
done
check "run.sh: dq-user has the 500 us granularity natively, the default in the VM" \
	eval 'grep -qx "host dq-user: peer-dq --opt backend=user --opt granularity-us=500" "$TMP/systems-host.out" &&
	      grep -qx "vm dq-user: peer-dq --opt backend=user" "$TMP/systems-vm.out"'
echo "1..$NT"
echo "$((NT - FAILS)) passed, $FAILS failed"
[ "$FAILS" = 0 ] || { echo "bench/test.sh: $FAILS of $NT checks failed" >&2; exit 1; }

echo "bench/test.sh: all $NT checks passed"
