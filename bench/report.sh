#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
# shellcheck disable=SC2016 # the awk programs are single-quoted on purpose
#
# bench/report.sh - bench/run.sh's results -> docs/records/bench/results.csv;
# then docs/benchmarks.md and the PNG plots (in docs/records/bench/), every
# figure of them from that CSV.  README.md quotes no figures: it links to
# docs/benchmarks.md.
#
# Usage: bench/report.sh [--results DIR] [--docs DIR] [--from-csv | --check]
#   (default)   DIR/vm/ and DIR/host/ (either may be missing; each holds
#               results.jsonl, env.json and cdf/ as run.sh writes them) ->
#               DOCS/records/bench/results.csv, then everything else from the CSV;
#               DIR/held-vm/ and DIR/held-host/ (bench/held_scale.sh, when
#               there) -> DOCS/records/bench/held-vm/, DOCS/records/bench/held-host/.
#   --from-csv  keep DOCS/records/bench/results.csv; regenerate the markdown (and the
#               plots drawn from the CSV) from it; with --results, take DIR's
#               held_scale results (DIR/held-vm/, DIR/held-host/) first.
#   --check     write nothing: regenerate the markdown from the CSV into a
#               scratch directory and compare it with DOCS/benchmarks.md;
#               exit 1 when they differ (edited by hand, or not regenerated
#               after the CSV changed).
# Defaults: bench/results, docs.
#
# The CSV keeps every repetition of every run; the tables show medians over
# the repetitions with min-max (see "aggregation" below).  CPU and bytes per
# message are compared only between systems that met the lateness target
# (TARGET_HOST_US, TARGET_VM_US below); the goals of issue 18 are a table
# with a verdict each, drawn from the CSV (and docs/records/bench/wheel.txt).
# bench/test.sh checks these rules against a synthetic CSV.
#
# Exit status: 0; 1 when the CSV holds a correctness violation (an early,
# lost, duplicated or corrupt message, a consumer error) or a failed run --
# the documents are still written and say so -- or when --check differs;
# 2 on a usage error or no input.
#
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(dirname "$HERE")
RESULTS=$HERE/results
DOCS=$TOP/docs
MODE=full
RESULTS_GIVEN=0

while [ $# -gt 0 ]; do
	case "$1" in
	--results) RESULTS=$2; RESULTS_GIVEN=1; shift 2 ;;
	--docs) DOCS=$2; shift 2 ;;
	--from-csv) MODE=csv; shift ;;
	--check) MODE=check; shift ;;
	*)
		echo "usage: $0 [--results DIR] [--docs DIR] [--from-csv|--check]" >&2
		exit 2
		;;
	esac
done

# Run records: the CSV, held_scale's and the wheel's results, the plots.
REC=$DOCS/records/bench
CSV=$REC/results.csv
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dq-report.XXXXXX") || exit 2
trap 'rm -rf "$WORK"' EXIT

# the column order of results.csv: the run's fields, then the run's
# metadata (env.json), so that the CSV alone says when, where and how
COLS="env system label variant workload stress rep n probe_n rate duration_s payload
dmin_ms dmax_ms far_s grace_s sent delivered early lost dup corrupt errors
overdue violation verdict wall_s msgs_per_s submit_per_s send_lag_max_ms
cpu_us_per_msg cpu_sys_us_per_msg cpu_self_s cpu_server_s late_p50_us
late_p90_us late_p99_us late_p999_us late_max_us late_mean_us
fill_ns_per_msg fill_cpu_us_per_msg insert_ns_per_msg insert_cpu_us_per_msg
release_ns_per_msg release_cpu_us_per_msg mem_bytes_per_msg
mem_err_bytes_per_msg mem_method mem_rss_bytes_per_msg mem_memcg_bytes_per_msg
rss_self_delta rss_server_delta memcg_delta memcg_anon_delta memcg_file_delta
memcg_kernel_delta memcg_sock_delta idle_s idle_wakeups_per_s
idle_cpu_us_per_s idle_sys_cpu_us_per_s idle_extra_wakeups offered_rate
cannot_offer submit_ns_per_msg submit_cpu_us_per_msg lead_s fill_overrun
cap_ontime cap_in_second cap_last_out_ms ontime_ms harness_bytes ok error notes
run_kind run_overrides run_date run_git run_host run_cpu run_ncpu run_mem_mb
run_kernel run_redis run_beanstalkd run_n run_rate run_lat_s run_scale_ns
run_probe run_idle_n run_idle_s run_caps run_repeat run_long_s run_long_rate
run_cap_n run_lead_s run_load"
COLS=$(echo "$COLS" | tr -s ' \n' '  ' | sed 's/ $//')

# ------------------------------------------------------------------ CSV
# A flat-JSON reader in awk: every line is one object of strings, numbers,
# booleans and nulls (no nesting), as bench.c and run.sh write them.
JSON_AWK='
	function parse(line, J,   rest, k, v, i, c, n) {
		rest = line
		for (n = 0; n < 500 && match(rest, /"[A-Za-z0-9_]+":/); n++) {
			k = substr(rest, RSTART + 1, RLENGTH - 3)
			rest = substr(rest, RSTART + RLENGTH)
			if (substr(rest, 1, 1) == "\"") {
				v = ""
				for (i = 2; i <= length(rest); i++) {
					c = substr(rest, i, 1)
					if (c == "\\") { v = v substr(rest, i + 1, 1); i++; continue }
					if (c == "\"") break
					v = v c
				}
				rest = substr(rest, i + 1)
			} else {
				match(rest, /^[^,}]*/)
				v = substr(rest, 1, RLENGTH)
				rest = substr(rest, RLENGTH + 1)
				if (v == "null") v = ""
			}
			gsub(/,/, ";", v)
			J[k] = v
		}
	}'

if [ "$MODE" = full ]; then
	ENVS=()
	for e in vm host; do
		[ -s "$RESULTS/$e/results.jsonl" ] && ENVS+=("$e")
	done
	if [ ${#ENVS[@]} -eq 0 ]; then
		echo "report.sh: no results under $RESULTS/{vm,host}; run bench/run.sh first" >&2
		exit 2
	fi
	mkdir -p "$REC"
	{
		echo "$COLS" | tr ' ' ','
		for e in "${ENVS[@]}"; do
			awk -v cols="$COLS" -v envfile="$RESULTS/$e/env.json" "$JSON_AWK"'
				BEGIN {
					nc = split(cols, C, " ")
					if ((getline line < envfile) > 0) parse(line, E)
					# env.json of runs before "kind" existed
					if (!("kind" in E)) E["kind"] = (E["quick"] == 1 ? "quick" : "full")
				}
				/^\{/ {
					split("", J)
					parse($0, J)
					for (i = 1; i <= nc; i++) {
						k = C[i]
						x = (k ~ /^run_/) ? E[substr(k, 5)] : J[k]
						printf "%s%s", x, i < nc ? "," : "\n"
					}
				}' "$RESULTS/$e/results.jsonl"
		done
	} > "$WORK/results.csv" || exit 2
	mv "$WORK/results.csv" "$CSV"
fi
if [ ! -s "$CSV" ]; then
	echo "report.sh: no $CSV" >&2
	exit 2
fi
if [ "$(head -n 1 "$CSV")" != "$(echo "$COLS" | tr ' ' ',')" ]; then
	echo "report.sh: $CSV has other columns than this report.sh writes: regenerate it (make bench)" >&2
	exit 2
fi
ENVS=()
for e in vm host; do
	grep -q "^$e," "$CSV" && ENVS+=("$e")
done

# ------------------------------------------------------------------ aggregation
# The CSV keeps every repetition of every run (column rep).  The tables are
# drawn from AGG: one row per run configuration (env, label, workload,
# stress, n, rate, delays, probe) whose numeric columns are the median over
# the repetitions that completed (ok), with min_COL and max_COL beside the
# figures the tables show as "median (min–max)", reps = how many completed,
# runs = how many were made.  ok is true when at least one completed; the
# verdict is the worst of them (a violation, then a failure); correctness
# (the Correctness section, the exit status) is judged on every run of the
# CSV itself, not on the medians.
MMCOLS="msgs_per_s submit_per_s cpu_us_per_msg cpu_sys_us_per_msg submit_cpu_us_per_msg
release_cpu_us_per_msg late_p50_us late_p99_us late_p999_us late_max_us mem_bytes_per_msg
insert_ns_per_msg release_ns_per_msg idle_wakeups_per_s cap_ontime cap_in_second
cap_last_out_ms fill_ns_per_msg"
MMCOLS=$(echo "$MMCOLS" | tr -s ' \n' '  ' | sed 's/ $//')
AGG=$WORK/agg.csv
AGG_AWK='
function isnum(x) { return x ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ }
function median(key, c,   n, i, j, t, a) {
	n = 0
	for (i = 1; i <= NR_[key]; i++) { x = V[key, i, c]; if (isnum(x) && OKR[key, i]) a[++n] = x + 0 }
	if (!n) return ""
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	LO = a[1]; HI = a[n]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
BEGIN { FS = ","; OFS = ","; nm = split(mm, MM, " ") }
NR == 1 {
	nc = NF
	for (i = 1; i <= NF; i++) { H[i] = $i; idx[$i] = i }
	printf "%s", $0; for (k = 1; k <= nm; k++) printf ",min_%s,max_%s", MM[k], MM[k]; print ",reps,runs"
	next
}
{
	# cyclictest: n is the samples it took, not a size
	key = $idx["env"] SUBSEP $idx["label"] SUBSEP $idx["workload"] SUBSEP $idx["stress"] SUBSEP ($idx["system"] == "cyclictest" ? "" : $idx["n"]) SUBSEP $idx["rate"] SUBSEP $idx["dmin_ms"] SUBSEP $idx["dmax_ms"] SUBSEP $idx["probe_n"]
	if (!(key in NR_)) { order[++nk] = key; NR_[key] = 0 }
	j = ++NR_[key]
	for (i = 1; i <= NF; i++) V[key, j, i] = $i
	OKR[key, j] = ($idx["ok"] == "true")
}
END {
	for (q = 1; q <= nk; q++) {
		key = order[q]; n = NR_[key]; good = 0
		for (j = 1; j <= n; j++) good += OKR[key, j]
		# the first completed repetition (or the first) for the text columns
		b = 1; for (j = n; j >= 1; j--) if (OKR[key, j]) b = j
		for (i = 1; i <= nc; i++) {
			c = H[i]; x = V[key, b, i]
			if (c == "violation") { x = "false"; for (j = 1; j <= n; j++) if (V[key, j, i] == "true") x = "true" }
			else if (c == "verdict") {
				for (j = 1; j <= n; j++) if (V[key, j, idx["violation"]] == "true") { x = V[key, j, i]; break }
				if (x !~ /^violation/) for (j = 1; j <= n; j++) if (V[key, j, i] ~ /^failed/ || V[key, j, i] == "") { x = V[key, j, i]; break }
			}
			else if (c == "ok") x = good ? "true" : V[key, b, i]
			else if (c ~ /^(early|lost|dup|corrupt|errors|overdue)$/) { x = ""; for (j = 1; j <= n; j++) if (isnum(V[key, j, i])) x += V[key, j, i]; if (x == "" && V[key, b, i] == "n/a") x = "n/a" }
			else if (c == "cannot_offer") { x = ""; for (j = 1; j <= n; j++) if (V[key, j, i] == "1") x = 1; else if (x == "" && V[key, j, i] == "0") x = 0 }
			else if (c !~ /^run_/ && c != "rep" && good && isnum(V[key, b, i])) x = median(key, i)
			printf "%s%s", x, i < nc ? "," : ""
		}
		for (k = 1; k <= nm; k++) { m = good ? median(key, idx[MM[k]]) : ""; printf ",%s,%s", m == "" ? "" : LO, m == "" ? "" : HI }
		printf ",%d,%d\n", good, n
	}
}'
awk -v mm="$MMCOLS" "$AGG_AWK" "$CSV" > "$AGG" || exit 2

# ------------------------------------------------------------------ held
# bench/held_scale.sh's results (make bench runs it: RESULTS/held-vm, the
# kernel backend in a VM sized for 12 M; RESULTS/held-host, the embedded
# engine natively).  A full report copies them to DOCS/records/bench/held-{vm,host}/
# (held.jsonl, held.log, held.txt, held.meta), as it writes results.csv,
# and so does --from-csv given --results (held results made apart from the
# main run); every mode reads them from DOCS.  HELD: one line per environment and
# size, the medians over the runs that completed:
#   size ENV N RUNS OK INSERT_NS RELEASE_NS RELEASE_CPU_NS MEM_B MEM_MIN MEM_MAX
# and held.meta's keys:  meta ENV KEY VALUE  /  skip ENV N WHY
if [ "$MODE" = full ] || { [ "$MODE" = csv ] && [ "$RESULTS_GIVEN" = 1 ]; }; then
	for e in vm host; do
		[ -s "$RESULTS/held-$e/held.meta" ] || continue
		rm -rf "$REC/held-$e" && mkdir -p "$REC/held-$e" || exit 2
		for f in held.jsonl held.log held.txt held.meta; do
			[ ! -f "$RESULTS/held-$e/$f" ] || cp "$RESULTS/held-$e/$f" "$REC/held-$e/" || exit 2
		done
	done
fi
HELD=$WORK/held.txt
: > "$HELD"
for e in vm host; do
	d=$REC/held-$e
	[ -s "$d/held.jsonl" ] || [ -s "$d/held.meta" ] || continue
	files=()
	for f in held.meta held.txt held.jsonl; do [ ! -f "$d/$f" ] || files+=("$d/$f"); done
	awk -v dir="$d" -v env="$e" -v lbl="$([ "$e" = vm ] && echo dq-kernel || echo dq-user)" "$JSON_AWK"'
		function med(k, c,   n, i, j, t, a) {
			n = 0
			for (i = 1; i <= NR_[k]; i++) if ((k, i, c) in V) a[++n] = V[k, i, c]
			if (!n) { LO = HI = ""; return "" }
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
			LO = a[1]; HI = a[n]
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		FILENAME ~ /held\.meta$/ {
			k = $0; sub(/=.*/, "", k); x = $0; sub(/^[^=]*=/, "", x)
			if (k == "not_measured") { n = x; sub(/:.*/, "", n); sub(/^[^:]*:/, "", x); print "skip", env, n, x }
			else if (k != "") print "meta", env, k, x
			next
		}
		FILENAME ~ /held\.txt$/ {
			# results from before held.meta: the date and the guest from the header
			if (FNR == 1 && !hasmeta) { split($0, H, ", "); print "meta", env, "date", H[2] }
			if (!hasmeta && $0 ~ /^# guest: .* kB$/) { x = $0; sub(/ kB$/, "", x); sub(/.* /, "", x); print "meta", env, "vm_mem_mb", int(x / 1024) }
			next
		}
		/^\{/ {
			split("", J); parse($0, J)
			if (J["label"] != lbl || J["workload"] != "pending") next
			n = J["n"] + 0
			if (!(n in NR_)) { NR_[n] = 0; order[++nn] = n }
			RUNS[n]++
			if (J["ok"] != "true" || J["verdict"] != "ok") next
			i = ++NR_[n]
			if (J["insert_ns_per_msg"] != "") V[n, i, "ins"] = J["insert_ns_per_msg"] + 0
			if (J["release_ns_per_msg"] != "") V[n, i, "rel"] = J["release_ns_per_msg"] + 0
			if (J["release_cpu_us_per_msg"] != "") V[n, i, "cpu"] = J["release_cpu_us_per_msg"] * 1000
			if (J["mem_bytes_per_msg"] != "") V[n, i, "mem"] = J["mem_bytes_per_msg"] + 0
		}
		BEGIN { hasmeta = (getline line < (dir "/held.meta")) > 0; close(dir "/held.meta") }
		END {
			for (q = 1; q <= nn; q++) {
				n = order[q]; m = med(n, "mem"); ml = LO; mh = HI
				a = med(n, "ins"); b = med(n, "rel"); c = med(n, "cpu")
				printf "size %s %d %d %d %s %s %s %s %s %s\n", env, n, RUNS[n], NR_[n], a == "" ? "-" : a, b == "" ? "-" : b, c == "" ? "-" : c, m == "" ? "-" : m, ml == "" ? "-" : ml, mh == "" ? "-" : mh
			}
		}' "${files[@]}" || exit 2
done >> "$HELD"

# ------------------------------------------------------------------ plots
# From the CSV, and (lateness CDFs) from the run's own cdf/ files, which
# only exist next to the results the CSV was made from.
HAVE_GNUPLOT=0
command -v gnuplot > /dev/null && HAVE_GNUPLOT=1
PLOTS=()

gp_cdf() { # env stress(0/1) out.png title
	local e=$1 st=$2 out=$3 title=$4 tag="" f label plot="" n=0 rt
	# the middle offered rate (the lowest under stress), as run.sh tags them
	rt=$(awk -F, -v env="$e" 'NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
		$idx["env"] == env && $idx["workload"] == "lateness" && $idx["dmax_ms"] == 1000 && $idx["rate"] != "" { r[$idx["rate"] + 0] = 1 }
		END { n = 0; for (x in r) R[++n] = x + 0; for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (R[j] < R[i]) { t = R[i]; R[i] = R[j]; R[j] = t }
			if (n) print (st == 1 ? R[1] : R[int((n + 1) / 2)]) }' st="$st" "$CSV")
	tag=-$rt
	[ "$st" = 1 ] && tag=-stress-$rt
	title="$title, $rt msg/s offered"
	for f in "$RESULTS/$e"/cdf/*-lateness"$tag".txt "$RESULTS/$e"/cdf/cyclictest-*-lateness"${tag%-*}".txt; do
		[ -s "$f" ] || continue
		label=$(basename "$f" .txt)
		label=${label%%-lateness*}
		[ "$(grep -vc '^#' "$f")" -gt 0 ] || continue
		n=$((n + 1))
		plot+="${plot:+, }'$f' using 1:2 with lines lw 2 lc $n dt $((n / 9 + 1)) title '$label'"
	done
	[ "$n" -gt 0 ] || return 0
	gnuplot <<-EOF 2>> "$WORK/gnuplot.log" || return 0
		set terminal pngcairo size 1000,600 font ",10"
		set output '$out'
		set title '$title'
		set logscale x
		set xlabel 'lateness (release - due), microseconds (log)'
		set ylabel 'fraction of messages released'
		set key right bottom
		set grid
		set yrange [0:1.02]
		plot $plot
	EOF
	PLOTS+=("$out")
}

# scale: cost per message against messages held, one line per system
gp_scale() { # env column out.png title ylabel
	local e=$1 col=$2 out=$3 title=$4 ylabel=$5 plot="" n=0 s
	awk -F, -v env="$e" -v col="$col" -v dir="$WORK" '
		NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
		$idx["env"] == env && $idx["workload"] == "pending" && $idx[col] != "" && $idx["ok"] == "true" {
			f = dir "/scale-" env "-" col "-" $idx["label"] ".dat"
			print $idx["n"], $idx[col] >> f
		}' "$AGG"
	for s in "$WORK"/scale-"$e"-"$col"-*.dat; do
		if [ ! -f "$s" ] || [ "$(wc -l < "$s")" -lt 2 ]; then continue; fi
		sort -n "$s" -o "$s"
		n=$((n + 1))
		plot+="${plot:+, }'$s' using 1:2 with linespoints lw 2 lc $n dt $((n / 9 + 1)) pt $n title '$(basename "$s" .dat | sed "s/^scale-$e-$col-//")'"
	done
	[ "$n" -gt 0 ] || return 0
	gnuplot <<-EOF 2>> "$WORK/gnuplot.log" || return 0
		set terminal pngcairo size 1000,600 font ",10"
		set output '$out'
		set title '$title'
		set logscale xy
		set xlabel 'messages held (log)'
		set ylabel '$ylabel (log)'
		set key outside right
		set grid
		plot $plot
	EOF
	PLOTS+=("$out")
}

# lateness percentiles per system (clustered bars, log scale)
gp_pct() { # env stress out.png title
	local e=$1 st=$2 out=$3 title=$4 dat=$WORK/pct-$1-$2.dat
	awk -F, -v env="$e" -v st="$st" '
		NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
		$idx["env"] == env && $idx["workload"] == "lateness" && $idx["stress"] == st && $idx["late_p50_us"] != "" {
			printf "%s %s %s %s %s\n", $idx["label"] ($idx["rate"] != "" ? "@" $idx["rate"] / 1000 "k" : "") ($idx["dmax_ms"] > 1000 ? "-hold" : ""), $idx["late_p50_us"] / 1000, $idx["late_p99_us"] / 1000,
				($idx["late_p999_us"] == "" ? $idx["late_max_us"] : $idx["late_p999_us"]) / 1000, $idx["late_max_us"] / 1000
		}' "$AGG" > "$dat"
	[ -s "$dat" ] || return 0
	gnuplot <<-EOF 2>> "$WORK/gnuplot.log" || return 0
		set terminal pngcairo size 1100,600 font ",10"
		set output '$out'
		set title '$title'
		set style data histograms
		set style histogram clustered gap 1
		set style fill solid 0.8 border -1
		set logscale y
		set ylabel 'lateness, ms (log)'
		set xtics rotate by -30 scale 0
		set key top left
		set grid ytics
		plot '$dat' using 2:xtic(1) title 'p50', '' using 3 title 'p99', '' using 4 title 'p99.9', '' using 5 title 'max'
	EOF
	PLOTS+=("$out")
}

if [ "$MODE" != check ] && [ "$HAVE_GNUPLOT" = 1 ]; then
	# CDF plots only with the run's own files; the rest from the CSV
	[ "$MODE" = full ] && rm -f "$REC"/*.png
	rm -f "$REC"/lateness-pct-*.png "$REC"/scale-*.png
	for e in "${ENVS[@]}"; do
		if [ "$MODE" = full ]; then
			gp_cdf "$e" 0 "$REC/lateness-cdf-$e.png" "Lateness CDF, steady rate ($e)"
			gp_cdf "$e" 1 "$REC/lateness-cdf-stress-$e.png" "Lateness CDF under stress-ng CPU load ($e)"
		fi
		gp_pct "$e" 0 "$REC/lateness-pct-$e.png" "Lateness percentiles per system, steady rate ($e)"
		gp_scale "$e" insert_ns_per_msg "$REC/scale-insert-$e.png" \
			"Insert cost per message vs messages held ($e)" "ns per message (wall)"
		gp_scale "$e" release_ns_per_msg "$REC/scale-release-$e.png" \
			"Release (burst drain) time per message vs messages held ($e)" "ns per message (wall)"
		gp_scale "$e" mem_bytes_per_msg "$REC/scale-memory-$e.png" \
			"Bytes per held message beyond the payload vs messages held ($e)" "bytes"
	done
elif [ "$MODE" != check ]; then
	echo "report.sh: gnuplot not installed, no plots" >&2
fi

# ------------------------------------------------------------------ tables
# Every table below is an awk program over the CSV.  Ratios are only ever
# drawn between two rows of the same environment, workload and size (n).
TABLES=$WORK/tables.awk
cat > "$TABLES" <<'EOF'
function v(r, c) { return R[r, idx[c]] }
function isnum(x) { return x ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ }
function f0(x) { return !isnum(x) ? (x == "n/a" ? "n/a" : "–") : sprintf("%.0f", x) }
function f1(x) { return !isnum(x) ? "–" : (x + 0 >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)) }
function f2(x) { return !isnum(x) ? "–" : (x + 0 >= 10 ? f1(x) : sprintf("%.2f", x)) }
# lateness in us, shown in the unit that fits
function lat(x) {
	if (!isnum(x)) return "–"
	x += 0
	if (x >= 1e6) return sprintf("%.2f s", x / 1e6)
	if (x >= 1e3) return sprintf("%.1f ms", x / 1e3)
	return sprintf("%.0f µs", x)
}
function ms(x) {
	if (!isnum(x)) return "–"
	x += 0
	if (x >= 1000 && x % 1000 == 0) return sprintf("%d s", x / 1000)
	return sprintf("%g ms", x)
}
function rate(x) {
	if (!isnum(x)) return "–"
	x += 0
	if (x >= 1e6) return sprintf("%.2f M", x / 1e6)
	if (x >= 1e4) return sprintf("%.0f k", x / 1e3)
	if (x >= 1e3) return sprintf("%.1f k", x / 1e3)
	return sprintf("%.0f", x)
}
function nfmt(x) {
	if (!isnum(x)) return "–"
	x += 0
	if (x >= 1e6 && x % 1e6 == 0) return sprintf("%dM", x / 1e6)
	if (x >= 1e3 && x % 1e3 == 0) return sprintf("%dk", x / 1e3)
	return x
}
function mb(x) { return !isnum(x) ? "–" : sprintf("%.1f MB", (x < 0 && x > -52429 ? 0 : x) / 1048576) }
function ratio(x) {
	if (x == "" || x <= 0) return "–"
	if (x >= 100) return sprintf("%.0f×", x)
	if (x >= 10) return sprintf("%.1f×", x)
	return sprintf("%.2f×", x)
}
function eld(r,   s) {
	s = f0(v(r, "early")) " / " f0(v(r, "lost")) " / " f0(v(r, "dup"))
	if (isnum(v(r, "overdue")) && v(r, "overdue") > 0) s = s " (" f0(v(r, "overdue")) " overdue)"
	return s
}
function why(r,   e, n) {
	e = v(r, "error"); n = v(r, "notes")
	if (e != "") return e
	return n
}
function skipped(r) { return v(r, "ok") != "true" && v(r, "sent") == "" && v(r, "verdict") !~ /^failed/ && v(r, "verdict") != "" }
function bad(r) { return v(r, "violation") == "true" || v(r, "verdict") ~ /^failed/ || v(r, "verdict") == "" }
# system order for the tables
function order(l) {
	if (l ~ /^dq-uring/) return 1
	if (l ~ /^dq-ioctl/) return 2
	if (l ~ /^dq-user/) return 3
	if (l ~ /^uring-timeout/) return 4
	if (l ~ /^timerfd/) return 5
	if (l ~ /^redis-10ms/) return 6
	if (l ~ /^redis-100ms/) return 7
	if (l ~ /^redis-200ms/) return 8
	if (l ~ /^beanstalkd/) return 9
	if (l ~ /^fifo/) return 10
	if (l ~ /^cyclictest-fifo/) return 11
	if (l ~ /^cyclictest/) return 12
	if (l ~ /^dqbench/) return 13
	return 20
}
BEGIN { FS = "," }
NR == 1 { for (i = 1; i <= NF; i++) idx[$i] = i; next }
{
	nr++
	for (i = 1; i <= NF; i++) R[nr, i] = $i
	if (!($idx["label"] in seen_label)) { seen_label[$idx["label"]] = 1; labels[++nl] = $idx["label"] }
}
END {
	# labels in table order
	for (i = 1; i <= nl; i++) for (j = i + 1; j <= nl; j++)
		if (order(labels[j]) < order(labels[i]) || (order(labels[j]) == order(labels[i]) && labels[j] < labels[i])) {
			t = labels[i]; labels[i] = labels[j]; labels[j] = t
		}
	main()
}
function match_row(r, env, wl, st) {
	return v(r, "env") == env && (wl == "" || v(r, "workload") == wl) && (st == "" || v(r, "stress") == st)
}
# rows of env/workload/stress, by system, larger n first (into ROWS[]); n
function rows(env, wl, st,   i, r, n, k, j, t) {
	n = 0
	for (i = 1; i <= nl; i++) {
		k = n
		for (r = 1; r <= nr; r++)
			if (match_row(r, env, wl, st) && v(r, "label") == labels[i]) {
				ROWS[++n] = r
				for (j = n; j > k + 1 && v(ROWS[j], "n") + 0 > v(ROWS[j - 1], "n") + 0; j--) {
					t = ROWS[j]; ROWS[j] = ROWS[j - 1]; ROWS[j - 1] = t
				}
			}
	}
	return n
}
# the completed row of label l at size n (0: none)
function at(env, wl, st, l, n,   r) {
	for (r = 1; r <= nr; r++)
		if (match_row(r, env, wl, st) && v(r, "label") == l && v(r, "n") == n && v(r, "ok") == "true") return r
	return 0
}
# the completed row of label l with the largest n (0: none)
function top(env, wl, st, l,   r, b) {
	b = 0
	for (r = 1; r <= nr; r++)
		if (match_row(r, env, wl, st) && v(r, "label") == l && v(r, "ok") == "true" && (!b || v(r, "n") + 0 > v(b, "n") + 0)) b = r
	return b
}
# the largest n at which labels a and b both have col measured (""), their
# rows in PA and PB
function common_n(env, wl, st, a, b, col,   r, s, best) {
	best = ""; PA = PB = 0
	for (r = 1; r <= nr; r++) {
		if (!match_row(r, env, wl, st) || v(r, "label") != a || v(r, "ok") != "true" || !isnum(v(r, col))) continue
		s = at(env, wl, st, b, v(r, "n"))
		if (!s || !isnum(v(s, col))) continue
		if (best == "" || v(r, "n") + 0 > best + 0) { best = v(r, "n"); PA = r; PB = s }
	}
	return best
}
# idle: the largest held n at which both had an idle window of the same length
function common_idle(env, a, b,   r, s, best) {
	best = ""; PA = PB = 0
	for (r = 1; r <= nr; r++) {
		if (!match_row(r, env, "pending", "0") || v(r, "label") != a || v(r, "ok") != "true" || !isnum(v(r, "idle_wakeups_per_s"))) continue
		s = at(env, "pending", "0", b, v(r, "n"))
		if (!s || !isnum(v(s, "idle_wakeups_per_s")) || int(v(r, "idle_s") + 0.5) != int(v(s, "idle_s") + 0.5)) continue
		if (best == "" || v(r, "n") + 0 > best + 0) { best = v(r, "n"); PA = r; PB = s }
	}
	return best
}
# messages label l held past their deadline and grace in env (any workload)
function overdue(env, l,   r, s) {
	s = 0
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == env && v(r, "label") == l && isnum(v(r, "overdue"))) s += v(r, "overdue")
	return s
}
# the first non-empty value of column c among env's rows of workload wl
function param(env, wl, c,   r) {
	for (r = 1; r <= nr; r++)
		if (match_row(r, env, wl, "") && v(r, c) != "") return v(r, c)
	return ""
}
function first(env,   r) {
	for (r = 1; r <= nr; r++) if (v(r, "env") == env) return r
	return 0
}
# 2026-12-01T09:07:46Z -> 2026-12-01 09:07:46 UTC
function date(x) { sub(/T/, " ", x); sub(/Z$/, " UTC", x); return x }
# "X s", or "X–Y s" when the runs differ
function span(env, wl, c,   r, lo, hi) {
	lo = hi = ""
	for (r = 1; r <= nr; r++)
		if (match_row(r, env, wl, "") && isnum(v(r, c))) {
			if (lo == "" || v(r, c) + 0 < lo + 0) lo = v(r, c)
			if (hi == "" || v(r, c) + 0 > hi + 0) hi = v(r, c)
		}
	return lo == hi ? lo : lo "–" hi
}
# "median (min–max)" of column c of row r, each formatted by fmt(): f0, f1,
# f2, lat, rate (the min and max only when the repetitions differ)
function fmtx(x, how) {
	if (how == "lat") return lat(x)
	if (how == "rate") return rate(x)
	if (how == "f0") return f0(x)
	if (how == "f1") return f1(x)
	return f2(x)
}
function mm(r, c, how,   m, lo, hi) {
	m = fmtx(v(r, c), how)
	if (!isnum(v(r, c))) return m
	lo = fmtx(v(r, "min_" c), how); hi = fmtx(v(r, "max_" c), how)
	if (v(r, "reps") + 0 < 2 || lo == hi || lo == "–") return m
	return m " (" lo "–" hi ")"
}
function reps(r) { return isnum(v(r, "reps")) ? v(r, "reps") "/" v(r, "runs") : "1/1" }
# bench/held_scale.sh's results (the HELD file): HS[env, n, col] per size
# (runs ok ins rel cpu mem memlo memhi), HM[env, key] from held.meta,
# HSKIP[env, n] the reason a size was not measured, HSZ[env, i] the sizes
function load_held(   line, F, i, k, x) {
	if (held_loaded++) return
	while ((getline line < held) > 0) {
		split(line, F, " ")
		if (F[1] == "size") {
			HSZ[F[2], ++HNS[F[2]]] = F[3] + 0
			split("runs ok ins rel cpu mem memlo memhi", K, " ")
			for (i = 1; i <= 8; i++) HS[F[2], F[3] + 0, K[i]] = F[i + 3] == "-" ? "" : F[i + 3]
		} else if (F[1] == "meta" || F[1] == "skip") {
			x = line; for (i = 1; i <= 3; i++) sub(/^[^ ]+ /, "", x)
			if (F[1] == "meta") HM[F[2], F[3]] = x; else HSKIP[F[2], F[3] + 0] = x
		}
	}
	close(held)
}
# where a held_scale figure comes from: script, file, date, git, machine
function held_src(e,   s) {
	s = "bench/held_scale.sh --" e ", docs/records/bench/held-" e "/, " (HM[e, "date"] == "" ? "undated" : substr(HM[e, "date"], 1, 10))
	if (HM[e, "git"] != "") s = s ", git " HM[e, "git"]
	if (HM[e, "host"] != "") s = s ", host `" HM[e, "host"] "`"
	if (e == "vm" && HM[e, "vm_mem_mb"] != "") s = s ", VM " sprintf("%.0f", HM[e, "vm_mem_mb"] / 1024) " GiB"
	return s
}
function held_mm(e, n,   m, lo, hi) {
	m = f1(HS[e, n, "mem"]); lo = f1(HS[e, n, "memlo"]); hi = f1(HS[e, n, "memhi"])
	return (HS[e, n, "ok"] + 0 < 2 || lo == hi) ? m : m " (" lo "–" hi ")"
}
# the lateness target of this environment (µs): p99 at or below it is "met"
function target(e) { return e == "vm" ? target_vm + 0 : target_host + 0 }
function target_text(e) { return "p99 ≤ " lat(target(e)) }
# an offered-rate row: did it offer the rate, and did it meet the target?
function offered(r) { return v(r, "cannot_offer") + 0 == 0 && v(r, "ok") == "true" }
function met(r) { return offered(r) && isnum(v(r, "late_p99_us")) && v(r, "late_p99_us") + 0 <= target(v(r, "env")) && v(r, "lost") + 0 == 0 && v(r, "overdue") + 0 == 0 }
# what an offered-rate row says in place of a figure it cannot be compared by
function standing(r) {
	if (!r) return "not run"
	if (v(r, "cannot_offer") + 0 > 0) return "cannot offer"
	if (v(r, "ok") != "true") return skipped(r) ? "skipped" : "failed"
	if (v(r, "overdue") + 0 > 0) return "missed (" f0(v(r, "overdue")) " overdue)"
	if (!met(r)) return "missed (p99 " lat(v(r, "late_p99_us")) ")"
	return "met (p99 " lat(v(r, "late_p99_us")) ")"
}
# the steady-rate row of label l at offered rate rt, delays 0–1 s, no stress
function offer_row(e, l, rt,   r) {
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == e && v(r, "workload") == "lateness" && v(r, "stress") == "0" && v(r, "label") == l && v(r, "rate") + 0 == rt + 0 && v(r, "dmax_ms") + 0 == 1000) return r
	return 0
}
# the offered rates of env e (delays 0–1 s), ascending, into RT[]; how many
function offer_rates(e,   r, n, i, j, t, have) {
	n = 0
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == e && v(r, "workload") == "lateness" && v(r, "stress") == "0" && v(r, "dmax_ms") + 0 == 1000 && isnum(v(r, "rate")) && !((v(r, "rate") + 0) in have)) { have[v(r, "rate") + 0] = 1; RT[++n] = v(r, "rate") + 0 }
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (RT[j] < RT[i]) { t = RT[i]; RT[i] = RT[j]; RT[j] = t }
	return n
}
function kind_text(k) {
	if (k == "full") return "full run (`make bench`)"
	if (k == "quick") return "**quick run** (`make bench-quick`: small sizes, a smoke test; not the full workloads)"
	return "**reduced run** (sizes or systems overridden, see below; not the full workloads)"
}
EOF

section() { # env, awk body of main() [, csv: default the aggregated one]
	awk -v env="$1" -v target_host="$TARGET_HOST_US" -v target_vm="$TARGET_VM_US" \
		-v wheel="$REC/wheel.txt" -v gofile="$REC/go.txt" -v held="$HELD" -f "$TABLES" \
		-f <(printf 'function main(   n, i, r, j, k, x, y, ref, w, best, bl, l, t, a, b, c, d, e, m) {\n%s\n}\n' "$2") "${3:-$AGG}"
}
# the lateness target under which CPU and bytes per message are compared:
# p99 lateness at or below it (µs), per environment
TARGET_HOST_US=1000
TARGET_VM_US=10000

# when, where, how: from the CSV's run_* columns
HEADER='
	r = first(env)
	if (!r) return
	printf "- **%s**: %s, %s, git %s. Machine: hostname `%s`, %s CPUs (%s), %s MB RAM, kernel %s; redis %s, beanstalkd %s.\n",
		env, kind_text(v(r, "run_kind")), date(v(r, "run_date")), v(r, "run_git"), v(r, "run_host"), v(r, "run_ncpu"), v(r, "run_cpu"),
		v(r, "run_mem_mb"), v(r, "run_kernel"), v(r, "run_redis") == "" ? "–" : v(r, "run_redis"), v(r, "run_beanstalkd") == "" ? "–" : v(r, "run_beanstalkd")
	if (v(r, "run_overrides") != "") printf "  Overridden: `%s`.\n", v(r, "run_overrides")
	if (v(r, "run_load") != "") { split(v(r, "run_load"), LD, " "); printf "  The machine is shared: its 1-minute load average during the runs was %s–%s (median %s) on %s CPUs, so absolute times are noisy.\n", LD[1], LD[3], LD[2], v(r, "run_ncpu") }
	printf "  Repetitions of each run: %s. Sizes: throughput %s msgs (delays 0); offered rates %s msg/s for %s s each (delays 0–1 s), long hold %s s at %s msg/s; release capacity %s messages in one second; held %s (probe burst %s); long idle window %s s (at %s held).\n",
		v(r, "run_repeat") == "" ? 1 : v(r, "run_repeat"), v(r, "run_n"), v(r, "run_rate"), v(r, "run_lat_s"), v(r, "run_long_s"), v(r, "run_long_rate"), v(r, "run_cap_n"),
		v(r, "run_scale_ns"), v(r, "run_probe"), v(r, "run_idle_s"), v(r, "run_idle_n")
	if (v(r, "run_caps") != "") printf "  Capped to fit the time budget: %s.\n", v(r, "run_caps")'

# the verdict: every run with a violation or a failure, and the overdue
CORRECTNESS='
	runs = 0; msgs = 0; nb = 0; od = 0; sk = 0
	split("early lost dup corrupt errors", K, " ")
	for (k = 1; k <= 5; k++) S[K[k]] = 0
	for (r = 1; r <= nr; r++) {
		if (v(r, "env") != env) continue
		if (skipped(r)) { sk++; continue }
		runs++
		if (isnum(v(r, "sent"))) msgs += v(r, "sent")
		for (k = 1; k <= 5; k++) if (isnum(v(r, K[k]))) S[K[k]] += v(r, K[k])
		if (bad(r)) B[++nb] = r
		if (isnum(v(r, "overdue")) && v(r, "overdue") > 0) O[++od] = r
	}
	printf "%s: %d runs (%d skipped or not run), %.0f measured messages; early %d, lost %d, duplicated %d, corrupt %d, consumer errors %d.",
		env, runs, sk, msgs, S["early"], S["lost"], S["dup"], S["corrupt"], S["errors"]
	print (nb ? " **" nb " runs broke the rule or failed:**" : " Every run passed.")
	if (nb) {
		print ""
		print "| system | workload | n | stress | verdict |"
		print "|---|---|--:|--:|---|"
		for (i = 1; i <= nb; i++) { r = B[i]; printf "| %s | %s | %s | %s | %s |\n", v(r, "label"), v(r, "workload"), nfmt(v(r, "n")), v(r, "stress"), v(r, "verdict") == "" ? "no verdict" : v(r, "verdict") }
	}
	if (od) {
		print ""
		print "Missed deadlines (messages still held, not released within the grace window after their due time; not lost):"
		print ""
		for (i = 1; i <= od; i++) { r = O[i]; printf "- %s, %s, n = %s: %s of %s measured messages overdue (grace %s s)\n", v(r, "label"), v(r, "workload"), nfmt(v(r, "n")), f0(v(r, "overdue")), f0(v(r, "sent")), v(r, "grace_s") }
	}'

# headline: dq against each peer at equal lateness.  CPU and bytes per
# message are compared only between runs that met the lateness target; a
# system that missed it (or could not take the offered rate) is shown as
# such, never as a ratio, and never supplies the worst ratio.
HEADLINE='
	ref = (env == "vm") ? "dq-uring" : "dq-user"
	nrt = offer_rates(env)
	if (!nrt && !top(env, "throughput", "0", ref)) { print "_No " ref " results in this environment._"; return }
	cpucol = (env == "vm") ? "cpu_sys_us_per_msg" : "cpu_us_per_msg"
	print "Reference: **" ref "**. Compared at equal lateness: the lateness target is **" target_text(env) "** (" (env == "vm" ? "in the VM under TCG emulation; natively 1 ms" : "natively") ")."
	print "CPU per message at each offered rate (delays 0–1 s, 500 B; " (env == "vm" ? "whole-VM CPU" : "process + server CPU") ", median of the repetitions): each cell is peer ÷ dq (above 1: dq uses less) **only when both met the target at that rate**;"
	print "otherwise the cell says who missed it (\"missed (p99 X)\") or could not take the rate (\"cannot offer\"). Bytes/msg (peer ÷ dq, workload e, same held size) only for peers that met the target at the lowest offered rate; throughput = dq msgs/s ÷ peer msgs/s with delays 0 (workload a, same size)."
	print ""
	line = "| | "; sep = "|---|"
	for (k = 1; k <= nrt; k++) { line = line "CPU/msg @ " rate(RT[k]) " msg/s | "; sep = sep "--:|" }
	print line "bytes/msg | throughput (delay 0) |"; print sep "--:|--:|"
	line = "| **" ref "** (itself) | "
	for (k = 1; k <= nrt; k++) { d = offer_row(env, ref, RT[k]); line = line (d && met(d) ? mm(d, cpucol, "f2") " µs, " standing(d) : standing(d)) " | " }
	print line "– | – |"
	worst = 1e99; wl = ""; left = ""
	for (i = 1; i <= nl; i++) {
		l = labels[i]
		if (l == ref || l ~ /^dqbench/ || l ~ /^cyclictest/) continue
		if (!top(env, "throughput", "0", l) && !top(env, "lateness", "0", l) && !top(env, "pending", "0", l) && !offer_row(env, l, RT[1])) continue
		line = "| " l " | "; missed_any = 0
		for (k = 1; k <= nrt; k++) {
			d = offer_row(env, ref, RT[k]); p = offer_row(env, l, RT[k])
			if (!p) { line = line "not run | "; continue }
			if (!met(p)) { line = line standing(p) " | "; missed_any = 1; continue }
			if (!d || !met(d)) { line = line "dq " standing(d) "; peer " standing(p) " | "; continue }
			if (!isnum(v(d, cpucol)) || v(d, cpucol) <= 0 || !isnum(v(p, cpucol))) { line = line "– | "; continue }
			x = v(p, cpucol) / v(d, cpucol)
			line = line ratio(x) " (" f2(v(p, cpucol)) " vs " f2(v(d, cpucol)) " µs) | "
			if (l !~ /^dq-/ && x < worst) { worst = x; wl = "CPU per message against " l " at " rate(RT[k]) " msg/s offered" }
		}
		# bytes: only when both met the target at the lowest offered rate
		e = "–"
		p = offer_row(env, l, RT[1]); d = offer_row(env, ref, RT[1])
		x = common_n(env, "pending", "0", ref, l, "mem_bytes_per_msg")
		if (x != "") {
			if (!p || !met(p)) e = "not compared: " (p ? standing(p) : "no steady-rate run") " at " rate(RT[1]) " msg/s"
			else if (!d || !met(d)) e = "not compared: dq " standing(d)
			else if (v(PA, "mem_bytes_per_msg") > 0) {
				y = v(PB, "mem_bytes_per_msg") / v(PA, "mem_bytes_per_msg")
				e = ratio(y) " (" f0(v(PB, "mem_bytes_per_msg")) " vs " f0(v(PA, "mem_bytes_per_msg")) " B) @" nfmt(x)
				if (l !~ /^dq-/ && y < worst) { worst = y; wl = "bytes per message against " l " @" nfmt(x) " held" }
			}
		}
		t = "–"
		x = common_n(env, "throughput", "0", ref, l, "msgs_per_s")
		if (x != "" && v(PB, "msgs_per_s") > 0) {
			y = v(PA, "msgs_per_s") / v(PB, "msgs_per_s")
			t = ratio(y) " @" nfmt(x)
			if (l !~ /^dq-/ && p && met(p) && y < worst) { worst = y; wl = "throughput (delay 0) against " l " @" nfmt(x) }
		}
		if (missed_any && l !~ /^dq-/) left = left (left ? ", " : "") l
		# a peer that missed the target at the lowest rate supplies no ratio
		if (l !~ /^dq-/ && (!p || !met(p)) && t != "–") t = t " (not compared: " (p ? standing(p) : "no steady-rate run") " at " rate(RT[1]) " msg/s)"
		print line e " | " t " |"
	}
	if (wl != "") { print ""; printf "Worst ratio for dq among the comparisons made at equal lateness: **%s, %s**.", ratio(worst), wl; if (left != "") printf " Not compared where they missed the target or could not take the rate: %s.", left; print "" }'

# one line per system, every metric, each at the size given beside it
SUMMARY='
	vm = env == "vm"
	print "| system | msgs (a) | msgs/s | CPU µs/msg | lateness p50 (b, lowest rate) | p99 | p99.9 | max | early / lost / dup (all runs) | bytes/msg @held | idle wake-ups/s @held |"
	print "|---|--:|--:|--:|--:|--:|--:|--:|:-:|--:|--:|"
	for (i = 1; i <= nl; i++) {
		l = labels[i]
		if (l ~ /^dqbench/) continue
		tp = top(env, "throughput", "0", l); la = top(env, "lateness", "0", l)
		if (l !~ /^cyclictest/) { nrt = offer_rates(env); la = nrt ? offer_row(env, l, RT[1]) : 0; if (la && v(la, "ok") != "true") la = 0 }
		pm = 0; pi = 0
		for (r = 1; r <= nr; r++) if (match_row(r, env, "pending", "0") && v(r, "label") == l && v(r, "ok") == "true") {
			if (isnum(v(r, "mem_bytes_per_msg")) && (!pm || v(r, "n") + 0 > v(pm, "n") + 0)) pm = r
			if (isnum(v(r, "idle_wakeups_per_s")) && (!pi || v(r, "idle_s") + 0 > v(pi, "idle_s") + 0 || (v(r, "idle_s") + 0 == v(pi, "idle_s") + 0 && v(r, "n") + 0 > v(pi, "n") + 0))) pi = r
		}
		if (!tp && !la && !pm && !pi) continue
		e1 = 0; e2 = 0; e3 = 0; cyc = l ~ /^cyclictest/
		for (r = 1; r <= nr; r++) if (v(r, "env") == env && v(r, "label") == l) { e1 += v(r, "early"); e2 += v(r, "lost"); e3 += v(r, "dup") }
		el = cyc ? "n/a" : sprintf("%d / %d / %d", e1, e2, e3)
		o = overdue(env, l)
		if (o) el = el " (" o " overdue)"
		cpu = tp ? (vm && isnum(v(tp, "cpu_sys_us_per_msg")) ? v(tp, "cpu_sys_us_per_msg") : v(tp, "cpu_us_per_msg")) : ""
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l, tp ? nfmt(v(tp, "n")) : "–", tp ? rate(v(tp, "msgs_per_s")) : "–", f2(cpu),
			la ? lat(v(la, "late_p50_us")) : "–", la ? lat(v(la, "late_p99_us")) : "–", la ? lat(v(la, "late_p999_us")) : "–",
			la ? lat(v(la, "late_max_us")) : "–", el, pm ? f0(v(pm, "mem_bytes_per_msg")) " @" nfmt(v(pm, "n")) : "–",
			pi ? f2(v(pi, "idle_wakeups_per_s")) " @" nfmt(v(pi, "n")) : "–"
	}'

WORKLOAD_A='
	printf "Workload: delays uniform %s – %s after submission, %s B payloads, grace %s s after the last due time.\n",
		ms(param(env, "throughput", "dmin_ms")), ms(param(env, "throughput", "dmax_ms")), span(env, "throughput", "payload"), span(env, "throughput", "grace_s")'
WORKLOAD_B='
	nrt = offer_rates(env); x = ""
	for (k = 1; k <= nrt; k++) x = x (k > 1 ? ", " : "") rate(RT[k])
	y = ""
	for (r = 1; r <= nr; r++) if (match_row(r, env, "lateness", "0") && v(r, "dmax_ms") + 0 > 1000) { y = sprintf(" (the long hold: %s msg/s, delays %s – %s)", rate(v(r, "rate")), ms(v(r, "dmin_ms")), ms(v(r, "dmax_ms"))); break }
	printf "Workload: offered rates %s msg/s for %s s each, delays uniform 0 – 1 s%s, %s B payloads, grace %s s. CPU per message counts the whole benchmark process (the harness producer, the same for every system, and the consumer) and the server.\n",
		x, span(env, "lateness", "duration_s"), y, span(env, "lateness", "payload"), span(env, "lateness", "grace_s")'
WORKLOAD_C='
	x = param(env, "pending", "far_s")
	if (x == "") return
	printf "Workload: the held messages are due %s s after the fill starts (spread over the next minute), %s B payloads; the probe burst must be out within a grace of %s s after its due time (fifo-sleep gets the shortest: its probes are stuck behind the held messages by design).\n",
		x, span(env, "pending", "payload"), span(env, "pending", "grace_s") '
THROUGHPUT='
	n = rows(env, "throughput", "0")
	if (!n) return
	vm = env == "vm"
	print "| system | messages | runs | msgs/s | submit/s | CPU µs/msg (process+server) | of which submit phase |" (vm ? " CPU µs/msg (whole VM) |" : "") " lateness p50 | p99 | p99.9 | max | early / lost / dup | notes |"
	print "|---|--:|--:|--:|--:|--:|--:|" (vm ? "--:|" : "") "--:|--:|--:|--:|:-:|---|"
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (v(r, "system") == "dqbench") continue
		if (skipped(r)) { printf "| %s | %s | %s | – | – | – | – |%s – | – | – | – | – | %s |\n", v(r, "label"), nfmt(v(r, "n")), reps(r), vm ? " – |" : "", why(r); continue }
		printf "| %s | %s | %s | %s | %s | %s | %s |%s %s | %s | %s | %s | %s | %s |\n", v(r, "label"), nfmt(v(r, "n")), reps(r),
			mm(r, "msgs_per_s", "rate"), rate(v(r, "submit_per_s")), mm(r, "cpu_us_per_msg", "f2"), mm(r, "submit_cpu_us_per_msg", "f2"), vm ? " " mm(r, "cpu_sys_us_per_msg", "f2") " |" : "",
			lat(v(r, "late_p50_us")), lat(v(r, "late_p99_us")), lat(v(r, "late_p999_us")), lat(v(r, "late_max_us")), eld(r), bad(r) ? "**" v(r, "verdict") "** " why(r) : why(r)
	}'

LATENESS='
	for (st = 0; st <= 1; st++) {
		n = rows(env, "lateness", st "")
		if (!n) continue
		print ""
		print (st ? "**Under stress-ng** (`stress-ng --cpu <every CPU>` running alongside):" : "**No other load** (each offered rate, then the long hold):")
		print ""
		print "| system | offered msg/s | delays | messages | runs | achieved msg/s | CPU µs/msg (process+server) | lateness p50 | p99 | max | " target_text(env) " | early / lost / dup | notes |"
		print "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|:-:|---|"
		for (i = 1; i <= n; i++) {
			r = ROWS[i]
			cyc = v(r, "system") == "cyclictest"
			if (skipped(r) && !cyc) { printf "| %s | %s | %s | – | %s | – | – | – | – | – | %s | – | %s |\n", v(r, "label"), rate(v(r, "rate")), isnum(v(r, "dmax_ms")) ? ms(v(r, "dmin_ms")) "–" ms(v(r, "dmax_ms")) : "–", reps(r), standing(r), why(r); continue }
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v(r, "label"), cyc ? "–" : rate(v(r, "rate")),
				cyc ? "1 ms timer" : ms(v(r, "dmin_ms")) "–" ms(v(r, "dmax_ms")), cyc ? nfmt(v(r, "n")) " samples" : nfmt(v(r, "sent")), reps(r),
				cyc ? "–" : mm(r, "submit_per_s", "rate"), f2(v(r, "cpu_us_per_msg")), mm(r, "late_p50_us", "lat"),
				mm(r, "late_p99_us", "lat"), mm(r, "late_max_us", "lat"), cyc ? "–" : standing(r), eld(r), bad(r) ? "**" v(r, "verdict") "** " why(r) : why(r)
		}
	}'

# the goals of issue 18, each with its figure and verdict, from the rows
# of both environments (env is ignored: the table is one)
GOALS='
	print "| goal | figure | verdict |"
	print "|---|---|---|"
	# 1. embedded engine CPU/msg at 100k offered natively
	d = offer_row("host", "dq-user", 100000); u = offer_row("host", "uring-timeout", 100000)
	if (!d) printf "| Natively at 100k msg/s offered, delays 0–1 s, 500 B: dq-user CPU/msg ≤ 0.5× uring-timeout and ≤ 1 µs, at p99 ≤ 1 ms | – | not measured (no native dq-user run at 100k msg/s offered) |\n"
	else {
		fig = "dq-user " mm(d, "cpu_us_per_msg", "f2") " µs/msg, p99 " mm(d, "late_p99_us", "lat") (v(d, "run_kind") != "full" ? " (" v(d, "run_kind") " run)" : "")
		miss = ""
		if (!offered(d)) miss = "dq-user could not take the rate"
		else {
			if (!met(d)) miss = miss (miss ? "; " : "") "p99 " lat(v(d, "late_p99_us")) " > 1 ms"
			if (v(d, "cpu_us_per_msg") + 0 > 1) miss = miss (miss ? "; " : "") sprintf("CPU %.2f µs > 1 µs (%.1f×)", v(d, "cpu_us_per_msg"), v(d, "cpu_us_per_msg"))
			if (u && isnum(v(u, "cpu_us_per_msg")) && v(u, "cpu_us_per_msg") > 0) {
				x = v(d, "cpu_us_per_msg") / v(u, "cpu_us_per_msg")
				fig = fig "; uring-timeout " mm(u, "cpu_us_per_msg", "f2") " µs/msg (" standing(u) "): ratio " sprintf("%.2f×", x)
				if (x > 0.5) miss = miss (miss ? "; " : "") sprintf("ratio %.2f× > 0.5×", x)
			} else miss = miss (miss ? "; " : "") "no uring-timeout figure to compare with"
		}
		printf "| Natively at 100k msg/s offered, delays 0–1 s, 500 B: dq-user CPU/msg ≤ 0.5× uring-timeout and ≤ 1 µs, at p99 ≤ 1 ms | %s | %s |\n", fig, miss == "" ? "**met**" : "**missed** by " miss
	}
	# 2. the wheel, from docs/records/bench/wheel.txt (bench/wheel.sh)
	w10 = w4 = ""; blk = ""; wdate = ""; wrep = "?"
	while ((getline line < wheel) > 0) {
		if (line ~ /^# 20[0-9][0-9]-/ && wdate == "") { wdate = line; sub(/^# /, "", wdate); sub(/ on .*/, "", wdate) }
		if (line ~ /10k in flight/) blk = "10k"
		else if (line ~ /4M in flight/) blk = "4M"
		else if (blk != "" && line ~ /^ *after  /) { split(line, W, " "); if (blk == "10k") w10 = W[2]; else w4 = W[2]; blk = "" }
		if (line ~ /^ns\/msg: median of [0-9]+/) { wrep = line; sub(/^ns\/msg: median of /, "", wrep); sub(/ .*/, "", wrep) }
	}
	close(wheel)
	if (w10 == "" || w4 == "") printf "| Wheel: ≤ 60 ns/msg at 10k in flight, ≤ 2× that at 4 M | – | not measured (no docs/records/bench/wheel.txt figures; bench/wheel.sh --write) |\n"
	else {
		miss = ""
		if (w10 + 0 > 60) miss = sprintf("%.1f ns at 10k (%.0f%% over 60)", w10, (w10 / 60 - 1) * 100)
		if (w4 + 0 > 2 * w10) miss = miss (miss ? "; " : "") sprintf("4 M is %.1f× the 10k figure (goal 2×)", w4 / w10)
		printf "| Wheel: ≤ 60 ns/msg at 10k in flight, ≤ 2× that at 4 M | %s ns at 10k, %s ns at 4 M (median of %s; bench/wheel.sh, docs/records/bench/wheel.txt, %s; make bench runs it as make -C bench wheel) | %s |\n", w10, w4, wrep, wdate, miss == "" ? "**met**" : "**missed** by " miss
	}
	# 2b. the Go package, from docs/records/bench/go.txt (bindings/go/gobench/run.sh)
	gfig = ""; ghead = ""
	while ((getline line < gofile) > 0) {
		if (line ~ /^# Go designs against dq-go, / && ghead == "") { ghead = line; sub(/^# Go designs against dq-go, /, "", ghead) }
		if (line ~ /^goal-figures: /) gfig = line
	}
	close(gofile)
	gname = "Natively at 100k msg/s offered, delays 0–1 s, 500 B: dq-go (the Go package) ≤ 2 µs CPU/msg net of the Go driver, at p99 ≤ 1 ms"
	if (gfig == "") printf "| %s | – | not measured (no goal-figures line in docs/records/bench/go.txt; make -C bindings/go bench-compare) |\n", gname
	else {
		split(gfig, GF, /[ =]/)
		for (i = 2; i < length(GF); i += 2) G[GF[i]] = GF[i + 1]
		miss = ""
		if (G["cpu_net_us"] + 0 > 2) miss = sprintf("CPU %.2f µs > 2 µs", G["cpu_net_us"])
		if (G["p99_us"] + 0 > 1000) miss = miss (miss ? "; " : "") "p99 " lat(G["p99_us"]) " > 1 ms"
		printf "| %s | %.2f (%.2f–%.2f) µs/msg, p99 %s (%s–%s), granularity %s µs%s (median of %s; bindings/go/gobench/run.sh, docs/records/bench/go.txt, %s; make bench runs it) | %s |\n",
			gname, G["cpu_net_us"], G["cpu_min"], G["cpu_max"], lat(G["p99_us"]), lat(G["p99_min"]), lat(G["p99_max"]),
			G["gran_us"], G["netpoll"] == 1 ? ", Reap in the netpoller (ReapNetpoll)" : "", G["reps"], ghead, miss == "" ? "**met**" : "**missed** by " miss
	}
	# 3. release capacity natively: 500k due in one second, all within 50 ms
	c = 0
	for (r = 1; r <= nr; r++) if (v(r, "env") == "host" && v(r, "workload") == "capacity" && v(r, "label") == "dq-user" && v(r, "ok") == "true") c = r
	if (!c) printf "| Release capacity natively: all 500k messages due in the same second released within 50 ms of their due time | – | not measured (no native dq-user capacity run) |\n"
	else {
		fig = sprintf("%s of %s within 50 ms (min %s), last one out %s ms after the second ended, p99 %s; %s runs", f0(v(c, "cap_ontime")), f0(v(c, "sent")), f0(v(c, "min_cap_ontime")), f1(v(c, "cap_last_out_ms")), lat(v(c, "late_p99_us")), reps(c))
		miss = ""
		if (v(c, "n") + 0 < 500000) miss = "run at " nfmt(v(c, "n")) ", not the goal’s 500k"
		else if (v(c, "min_cap_ontime") + 0 < v(c, "n") + 0) miss = sprintf("%.0f messages late in the worst run", v(c, "n") - v(c, "min_cap_ontime"))
		printf "| Release capacity natively: all 500k messages due in the same second released within 50 ms of their due time | %s | %s |\n", fig, miss == "" ? "**met**" : (v(c, "n") + 0 < 500000 ? "not measured: " miss : "**missed** by " miss)
	}
	# 4. bytes per held message: smaps natively (dq-user), memcg in the VM
	# (dq-uring): the scale run of make bench at that size, else held_scale
	load_held()
	split("host:dq-user:1000000 host:dq-user:4000000 vm:dq-uring:1000000 vm:dq-uring:4000000", G, " ")
	for (k = 1; k <= 4; k++) {
		split(G[k], P, ":")
		m = 0
		for (r = 1; r <= nr; r++) if (v(r, "env") == P[1] && v(r, "workload") == "pending" && v(r, "label") == P[2] && v(r, "n") + 0 == P[3] + 0 && v(r, "ok") == "true") m = r
		what = "≤ 32 B per held message beyond the payload, " P[2] " at " nfmt(P[3]) " held (" (P[1] == "vm" ? "memcg, in the VM" : "smaps, natively") ")"
		hv = 0; for (r = 1; r <= nr; r++) if (v(r, "env") == P[1]) { hv = r; break }
		hx = HS[P[1], P[3] + 0, "mem"]
		if (m && isnum(v(m, "mem_bytes_per_msg"))) {
			x = v(m, "mem_bytes_per_msg")
			fig = mm(m, "mem_bytes_per_msg", "f1") " B (make bench’s scale run, workload c" (v(m, "run_kind") != "full" ? ", " v(m, "run_kind") " run" : "") ")"
			if (isnum(hx)) fig = fig "; held_scale: " held_mm(P[1], P[3] + 0) " B (" held_src(P[1]) ")"
		} else if (isnum(hx)) {
			x = hx
			fig = held_mm(P[1], P[3] + 0) " B (median of " HS[P[1], P[3] + 0, "ok"] "; " held_src(P[1]) "; make bench’s scale run has no such size)"
		} else {
			wy = !hv ? "the " (P[1] == "vm" ? "VM" : "native") " part was not run for these results" : (m ? "no reading" : "no run at that size in this " v(hv, "run_kind") " run")
			if ((P[1], P[3] + 0) in HSKIP) wy = wy "; held_scale: " HSKIP[P[1], P[3] + 0]
			else if (HNS[P[1]]) wy = wy "; held_scale (" held_src(P[1]) ") has no reading at that size"
			else wy = wy "; no held_scale results (docs/records/bench/held-" P[1] "/)"
			printf "| %s | – | not measured (%s) |\n", what, wy
			continue
		}
		printf "| %s | %s | %s |\n", what, fig, x + 0 <= 32 ? "**met**" : sprintf("**missed** by %.1f B (%.1f×)", x - 32, x / 32)
	}
	# 5. in the VM: dq-uring p99 vs cyclictest in the same boot; CPU vs the best peer
	cy = top("vm", "lateness", "0", "cyclictest-other")
	nrt = offer_rates("vm")
	d = nrt ? offer_row("vm", "dq-uring", RT[1]) : 0
	if (!d || !cy) printf "| In the VM: dq-uring p99 lateness ≤ 1.2× cyclictest’s p99 (same boot) | – | not measured (%s) |\n", !nrt ? "the VM part was not run for these results" : "no dq-uring or cyclictest run in the VM"
	else {
		x = v(d, "late_p99_us") / v(cy, "late_p99_us")
		printf "| In the VM: dq-uring p99 lateness ≤ 1.2× cyclictest’s p99 (same boot) | dq-uring %s at %s msg/s, cyclictest %s: %.2f×%s | %s |\n", lat(v(d, "late_p99_us")), rate(RT[1]), lat(v(cy, "late_p99_us")), x, v(d, "run_kind") != "full" ? " (" v(d, "run_kind") " run)" : "", x <= 1.2 ? "**met**" : sprintf("**missed** by %.2f×", x / 1.2)
	}
	# the same goal for the two-thread shape (issue 38): a producer thread
	# and a consumer thread parked in WAIT over io_uring, same boot
	d2 = nrt ? offer_row("vm", "dq-uring-2t", RT[1]) : 0
	if (!d2 || !cy) printf "| In the VM, two threads (producer + consumer parked in WAIT): dq-uring-2t p99 lateness ≤ 1.2× cyclictest’s p99 (same boot) | – | not measured (%s) |\n", !nrt ? "the VM part was not run for these results" : "no dq-uring-2t or cyclictest run in the VM"
	else {
		x = v(d2, "late_p99_us") / v(cy, "late_p99_us")
		printf "| In the VM, two threads (producer + consumer parked in WAIT): dq-uring-2t p99 lateness ≤ 1.2× cyclictest’s p99 (same boot) | dq-uring-2t %s at %s msg/s, cyclictest %s: %.2f×%s | %s |\n", lat(v(d2, "late_p99_us")), rate(RT[1]), lat(v(cy, "late_p99_us")), x, v(d2, "run_kind") != "full" ? " (" v(d2, "run_kind") " run)" : "", x <= 1.2 ? "**met**" : sprintf("**missed** by %.2f×", x / 1.2)
	}
	best = 0
	for (i = 1; nrt && i <= nl; i++) { l = labels[i]; if (l ~ /^dq/ || l ~ /^cyclictest/) continue; p = offer_row("vm", l, RT[1]); if (p && met(p) && isnum(v(p, "cpu_sys_us_per_msg")) && (!best || v(p, "cpu_sys_us_per_msg") + 0 < v(best, "cpu_sys_us_per_msg") + 0)) best = p }
	if (!d) printf "| In the VM: dq CPU/msg ≤ 0.5× the best peer | – | not measured (the VM part was not run for these results) |\n"
	else {
		if (!best || !isnum(v(d, "cpu_sys_us_per_msg"))) printf "| In the VM: dq CPU/msg ≤ 0.5× the best peer | – | not measured (no peer met the VM lateness target) |\n"
		else { x = v(d, "cpu_sys_us_per_msg") / v(best, "cpu_sys_us_per_msg"); printf "| In the VM: dq CPU/msg ≤ 0.5× the best peer | dq-uring %s µs vs %s %s µs at %s msg/s (whole-VM CPU): %.2f×%s | %s |\n", f2(v(d, "cpu_sys_us_per_msg")), v(best, "label"), f2(v(best, "cpu_sys_us_per_msg")), rate(RT[1]), x, v(d, "run_kind") != "full" ? " (" v(d, "run_kind") " run)" : "", x <= 0.5 ? "**met**" : sprintf("**missed** by %.2f×", x / 0.5) }
	}
	# The same goal at an equal p99 lateness budget (issue 38): dq-uring
	# with half the VM target as its slack (dq-uring-budget in run.sh),
	# the rule dq-user follows natively; compared only when it met the
	# target itself.
	d3 = nrt ? offer_row("vm", "dq-uring-budget", RT[1]) : 0
	gb = "| In the VM at an equal p99 lateness budget (dq’s slack half the target): dq-uring-budget CPU/msg ≤ 0.5× the best peer"
	if (!d3) printf "%s | – | not measured (%s) |\n", gb, !nrt ? "the VM part was not run for these results" : "no dq-uring-budget run in the VM"
	else if (!met(d3)) printf "%s | dq-uring-budget p99 %s at %s msg/s | **missed** (p99 over the target) |\n", gb, lat(v(d3, "late_p99_us")), rate(RT[1])
	else if (!best || !isnum(v(d3, "cpu_sys_us_per_msg"))) printf "%s | – | not measured (no peer met the VM lateness target) |\n", gb
	else { x = v(d3, "cpu_sys_us_per_msg") / v(best, "cpu_sys_us_per_msg"); printf "%s | dq-uring-budget %s µs (p99 %s) vs %s %s µs at %s msg/s (whole-VM CPU): %.2f×%s | %s |\n", gb, f2(v(d3, "cpu_sys_us_per_msg")), lat(v(d3, "late_p99_us")), v(best, "label"), f2(v(best, "cpu_sys_us_per_msg")), rate(RT[1]), x, v(d3, "run_kind") != "full" ? " (" v(d3, "run_kind") " run)" : "", x <= 0.5 ? "**met**" : sprintf("**missed** by %.2f×", x / 0.5) }
	# 6. 12 M held, from bench/held_scale.sh --vm: per-message probe insert,
	# release and release CPU at each size against the 10k figure; flat =
	# the rule of the wheel goal: the largest size (12 M) <= 2x the 10k figure
	load_held()
	what = "12 M × 500 B held in one VM sized for it, insert and release cost flat from 10k to 12 M (flat: probe insert, release and release CPU per message at 12 M ≤ 2× the 10k figure)"
	T = 12000000; B = 10000
	if (!HNS["vm"] && !(("vm", T) in HSKIP)) { printf "| %s | – | not measured (no bench/held_scale.sh --vm results in docs/records/bench/held-vm/) |\n", what; return }
	if (("vm", T) in HSKIP && !HS["vm", T, "runs"]) { printf "| %s | – | not measured: %s (%s) |\n", what, HSKIP["vm", T], held_src("vm"); return }
	if (!HS["vm", T, "runs"]) {
		if (HM["vm", "sizes"] != "" && (" " HM["vm", "sizes"] " ") !~ / 12000000 /) printf "| %s | – | not measured (held_scale ran %s held, not 12 M; %s) |\n", what, HM["vm", "sizes"], held_src("vm")
		else if (HM["vm", "sizes"] != "") printf "| %s | – | not measured: 12 M was asked but no run reported (the VM exited %s; held.log; %s) |\n", what, HM["vm", "exit"], held_src("vm")
		else printf "| %s | – | not measured (no 12 M run in %s) |\n", what, held_src("vm")
		return
	}
	if (!HS["vm", B, "ok"]) { printf "| %s | – | not measured (no completed 10k run to compare with in %s) |\n", what, held_src("vm"); return }
	if (!HS["vm", T, "ok"]) { printf "| %s | – | **missed**: no 12 M run completed (%d of %d failed; %s, held.log) |\n", what, HS["vm", T, "runs"], HS["vm", T, "runs"], held_src("vm"); return }
	split("ins:insert rel:release cpu:release CPU", M, " ")
	fig = sprintf("10k: insert %s, release %s, release CPU %s ns/msg; vs 10k (insert / release / release CPU):", f0(HS["vm", B, "ins"]), f0(HS["vm", B, "rel"]), f0(HS["vm", B, "cpu"]))
	for (i = 1; i <= HNS["vm"]; i++) {
		n = HSZ["vm", i]
		if (n == B || !HS["vm", n, "ok"]) continue
		fig = fig sprintf(" %s %s / %s / %s;", nfmt(n), ratio(HS["vm", n, "ins"] / HS["vm", B, "ins"]), ratio(HS["vm", n, "rel"] / HS["vm", B, "rel"]), ratio(HS["vm", n, "cpu"] / HS["vm", B, "cpu"]))
	}
	fig = fig " median of " HS["vm", T, "ok"] " runs at 12 M, TCG ns (ratios, not absolute times); " held_src("vm")
	miss = ""
	if (HS["vm", T, "ok"] < HS["vm", T, "runs"]) miss = sprintf("%d of %d 12 M runs failed", HS["vm", T, "runs"] - HS["vm", T, "ok"], HS["vm", T, "runs"])
	for (i = 1; i <= 3; i++) {
		split(M[i], Q, ":")
		if (!isnum(HS["vm", T, Q[1]]) || !isnum(HS["vm", B, Q[1]]) || HS["vm", B, Q[1]] <= 0) { miss = miss (miss ? "; " : "") "no " Q[2] " figure"; continue }
		x = HS["vm", T, Q[1]] / HS["vm", B, Q[1]]
		if (x > 2) miss = miss (miss ? "; " : "") sprintf("%s at 12 M is %.2f× the 10k figure (goal ≤ 2×)", Q[2], x)
	}
	printf "| %s | %s | %s |\n", what, fig, miss == "" ? "**met**" : "**missed** by " miss'

# f. release capacity
CAPACITY='
	n = rows(env, "capacity", "0")
	if (!n) return
	print "| system | messages | runs | lead | fill ns/msg | released within 50 ms of due | released within the second | last one out, relative to the end of the second | lateness p99 | max | CPU µs/msg (fill + release) | early / lost / dup | notes |"
	print "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|---|"
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (skipped(r) || v(r, "ok") != "true") { printf "| %s | %s | %s | – | – | – | – | – | – | – | – | %s | %s |\n", v(r, "label"), nfmt(v(r, "n")), reps(r), skipped(r) ? "–" : eld(r), bad(r) ? "**" v(r, "verdict") "** " why(r) : why(r); continue }
		printf "| %s | %s | %s | %s s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v(r, "label"), nfmt(v(r, "n")), reps(r), v(r, "lead_s"),
			mm(r, "fill_ns_per_msg", "f0"), mm(r, "cap_ontime", "f0"), mm(r, "cap_in_second", "f0"),
			isnum(v(r, "cap_last_out_ms")) ? mm(r, "cap_last_out_ms", "f2") " ms" : "–", mm(r, "late_p99_us", "lat"), mm(r, "late_max_us", "lat"),
			mm(r, "cpu_us_per_msg", "f2"), eld(r), (v(r, "fill_overrun") + 0 > 0 ? "fill overran the lead; " : "") (bad(r) ? "**" v(r, "verdict") "** " why(r) : why(r))
	}'

# scale: one row per system, the columns are N
SCALE='
	n = rows(env, "pending", "")
	if (!n) return
	nn = 0
	for (i = 1; i <= n; i++) { x = v(ROWS[i], "n"); if (!(x in hasn)) { hasn[x] = 1; NS[++nn] = x } }
	for (i = 1; i <= nn; i++) for (j = i + 1; j <= nn; j++) if (NS[j] + 0 < NS[i] + 0) { t = NS[i]; NS[i] = NS[j]; NS[j] = t }
	split("insert_ns_per_msg release_ns_per_msg release_cpu_us_per_msg late_p99_us", what, " ")
	split("Insert: wall ns per message (probe burst; n held)|Release: drain time per message of a burst due at one instant, ns|Release: CPU µs per message (process+server)|Lateness p99 of the burst", title, "|")
	for (k = 1; k <= 4; k++) {
		print ""
		print "**" title[k] "**"
		print ""
		printf "| system |"; for (j = 1; j <= nn; j++) printf " %s held |", nfmt(NS[j]); print ""
		printf "|---|"; for (j = 1; j <= nn; j++) printf "--:|"; print ""
		for (i = 1; i <= nl; i++) {
			line = "| " labels[i] " |"; any = 0
			for (j = 1; j <= nn; j++) {
				r = 0
				for (y = 1; y <= nr; y++) if (match_row(y, env, "pending", "0") && v(y, "label") == labels[i] && v(y, "n") == NS[j]) r = y
				if (!r) { line = line " |"; continue }
				any = 1
				if (bad(r)) x = "**" v(r, "verdict") "**"
				else if (skipped(r)) x = (v(r, "error") ~ /^not run/ ? "capped" : "skipped")
				else if (v(r, "overdue") + 0 > 0 && k != 1) x = "overdue " f0(v(r, "overdue"))
				else x = (k == 4 ? lat(v(r, what[k])) : (k == 3 ? f2(v(r, what[k])) : f0(v(r, what[k]))))
				line = line " " x " |"
			}
			if (any) print line
		}
	}'

IDLE='
	vm = env == "vm"
	any = 0
	for (r = 1; r <= nr; r++) if (match_row(r, env, "pending", "0") && isnum(v(r, "idle_s"))) any = 1
	if (!any) return
	print "| system | held | window | wake-ups/s | of which kernel timer fires | CPU µs/s (process+server) |" (vm ? " CPU µs/s (whole VM) |" : "")
	print "|---|--:|--:|--:|--:|--:|" (vm ? "--:|" : "")
	n = rows(env, "pending", "0")
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (!isnum(v(r, "idle_s")) || v(r, "ok") != "true") continue
		printf "| %s | %s | %.0f s | %s | %s | %s |%s\n", v(r, "label"), nfmt(v(r, "n")), v(r, "idle_s"), f2(v(r, "idle_wakeups_per_s")),
			f0(v(r, "idle_extra_wakeups")), f0(v(r, "idle_cpu_us_per_s")), vm ? " " f0(v(r, "idle_sys_cpu_us_per_s")) " |" : ""
	}'

MEMORY='
	n = rows(env, "pending", "0")
	if (!n) return
	print "| system | held | bytes/msg beyond the payload | ± | method | memcg: anon Δ | kernel Δ | sock Δ | file Δ | RSS Δ process | RSS Δ server | smaps bytes/msg | notes |"
	print "|---|--:|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|---|"
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (skipped(r) || v(r, "ok") != "true" || v(r, "mem_method") == "") continue
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v(r, "label"), nfmt(v(r, "n")), f0(v(r, "mem_bytes_per_msg")),
			isnum(v(r, "mem_err_bytes_per_msg")) ? f0(v(r, "mem_err_bytes_per_msg")) : "–", v(r, "mem_method"),
			mb(v(r, "memcg_anon_delta")), mb(v(r, "memcg_kernel_delta")), mb(v(r, "memcg_sock_delta")), mb(v(r, "memcg_file_delta")),
			mb(v(r, "rss_self_delta")), mb(v(r, "rss_server_delta")), f0(v(r, "mem_rss_bytes_per_msg")), v(r, "notes")
	}'

DQBENCH='
	n = rows(env, "throughput", "0")
	any = 0
	for (i = 1; i <= n; i++) if (v(ROWS[i], "system") == "dqbench") any = 1
	if (!any) return
	print "| run | backend/path | messages | release msgs/s | submit/s | CPU µs/msg | lateness p50 | p99 | p99.9 | max | early / lost / dup | verdict |"
	print "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|---|"
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (v(r, "system") != "dqbench") continue
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v(r, "label"), v(r, "variant"), nfmt(v(r, "n")),
			rate(v(r, "msgs_per_s")), rate(v(r, "submit_per_s")), f2(v(r, "cpu_us_per_msg")), lat(v(r, "late_p50_us")),
			lat(v(r, "late_p99_us")), lat(v(r, "late_p999_us")), lat(v(r, "late_max_us")), skipped(r) ? "–" : eld(r), v(r, "error") != "" ? v(r, "error") : v(r, "verdict")
	}'

# how much slower each system ran in the VM than on the host, same n
SLOWDOWN='
	print "| system | messages | CPU µs/msg host | CPU µs/msg VM | VM ÷ host | msgs/s host | msgs/s VM |"
	print "|---|--:|--:|--:|--:|--:|--:|"
	for (i = 1; i <= nl; i++) {
		l = labels[i]
		best = ""
		for (r = 1; r <= nr; r++) {
			if (!match_row(r, "vm", "throughput", "0") || v(r, "label") != l || v(r, "ok") != "true" || !isnum(v(r, "cpu_us_per_msg"))) continue
			h = at("host", "throughput", "0", l, v(r, "n"))
			if (!h || !isnum(v(h, "cpu_us_per_msg")) || v(h, "cpu_us_per_msg") <= 0) continue
			if (best == "" || v(r, "n") + 0 > v(best, "n") + 0) { best = r; bh = h }
		}
		if (best == "") continue
		printf "| %s | %s | %s | %s | %s | %s | %s |\n", l, nfmt(v(best, "n")), f2(v(bh, "cpu_us_per_msg")), f2(v(best, "cpu_us_per_msg")),
			ratio(v(best, "cpu_us_per_msg") / v(bh, "cpu_us_per_msg")), rate(v(bh, "msgs_per_s")), rate(v(best, "msgs_per_s"))
	}
	for (st = 0; st <= 1; st++) {
		c = top("vm", "lateness", st "", "cyclictest-other")
		if (c) printf "\ncyclictest in the VM%s (%s): p50 %s, p99 %s, max %s.", st ? " under stress-ng" : "", v(c, "variant"), lat(v(c, "late_p50_us")), lat(v(c, "late_p99_us")), lat(v(c, "late_max_us"))
		c = top("host", "lateness", st "", "cyclictest-other")
		if (c) printf " On the host%s: p50 %s, p99 %s, max %s.", st ? " under stress-ng" : "", lat(v(c, "late_p50_us")), lat(v(c, "late_p99_us")), lat(v(c, "late_max_us"))
	}
	print ""'

VARIANTS='
	for (i = 1; i <= nl; i++) {
		for (r = 1; r <= nr; r++)
			if (v(r, "env") == env && v(r, "label") == labels[i] && v(r, "variant") != "") { printf "- `%s`: %s\n", labels[i], v(r, "variant"); break }
	}'

# exit status: 1 when any row broke the rule or failed
VERDICT='
	for (r = 1; r <= nr; r++) if (!skipped(r) && bad(r)) { printf "  %s %s %s n=%s%s: %s\n", v(r, "env"), v(r, "label"), v(r, "workload"), v(r, "n"), v(r, "stress") == "1" ? " (stress)" : "", v(r, "verdict") == "" ? "no verdict" : v(r, "verdict"); nb++ }'

env_title() {
	case "$1" in
	vm) echo "In the VM (qemu TCG, dq.ko loaded)" ;;
	host) echo "Natively on the host" ;;
	esac
}

# ------------------------------------------------------------------ markdown
png() { # name: the markdown line for a plot that exists
	[ -f "$REC/$1.png" ] && { echo; echo "![$1](records/bench/$1.png)"; }
	return 0
}

write_md() {
	echo "<!-- SPDX-License-Identifier: LGPL-2.1 OR MIT -->"
	echo "<!-- Generated by bench/report.sh from docs/records/bench/results.csv: do not edit by hand. -->"
	echo "# dq benchmarks"
	echo
	echo "dq against the designs it replaces, run side by side on the same workloads"
	echo "(same seed, same delays, same payloads), by \`make bench\`. Every table and"
	echo "figure below is generated by \`bench/report.sh\` from \`docs/records/bench/results.csv\`"
	echo "(one row per run, with the run's date, machine and sizes in its \`run_*\` columns)."
	echo "Every system runs through the same harness (\`bench/common/bench.c\`): it"
	echo "stamps each payload with its id and due time, checks every release against the"
	echo "due time it recorded itself, and measures lateness as *consumer saw it − due time*"
	echo "on \`CLOCK_MONOTONIC\`. \`make bench\` fails when any run released a message early,"
	echo "lost or duplicated one, delivered a corrupt payload, or died."
	echo
	for e in "${ENVS[@]}"; do
		section "$e" "$HEADER"
	done
	echo
	echo "Systems: **dq-uring** (dq.ko, commands over io_uring; each run's \`variant\` in the CSV"
	echo "names its shape: \`flush-reap-loop\`, one thread that commits and waits with"
	echo "\`dq_flush_reap()\`, SUBMIT linked to \`DQ_URING_CMD_WAIT\` in one \`io_uring_enter()\`,"
	echo "what make bench runs since 2026-12-04; \`reap-thread\`, a consumer thread parked in"
	echo "\`DQ_URING_CMD_WAIT\`, before), **dq-uring-2t** (in the VM, lowest offered rate only:"
	echo "that \`reap-thread\` shape, a producer thread and a consumer thread parked in WAIT,"
	echo "as most applications write it first), **dq-uring-budget** (in the VM, lowest offered"
	echo "rate only: dq-uring with half the VM's p99 target as its slack, \`granularity-us=5000\`),"
	echo "**dq-ioctl** (dq.ko, ioctls, an event loop on \`poll()\`),"
	echo "**dq-user** (libdqshim's in-process engine), **uring-timeout** (one"
	echo "\`IORING_OP_TIMEOUT\` per message), **timerfd** (one timerfd per message, epoll),"
	echo "**redis-Nms** (Redis ZSET shards polled every N ms with an atomic Lua"
	echo "ZRANGEBYSCORE+ZREM), **beanstalkd** (delayed put + reserve), **fifo-sleep** (a bounded FIFO"
	echo "and a pool of worker threads that sleep until each message is due; see Configurations),"
	echo "and **cyclictest** (rt-tests) as the floor for timer → thread wake-up latency."
	echo
	echo "## Goals (issue 18)"
	echo
	echo "Each goal with its measured figure (median of the repetitions, min–max in brackets) and"
	echo "its verdict, from the rows of \`docs/records/bench/results.csv\` (the wheel's from"
	echo "\`docs/records/bench/wheel.txt\`, the Go package's (issue 37) from \`docs/records/bench/go.txt\`; held from 10k to 12 M, and bytes per held message at a size"
	echo "the scale run lacks, from \`bench/held_scale.sh\`'s \`docs/records/bench/held-vm/\` and"
	echo "\`docs/records/bench/held-host/\`, each figure naming its source, date and git revision)."
	echo "A goal this harness cannot measure yet says why."
	echo
	section "" "$GOALS"
	echo
	echo "## How the figures are made"
	echo
	echo "- Every run is repeated (\`DQ_BENCH_REPEAT\`, default 3); the CSV keeps each repetition"
	echo "  (column \`rep\`), the tables give the median, with min–max in brackets where the"
	echo "  repetitions differ, and \"runs\" = completed / made. Correctness counts every repetition."
	echo "- CPU and bytes per message are compared **at equal lateness**: at a fixed offered rate"
	echo "  below saturation (b), and only between systems whose p99 lateness met the target"
	echo "  ($(awk -v h="$TARGET_HOST_US" -v m="$TARGET_VM_US" 'BEGIN { printf "p99 ≤ %g ms natively, ≤ %g ms in the VM under TCG", h / 1000, m / 1000 }'))."
	echo "  A system that missed it is shown as \"missed (p99 X)\"; one that fell more than 1 s"
	echo "  behind the offered rate was cut off there and is shown as \"cannot offer\"."
	echo "- Throughput (a) runs with delays of 0, so it is the rate messages go through, not the"
	echo "  delay window; the submit phase's CPU is given apart."
	echo "- Memory: the harness's own per-message arrays are written (not just allocated) before"
	echo "  any baseline, so they are in no system's figure. The same population rule for every"
	echo "  system: what a system allocates or populates in its setup (dq's pre-populated arena,"
	echo "  a peer's up-front arrays) is counted for the share of its capacity that is held, and"
	echo "  everything it populates later is counted in full: **every system's population is"
	echo "  counted inside the window**."
	echo
	echo "## Correctness"
	echo
	echo "Early = released before its due time; lost = neither released by the end of its"
	echo "grace window nor still held by the system; dup = released twice; corrupt = a payload"
	echo "that is not the one submitted. cyclictest has no messages (n/a). A system that"
	echo "cannot keep due order (fifo-sleep: head-of-line blocking) may miss deadlines; the"
	echo "messages it still holds when the run ends are shown to the harness, checked by id"
	echo "and counted as overdue, not lost."
	for e in "${ENVS[@]}"; do
		echo
		section "$e" "$CORRECTNESS" "$CSV"
	done
	echo
	echo "## Headline: dq against its peers at equal lateness"
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$HEADLINE"
	done
	echo
	echo "## f. Release capacity"
	echo
	echo "N messages submitted ahead of time, all due within the same one second (due times"
	echo "uniform in it; the second starts a lead time after the fill does, long enough for the"
	echo "fill): how many were released within 50 ms of their due time, how many before the"
	echo "second ended, and when the last one came out relative to the end of the second"
	echo "(negative: before). RocketMQ's users report 20k of 500k on time. fifo-sleep is a FIFO"
	echo "whose workers sleep in submission order, not due order; timerfd needs one descriptor"
	echo "per message (skipped where the limit cannot be raised that far)."
	for e in "${ENVS[@]}"; do
		x=$(section "$e" "$CAPACITY")
		[ -n "$x" ] || continue
		echo
		echo "### $(env_title "$e")"
		echo
		echo "$x"
	done
	echo
	echo "## Every system at a glance"
	echo
	echo "msgs/s and CPU from workload a at the system's largest size (CPU: whole-VM per message in"
	echo "the VM, process + server on the host), lateness from workload b without load,"
	echo "early/lost/dup summed over every run of the system, bytes/msg at the largest held size"
	echo "with a figure, idle wake-ups/s from the longest idle window. Not a comparison: the"
	echo "sizes differ between systems (they are given); the headline compares at equal sizes."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$SUMMARY"
	done
	echo
	echo "## a. Throughput"
	echo
	echo "Messages submitted as fast as each system takes them, **due at once** (delays 0), so"
	echo "msgs/s = messages ÷ (last release − first submit) is how fast messages go through,"
	echo "not the delay window; submit/s is the producer's rate alone, and \"of which submit"
	echo "phase\" the CPU per message until the last submit (an event-loop system releases"
	echo "during it too). Not at equal lateness: a saturated system's lateness is its queue."
	echo "CPU per message counts the benchmark process plus the server"
	echo "process (redis-server, beanstalkd); whole-machine CPU also counts kernel work no"
	echo "process is charged for (timer interrupts, softirqs) and is only meaningful in the VM,"
	echo "where nothing else runs. dq also runs at every capped peer's size, so that each ratio"
	echo "compares equal sizes."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$WORKLOAD_A"
		echo
		section "$e" "$THROUGHPUT"
		echo
		x=$(section "$e" "$DQBENCH")
		if [ -n "$x" ]; then
			echo "Cross-check with libdqshim's own \`dqbench --json\` (same size, delays and payload; its"
			echo "msgs/s is the release rate from first to last release):"
			echo
			echo "$x"
		fi
	done
	echo
	echo "## b. Lateness and CPU at a fixed offered rate"
	echo
	echo "A steady stream at each offered rate, delays uniform 0–1 s, released messages timed by"
	echo "the consumer; then the long hold (the lowest rate, delays just under the hold time);"
	echo "then the lowest rate with \`stress-ng --cpu <ncpu>\` hogging every CPU. Achieved: the rate"
	echo "the producer actually kept; a system that fell 1 s behind its schedule was cut off"
	echo "(\"cannot offer\"). The target column is what the headline's equal-lateness rule uses. cyclictest"
	echo "runs for as long, one thread per CPU (see Configurations), both as SCHED_OTHER"
	echo "(what every system here uses) and SCHED_FIFO."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$WORKLOAD_B"
		section "$e" "$LATENESS"
		for p in lateness-cdf-$e lateness-cdf-stress-$e lateness-pct-$e; do png "$p"; done
	done
	echo
	echo "## c. Scale: cost per message as the number held grows"
	echo
	echo "n messages are put in, due far in the future; then a burst of probe messages all due"
	echo "at one instant T. Insert = wall time per probe message with n held; release = time"
	echo "from T until the last probe was released, per probe message (how fast the system"
	echo "drains a burst); release CPU counts from T. \"overdue\": the probes were still held,"
	echo "not released, at the end of the grace window: fifo-sleep's workers are all asleep on"
	echo "the far-future messages ahead of them in the FIFO (head-of-line blocking). \"capped\":"
	echo "not run at that size in this environment (see the sizes at the top); \"skipped\": not"
	echo "enough memory or descriptors."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$WORKLOAD_C"
		section "$e" "$SCALE"
		for p in scale-insert-$e scale-release-$e; do png "$p"; done
	done
	echo
	echo "## d. Idle: messages held, nothing due"
	echo
	echo "With the held messages due far ahead, how often the system wakes up and what it burns"
	echo "while nothing is due. Wake-ups = times the benchmark's and the server's threads were"
	echo "scheduled in (\`/proc/PID/task/*/schedstat\`), plus, for dq.ko, its release engines'"
	echo "hrtimer expiries (\`DQ_IOC_NODE_STATS\`), which wake no task. dq has the long window at"
	echo "every held size, so that each peer's long window has one of the same length and size."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$IDLE"
	done
	echo
	echo "## e. Memory per held message"
	echo
	echo "Bytes per held message beyond its payload, after the fill of workload c, from the"
	echo "growth of the system's own memory only; what a system allocates up front for its"
	echo "capacity (dq's arena and records) is counted for the share of the capacity that is"
	echo "held. The harness's own per-message arrays are written before the baseline and are"
	echo "in no figure. No figure is ever negative: a reading below the payload is reported"
	echo "as no figure (see notes)."
	echo
	echo "dq.ko's ready ring is part of its figure: peer-dq takes dq.ko's default ring"
	echo "(\`ready=0\`: 4096 entries whatever the slot count; the variant in"
	echo "Configurations names it, and runs before the ring was sized apart from the slot"
	echo "count used 65536). One entry per slot, dq.ko's former default, costs 32 B per held"
	echo "message up to 2^20 slots: \`docs/records/bench/ready-ring.txt\` measures both in one boot."
	echo
	echo "- **memcg** (the VM): each run's peer and server live in a fresh cgroup v2; the figure"
	echo "  is the growth of its \`memory.current\`, everything the kernel charges to them: their"
	echo "  pages and the kernel objects allocated with \`__GFP_ACCOUNT\` (struct file, epoll"
	echo "  items, io_uring requests, sockets, dq.ko's arena and records). Kernel objects"
	echo "  allocated without it (e.g. a timerfd's context) are not seen, which flatters those"
	echo "  systems, not dq. ±: \`memory.current\` moves in per-CPU batches of 64 pages"
	echo "  (MEMCG_CHARGE_BATCH), so the growth is exact to within one batch per CPU."
	echo "- **smaps** (the host, where the cgroups belong to the machine's owner): the growth of"
	echo "  the resident set (\`/proc/PID/smaps_rollup\`) of the process and its server. It cannot"
	echo "  see kernel objects, so systems that keep their per-message state there (timerfd,"
	echo "  uring-timeout, dq.ko) get no figure on the host."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$MEMORY"
		png "scale-memory-$e"
	done
	echo
	echo "## Where TCG emulation distorts the figures"
	echo
	# up to its first "## " heading: the rest is bench/ notes, not generated
	sed '/^<!--/,/-->/d' "$HERE/tcg-notes.md" | sed '/^## /,$d'
	if [ ${#ENVS[@]} -eq 2 ]; then
		echo
		echo "TCG slowdown per system, workload a at the same size on both (process + server CPU"
		echo "per message):"
		echo
		section vm "$SLOWDOWN"
	fi
	if [ -s "$HELD" ]; then
		echo
		echo "## Held from 10k to 12 M"
		echo
		echo "\`bench/held_scale.sh\` (\`make -C bench held\`, part of \`make bench\`): peer-dq's"
		echo "pending workload alone at each size, 500 B payloads due an hour ahead, then 10k probe"
		echo "messages due at one instant: probe insert, release and release CPU per message, and"
		echo "bytes per held message beyond the payload (memcg in the VM, smaps natively). The VM"
		echo "(the kernel backend over io_uring, \`max_arena_bytes\` 8 GiB) is sized for the largest"
		echo "size from the host's \`/proc/meminfo\`; a size it cannot hold is not run, and said."
		echo "The 12 M goal's rule (that of the wheel goal): the figure at 12 M ≤ 2× the one at 10k,"
		echo "for probe insert, release and release CPU alike."
		for e in vm host; do
			[ -s "$REC/held-$e/held.txt" ] || continue
			echo
			echo "### $( [ "$e" = vm ] && echo "In the VM (dq.ko)" || echo "Natively (embedded engine)"), \`docs/records/bench/held-$e/\`"
			echo
			awk -v e="$e" '$1 == "meta" && $2 == e { k = $3; x = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", x); M[k] = x }
				$1 == "skip" && $2 == e { x = $0; sub(/^[^ ]+ [^ ]+ [^ ]+ /, "", x); S = S sprintf("- not measured at %s held: %s\n", $3, x) }
				END {
					if ("git" in M) printf "- %s, git %s%s, host `%s` (%s CPUs, %s, %s MB RAM, kernel %s%s)%s; sizes %s, %s repeats; exit %s\n", M["date"], M["git"], ("src" in M) ? " (dq sources as of " M["src"] ")" : "", M["host"], M["ncpu"], M["cpu"], M["host_mem_mb"], M["kernel"], ("load" in M) ? "; 1-minute load " M["load"] " at start, end" : "", ("vm_mem_mb" in M) ? sprintf(", VM %.0f GiB (host had %.1f GiB available)", M["vm_mem_mb"] / 1024, M["host_avail_mb"] / 1024) : "", M["sizes"], M["repeats"], M["exit"]
					else printf "- %s (no held.meta: a run from before it recorded git and machine)\n", M["date"]
					printf "%s", S
				}' "$HELD"
			echo
			echo '```'
			cat "$REC/held-$e/held.txt"
			echo '```'
		done
	fi
	if [ -f "$REC/wheel.txt" ]; then
		echo
		echo "## The release structure alone"
		echo
		echo "\`bench/wheel.sh\` (\`make -C bench wheel\`, part of \`make bench\`; its own file, \`docs/records/bench/wheel.txt\`):"
		echo "the timing wheel (\`kmod/shared/dq_wheel.c\`) built natively as libdqshim builds it,"
		echo "this commit's against an older one, under N messages in flight with delays uniform"
		echo "in [0, 1 s). Instructions per message (insert + release, callgrind), the cache"
		echo "model's last-level misses and the bytes are deterministic (or nearly: RSS); the ns"
		echo "per message are medians of a few runs on a shared 2-core machine, noisy: at 4 M in"
		echo "flight the spread between runs of one variant can exceed the difference between"
		echo "variants, so read them as a direction, not a ratio. The floor row is the same"
		echo "record touches with no wheel (\`wheel_bench --floor\`): at 4 M in flight they are"
		echo "cache misses any release structure pays, so the wheel's own cost is after − floor."
		echo "Bytes per record are the"
		echo "embedded engine's per slot (24-byte wheel node + 12-byte cold record, one mapping);"
		echo "dq.ko's are 40 B (the same node + a 16-byte cold record). The library's calls with the engine under"
		echo "them, per message: \`docs/records/bench/semantics.txt\` (\`bench/semantics.sh\`)."
		echo
		echo '```'
		cat "$REC/wheel.txt"
		echo '```'
	fi
	echo
	echo "## Configurations"
	for e in "${ENVS[@]}"; do
		echo
		echo "$(env_title "$e"):"
		echo
		section "$e" "$VARIANTS"
	done
	echo
	echo "## Reproducing"
	echo
	echo '```'
	echo "make bench                 # host part, VM part, then this file; fails on any violation"
	echo "make bench-quick           # the same with small sizes"
	echo "make -C bench host         # native part only"
	echo "make -C bench report       # results.csv and this file from bench/results/"
	echo "bench/report.sh --check    # is this file what results.csv gives?"
	echo "make -C bench test         # does the harness catch early, lost, late? (bench/test.sh)"
	echo "bench/wheel.sh --write     # docs/records/bench/wheel.txt: the release structure alone"
	echo "make -C bench held         # held 10k to 12 M: docs/records/bench/held-{vm,host}/ (via report)"
	echo '```'
	echo
	echo "Raw results: \`docs/records/bench/results.csv\`. Sizes can be changed with \`DQ_BENCH_*\`"
	echo "variables (see \`bench/run.sh\`); a run with any of them set is marked \"reduced\"."
}

write_md > "$WORK/benchmarks.md"

rc=0
if [ "$MODE" = check ]; then
	if ! diff -u "$DOCS/benchmarks.md" "$WORK/benchmarks.md" > "$WORK/diff"; then
		echo "report.sh: $DOCS/benchmarks.md is not what $CSV gives:" >&2
		head -n 40 "$WORK/diff" >&2
		rc=1
	fi
	[ "$rc" = 0 ] && echo "report.sh: docs/benchmarks.md matches $CSV"
	exit "$rc"
fi

cp "$WORK/benchmarks.md" "$DOCS/benchmarks.md"
echo "report.sh: wrote $DOCS/benchmarks.md${PLOTS[*]:+, ${#PLOTS[@]} plots}$([ "$MODE" = full ] && echo ", $CSV")"
[ -s "$WORK/gnuplot.log" ] && sed 's/^/gnuplot: /' "$WORK/gnuplot.log" >&2

BAD=$(awk -v target_host="$TARGET_HOST_US" -v target_vm="$TARGET_VM_US" -f "$TABLES" -f <(printf 'function main(   r, nb) {\n%s\n}\n' "$VERDICT") "$CSV")
if [ -n "$BAD" ]; then
	echo "report.sh: FAILED: $CSV holds correctness violations or failed runs:" >&2
	printf '%s\n' "$BAD" >&2
	rc=1
fi
exit "$rc"
