#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
# shellcheck disable=SC2016 # the awk programs are single-quoted on purpose
#
# bench/report.sh - turn the JSON lines of bench/run.sh into
# docs/benchmarks.md, docs/bench/results.csv and PNG plots (gnuplot).
#
# Usage: bench/report.sh [--results DIR] [--docs DIR]
#   DIR/vm/ and DIR/host/ (either may be missing) each hold results.jsonl,
#   env.json and cdf/ as run.sh writes them.  Default: bench/results, docs.

set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(dirname "$HERE")
RESULTS=$HERE/results
DOCS=$TOP/docs

while [ $# -gt 0 ]; do
	case "$1" in
	--results) RESULTS=$2; shift 2 ;;
	--docs) DOCS=$2; shift 2 ;;
	*) echo "usage: $0 [--results DIR] [--docs DIR]" >&2; exit 2 ;;
	esac
done

ENVS=()
for e in vm host; do
	[ -s "$RESULTS/$e/results.jsonl" ] && ENVS+=("$e")
done
if [ ${#ENVS[@]} -eq 0 ]; then
	echo "report.sh: no results under $RESULTS/{vm,host}; run bench/run.sh first" >&2
	exit 1
fi
mkdir -p "$DOCS/bench"
CSV=$DOCS/bench/results.csv
MD=$DOCS/benchmarks.md
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dq-report.XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT

# the column order of results.csv (and of every table's lookups)
COLS="env system label variant workload stress n probe_n rate duration_s payload
sent delivered early lost dup corrupt errors wall_s msgs_per_s submit_per_s
send_lag_max_ms cpu_us_per_msg cpu_sys_us_per_msg cpu_self_s cpu_server_s
late_p50_us late_p90_us late_p99_us late_p999_us late_max_us late_mean_us
fill_ns_per_msg fill_cpu_us_per_msg insert_ns_per_msg insert_cpu_us_per_msg
release_ns_per_msg release_cpu_us_per_msg mem_bytes_per_msg mem_method
rss_self_delta rss_server_delta sys_used_delta slab_delta idle_s
idle_wakeups_per_s idle_cpu_us_per_s idle_sys_cpu_us_per_s idle_extra_wakeups
ok error notes"
COLS=$(echo "$COLS" | tr -s ' \n' '  ' | sed 's/ $//')

# ------------------------------------------------------------------ CSV
# A flat-JSON reader in awk: every line is one object of strings, numbers,
# booleans and nulls (no nesting), as bench.c and run.sh write them.
for e in "${ENVS[@]}"; do
	cat "$RESULTS/$e/results.jsonl"
done | awk -v cols="$COLS" '
	function parse(line,   rest, k, v, i, c, n) {
		delete J
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
	}
	BEGIN { nc = split(cols, C, " "); for (i = 1; i <= nc; i++) printf "%s%s", C[i], i < nc ? "," : "\n" }
	/^\{/ {
		parse($0)
		for (i = 1; i <= nc; i++) printf "%s%s", J[C[i]], i < nc ? "," : "\n"
	}' > "$CSV"

# env.json fields, as shell-safe "key=value" lines
env_field() { # env key
	local f=$RESULTS/$1/env.json
	[ -f "$f" ] || return 0
	if grep -q "\"$2\":\"" "$f"; then
		sed -n "s/.*\"$2\":\"\([^\"]*\)\".*/\1/p" "$f" | head -n 1
	else
		sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" "$f" | head -n 1
	fi
}

# ------------------------------------------------------------------ plots
HAVE_GNUPLOT=0
command -v gnuplot > /dev/null && HAVE_GNUPLOT=1
PLOTS=()

gp_cdf() { # env stress(0/1) out.png title
	local e=$1 st=$2 out=$3 title=$4 tag="" f label plot="" n=0
	[ "$st" = 1 ] && tag=-stress
	for f in "$RESULTS/$e"/cdf/*-lateness"$tag".txt; do
		[ -s "$f" ] || continue
		label=$(basename "$f" .txt)
		label=${label%-lateness"$tag"}
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
		}' "$CSV"
	for s in "$WORK"/scale-"$e"-"$col"-*.dat; do
		[ "$(wc -l < "$s")" -ge 2 ] || continue
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
			printf "%s %s %s %s %s\n", $idx["label"], $idx["late_p50_us"] / 1000, $idx["late_p99_us"] / 1000,
				($idx["late_p999_us"] == "" ? $idx["late_max_us"] : $idx["late_p999_us"]) / 1000, $idx["late_max_us"] / 1000
		}' "$CSV" > "$dat"
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

if [ "$HAVE_GNUPLOT" = 1 ]; then
	rm -f "$DOCS"/bench/*.png
	for e in "${ENVS[@]}"; do
		gp_cdf "$e" 0 "$DOCS/bench/lateness-cdf-$e.png" "Lateness CDF, steady rate ($e)"
		gp_cdf "$e" 1 "$DOCS/bench/lateness-cdf-stress-$e.png" "Lateness CDF under stress-ng CPU load ($e)"
		gp_pct "$e" 0 "$DOCS/bench/lateness-pct-$e.png" "Lateness percentiles per system, steady rate ($e)"
		gp_scale "$e" insert_ns_per_msg "$DOCS/bench/scale-insert-$e.png" \
			"Insert cost per message vs messages held ($e)" "ns per message (wall)"
		gp_scale "$e" release_ns_per_msg "$DOCS/bench/scale-release-$e.png" \
			"Release (burst drain) time per message vs messages held ($e)" "ns per message (wall)"
		gp_scale "$e" mem_bytes_per_msg "$DOCS/bench/scale-memory-$e.png" \
			"Bytes per held message beyond the payload vs messages held ($e)" "bytes"
	done
else
	echo "report.sh: gnuplot not installed, no plots" >&2
fi

# ------------------------------------------------------------------ markdown
# Every table below is an awk program over the CSV; "lookup" helpers index
# rows by env|workload|stress|label|n.
TABLES=$WORK/tables.awk
cat > "$TABLES" <<'EOF'
function v(r, c) { return R[r, idx[c]] }
function f0(x) { return x == "" ? "–" : sprintf("%.0f", x) }
function f1(x) { return x == "" ? "–" : (x + 0 >= 100 ? sprintf("%.0f", x) : sprintf("%.1f", x)) }
function f2(x) { return x == "" ? "–" : (x + 0 >= 10 ? f1(x) : sprintf("%.2f", x)) }
# lateness in us, shown in the unit that fits
function lat(x) {
	if (x == "") return "–"
	x += 0
	if (x >= 1e6) return sprintf("%.2f s", x / 1e6)
	if (x >= 1e3) return sprintf("%.1f ms", x / 1e3)
	return sprintf("%.0f µs", x)
}
function rate(x) {
	if (x == "") return "–"
	x += 0
	if (x >= 1e6) return sprintf("%.2f M", x / 1e6)
	if (x >= 1e4) return sprintf("%.0f k", x / 1e3)
	if (x >= 1e3) return sprintf("%.1f k", x / 1e3)
	return sprintf("%.0f", x)
}
function nfmt(x) {
	if (x == "") return "–"
	x += 0
	if (x >= 1e6 && x % 1e6 == 0) return sprintf("%dM", x / 1e6)
	if (x >= 1e3 && x % 1e3 == 0) return sprintf("%dk", x / 1e3)
	return x
}
function ratio(x) {
	if (x == "" || x <= 0) return "–"
	if (x >= 100) return sprintf("%.0f×", x)
	if (x >= 10) return sprintf("%.1f×", x)
	return sprintf("%.2f×", x)
}
function eld(r) { return f0(v(r, "early")) " / " f0(v(r, "lost")) " / " f0(v(r, "dup")) }
function why(r,   e, n) {
	e = v(r, "error"); n = v(r, "notes")
	if (e != "") return e
	return n
}
function skipped(r) { return v(r, "ok") != "true" && v(r, "sent") == "" }
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
	key = $idx["env"] "|" $idx["workload"] "|" $idx["stress"] "|" $idx["label"] "|" $idx["n"]
	K[key] = nr
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
# rows of env/workload/stress in label order (into ROWS[1..n]); returns n
function rows(env, wl, st,   i, r, n) {
	n = 0
	for (i = 1; i <= nl; i++)
		for (r = 1; r <= nr; r++)
			if (R[r, idx["env"]] == env && R[r, idx["workload"]] == wl &&
			    (st == "" || R[r, idx["stress"]] == st) && R[r, idx["label"]] == labels[i])
				ROWS[++n] = r
	return n
}
EOF

# each section is a small awk main() appended to the helpers
section() { # env, awk body of main()
	awk -v env="$1" -f "$TABLES" -f <(printf 'function main(   n, i, r, j, k, x, y, ref, w, best, bl) {\n%s\n}\n' "$2") "$CSV"
}

THROUGHPUT='
	n = rows(env, "throughput", "0")
	if (!n) return
	vm = env == "vm"
	print "| system | messages | msgs/s | submit/s | CPU µs/msg (process+server) |" (vm ? " CPU µs/msg (whole VM) |" : "") " lateness p50 | p99 | p99.9 | max | early / lost / dup | notes |"
	print "|---|--:|--:|--:|--:|" (vm ? "--:|" : "") "--:|--:|--:|--:|:-:|---|"
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (v(r, "system") == "dqbench") continue
		if (skipped(r)) { printf "| %s | – | – | – | – |%s – | – | – | – | – | %s |\n", v(r, "label"), vm ? " – |" : "", why(r); continue }
		printf "| %s | %s | %s | %s | %s |%s %s | %s | %s | %s | %s | %s |\n", v(r, "label"), nfmt(v(r, "n")),
			rate(v(r, "msgs_per_s")), rate(v(r, "submit_per_s")), f2(v(r, "cpu_us_per_msg")), vm ? " " f2(v(r, "cpu_sys_us_per_msg")) " |" : "",
			lat(v(r, "late_p50_us")), lat(v(r, "late_p99_us")), lat(v(r, "late_p999_us")), lat(v(r, "late_max_us")), eld(r), why(r)
	}'

LATENESS='
	for (st = 0; st <= 1; st++) {
		n = rows(env, "lateness", st "")
		if (!n) continue
		print ""
		print (st ? "**Under stress-ng** (`stress-ng --cpu <every CPU>` running alongside):" : "**No other load:**")
		print ""
		print "| system | messages | max send lag | CPU µs/msg (process+server) | lateness p50 | p90 | p99 | p99.9 | max | early / lost / dup | notes |"
		print "|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|---|"
		for (i = 1; i <= n; i++) {
			r = ROWS[i]
			if (skipped(r)) { printf "| %s | – | – | – | – | – | – | – | – | – | %s |\n", v(r, "label"), why(r); continue }
			printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v(r, "label"), nfmt(v(r, "sent")),
				v(r, "send_lag_max_ms") == "" ? "–" : lat(v(r, "send_lag_max_ms") * 1000), f2(v(r, "cpu_us_per_msg")), lat(v(r, "late_p50_us")), lat(v(r, "late_p90_us")),
				lat(v(r, "late_p99_us")), lat(v(r, "late_p999_us")), lat(v(r, "late_max_us")), v(r, "system") == "cyclictest" ? "–" : eld(r), why(r)
		}
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
				key = env "|pending|0|" labels[i] "|" NS[j]
				if (!(key in K)) { line = line " |"; continue }
				r = K[key]; any = 1
				if (v(r, "lost") + 0 > 0 && k != 1) x = "lost " f0(v(r, "lost"))
				else if (skipped(r)) x = (v(r, "error") ~ /^not run/ ? "capped" : "skipped")
				else x = (k == 4 ? lat(v(r, what[k])) : (k == 3 ? f2(v(r, what[k])) : f0(v(r, what[k]))))
				line = line " " x " |"
			}
			if (any) print line
		}
	}'

IDLE='
	# the idle window ran at the largest n with the long window
	best = 0
	for (r = 1; r <= nr; r++) if (v(r, "env") == env && v(r, "workload") == "pending" && v(r, "idle_s") + 0 > best) best = v(r, "idle_s") + 0
	if (!best) return
	vm = env == "vm"
	print "| system | held | window | wake-ups/s | of which kernel timer fires | CPU µs/s (process+server) |" (vm ? " CPU µs/s (whole VM) |" : "")
	print "|---|--:|--:|--:|--:|--:|" (vm ? "--:|" : "")
	for (i = 1; i <= nl; i++) {
		bn = ""; br = 0
		for (r = 1; r <= nr; r++)
			if (v(r, "env") == env && v(r, "workload") == "pending" && v(r, "label") == labels[i] && v(r, "idle_s") != "" && (br == 0 || v(r, "n") + 0 > bn + 0)) { bn = v(r, "n"); br = r }
		if (!br) continue
		r = br
		printf "| %s | %s | %.0f s | %s | %s | %s |%s\n", labels[i], nfmt(v(r, "n")), v(r, "idle_s"), f2(v(r, "idle_wakeups_per_s")),
			v(r, "idle_extra_wakeups") == "" ? "–" : f0(v(r, "idle_extra_wakeups")), f0(v(r, "idle_cpu_us_per_s")), vm ? " " f0(v(r, "idle_sys_cpu_us_per_s")) " |" : ""
	}'

MEMORY='
	n = rows(env, "pending", "")
	if (!n) return
	vm = env == "vm"
	print "| system | held | bytes/msg beyond the 500 B payload | measured as |" (vm ? " RSS+slab method |" : "") " process RSS Δ | server RSS Δ | unreclaimable slab Δ |" (vm ? " machine used Δ |" : "")
	print "|---|--:|--:|---|" (vm ? "--:|" : "") "--:|--:|--:|" (vm ? "--:|" : "")
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (skipped(r) || v(r, "mem_bytes_per_msg") == "") continue
		printf "| %s | %s | %s | %s |%s %s | %s | %s |%s\n", v(r, "label"), nfmt(v(r, "n")), f0(v(r, "mem_bytes_per_msg")), v(r, "mem_method"),
			vm ? " " f0(v(r, "mem_rss_bytes_per_msg")) " |" : "",
			mb(v(r, "rss_self_delta")), mb(v(r, "rss_server_delta")), mb(v(r, "slab_delta")), vm ? " " mb(v(r, "sys_used_delta")) " |" : ""
	}
}
function mb(x) { return x == "" ? "–" : sprintf("%.1f MB", x / 1048576) '

# the issue's per-system summary: one line per system, every metric
SUMMARY='
	print "| system | msgs/s | CPU µs/msg | lateness p50 | p99 | p99.9 | max | early / lost / dup | bytes/msg | idle wake-ups/s |"
	print "|---|--:|--:|--:|--:|--:|--:|:-:|--:|--:|"
	for (i = 1; i <= nl; i++) {
		l = labels[i]
		if (l ~ /^dqbench/) continue
		tp = find(env, "throughput", "0", l); la = find(env, "lateness", "0", l); pm = idlerow(env, l)
		if (!tp && !la && !pm) continue
		el = tp ? eld(tp) : "–"
		if (la && l !~ /^cyclictest/) el = el " (a); " eld(la) " (b)"
		cpu = tp ? (env == "vm" && v(tp, "cpu_sys_us_per_msg") != "" ? v(tp, "cpu_sys_us_per_msg") : v(tp, "cpu_us_per_msg")) : ""
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", l, tp ? rate(v(tp, "msgs_per_s")) : "–", f2(cpu),
			la ? lat(v(la, "late_p50_us")) : "–", la ? lat(v(la, "late_p99_us")) : "–", la ? lat(v(la, "late_p999_us")) : "–",
			la ? lat(v(la, "late_max_us")) : "–", el, pm ? f0(v(pm, "mem_bytes_per_msg")) : "–", pm ? f2(v(pm, "idle_wakeups_per_s")) : "–"
	}
}
function find(env, wl, st, l,   r) {
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == env && v(r, "workload") == wl && v(r, "stress") == st && v(r, "label") == l && !skipped(r)) return r
	return 0
}
function idlerow(env, l,   r, b) {
	b = 0
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == env && v(r, "workload") == "pending" && v(r, "label") == l && v(r, "idle_s") != "" && !skipped(r) && (!b || v(r, "n") + 0 > v(b, "n") + 0)) b = r
	return b '

# headline: dq against each peer, in one environment
HEADLINE='
	ref = (env == "vm") ? "dq-uring" : "dq-user"
	tref = find(env, "throughput", "0", ref); lref = find(env, "lateness", "0", ref); pref = idlerow(env, ref)
	if (!tref && !lref) { print "_No " ref " results in this environment._"; return }
	cpucol = (env == "vm") ? "cpu_sys_us_per_msg" : "cpu_us_per_msg"
	print "Reference: **" ref "**. Each ratio is how many times better dq does than the peer (above 1: dq wins; below 1: the peer wins):"
	print "throughput = dq msgs/s ÷ peer msgs/s; CPU = peer CPU/msg ÷ dq CPU/msg (" (env == "vm" ? "whole-VM CPU, which includes servers, kernel timers and softirqs" : "process + server CPU") ");"
	print "p99/max lateness = peer ÷ dq (steady rate, no load); memory = peer bytes/msg ÷ dq bytes/msg (at the idle run size); idle = wake-ups/s of each with the same messages held."
	print "The dq-ioctl and dq-user rows compare the other dq paths with the reference; the worst ratio is taken over the peers only."
	print ""
	print "| peer | throughput | CPU per msg | p99 lateness | max lateness | bytes/msg | idle wake-ups/s (peer vs dq) |"
	print "|---|--:|--:|--:|--:|--:|--:|"
	worst = 1e99; wl = ""
	for (i = 1; i <= nl; i++) {
		l = labels[i]
		if (l == ref || l ~ /^dqbench/ || l ~ /^cyclictest/) continue
		t = find(env, "throughput", "0", l); la = find(env, "lateness", "0", l); p = idlerow(env, l)
		if (!t && !la && !p) continue
		a = (t && tref && v(t, "msgs_per_s") > 0) ? v(tref, "msgs_per_s") / v(t, "msgs_per_s") : ""
		b = (t && tref && v(tref, cpucol) > 0) ? v(t, cpucol) / v(tref, cpucol) : ""
		c = (la && lref && v(lref, "late_p99_us") > 0 && v(la, "lost") + 0 == 0) ? v(la, "late_p99_us") / v(lref, "late_p99_us") : ""
		d = (la && lref && v(lref, "late_max_us") > 0 && v(la, "lost") + 0 == 0) ? v(la, "late_max_us") / v(lref, "late_max_us") : ""
		e = (p && pref && v(pref, "mem_bytes_per_msg") > 0 && v(p, "mem_bytes_per_msg") > 0) ? v(p, "mem_bytes_per_msg") / v(pref, "mem_bytes_per_msg") : ""
		w = (p && pref) ? f2(v(p, "idle_wakeups_per_s")) " vs " f2(v(pref, "idle_wakeups_per_s")) : "–"
		printf "| %s | %s | %s | %s | %s | %s | %s |\n", l, ratio(a), ratio(b), ratio(c), ratio(d), ratio(e), w
		if (l !~ /^dq-/) {
			if (a != "" && a < worst) { worst = a; wl = "throughput against " l }
			if (b != "" && b < worst) { worst = b; wl = "CPU per message against " l }
			if (c != "" && c < worst) { worst = c; wl = "p99 lateness against " l }
			if (e != "" && e < worst) { worst = e; wl = "bytes per message against " l }
		}
	}
	if (wl != "") { print ""; printf "Worst ratio for dq in this table: **%s, %s**.\n", ratio(worst), wl }
}
function find(env, wl, st, l,   r) {
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == env && v(r, "workload") == wl && v(r, "stress") == st && v(r, "label") == l && !skipped(r)) return r
	return 0
}
function idlerow(env, l,   r, b) {
	b = 0
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == env && v(r, "workload") == "pending" && v(r, "label") == l && v(r, "idle_s") != "" && !skipped(r) && v(r, "ok") == "true" && (!b || v(r, "n") + 0 > v(b, "n") + 0)) b = r
	return b '

DQBENCH='
	n = rows(env, "throughput", "0")
	any = 0
	for (i = 1; i <= n; i++) if (v(ROWS[i], "system") == "dqbench") any = 1
	if (!any) return
	print "| run | backend/path | messages | release msgs/s | submit/s | CPU µs/msg | lateness p50 | p99 | p99.9 | max | early / lost / dup | notes |"
	print "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|:-:|---|"
	for (i = 1; i <= n; i++) {
		r = ROWS[i]
		if (v(r, "system") != "dqbench") continue
		printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", v(r, "label"), v(r, "variant"), nfmt(v(r, "n")),
			rate(v(r, "msgs_per_s")), rate(v(r, "submit_per_s")), f2(v(r, "cpu_us_per_msg")), lat(v(r, "late_p50_us")),
			lat(v(r, "late_p99_us")), lat(v(r, "late_p999_us")), lat(v(r, "late_max_us")), skipped(r) ? "–" : eld(r), v(r, "error")
	}'

# how much slower each system ran in the VM than on the host
SLOWDOWN='
	print "| system | CPU µs/msg host | CPU µs/msg VM | VM ÷ host | msgs/s host | msgs/s VM |"
	print "|---|--:|--:|--:|--:|--:|"
	for (i = 1; i <= nl; i++) {
		l = labels[i]
		h = find("host", "throughput", "0", l); g = find("vm", "throughput", "0", l)
		if (!h || !g || v(h, "cpu_us_per_msg") == "" || v(g, "cpu_us_per_msg") == "") continue
		printf "| %s | %s | %s | %s | %s | %s |\n", l, f2(v(h, "cpu_us_per_msg")), f2(v(g, "cpu_us_per_msg")),
			ratio(v(g, "cpu_us_per_msg") / v(h, "cpu_us_per_msg")), rate(v(h, "msgs_per_s")), rate(v(g, "msgs_per_s"))
	}
	for (st = 0; st <= 1; st++) {
		c = find("vm", "lateness", st "", "cyclictest-other")
		if (c) printf "\ncyclictest in the VM%s (SCHED_OTHER, 1 ms period): p50 %s, p99 %s, max %s.", st ? " under stress-ng" : "", lat(v(c, "late_p50_us")), lat(v(c, "late_p99_us")), lat(v(c, "late_max_us"))
		c = find("host", "lateness", st "", "cyclictest-other")
		if (c) printf " On the host%s: p50 %s, p99 %s, max %s.", st ? " under stress-ng" : "", lat(v(c, "late_p50_us")), lat(v(c, "late_p99_us")), lat(v(c, "late_max_us"))
	}
	print ""
}
function find(env, wl, st, l,   r) {
	for (r = 1; r <= nr; r++)
		if (v(r, "env") == env && v(r, "workload") == wl && v(r, "stress") == st && v(r, "label") == l && !skipped(r)) return r
	return 0 '

VARIANTS='
	for (i = 1; i <= nl; i++) {
		for (r = 1; r <= nr; r++)
			if (v(r, "env") == env && v(r, "label") == labels[i] && v(r, "variant") != "") { printf "- `%s`: %s\n", labels[i], v(r, "variant"); break }
	}'

env_title() {
	case "$1" in
	vm) echo "In the VM (qemu TCG, Debian 6.1 guest, dq.ko loaded)" ;;
	host) echo "Natively on the host" ;;
	esac
}

{
	echo "<!-- SPDX-License-Identifier: LGPL-2.1 OR MIT -->"
	echo "<!-- Generated by bench/report.sh from bench/run.sh results: do not edit by hand. -->"
	echo "# dq benchmarks"
	echo
	echo "dq against the designs it replaces, run side by side on the same workloads"
	echo "(same seed, same delays, same 500 B payloads), in one \`make bench\`."
	echo "Every system runs through the same harness (\`bench/common/bench.c\`): it"
	echo "stamps each payload with its id and due time, checks every release, and"
	echo "measures lateness as *consumer saw it − due time* on \`CLOCK_MONOTONIC\`."
	echo
	for e in "${ENVS[@]}"; do
		q=$(env_field "$e" quick)
		printf -- '- **%s**: %s UTC, hostname `%s`, %s CPUs (%s), %s MB RAM, kernel %s, redis %s, beanstalkd %s, git %s%s.\n' \
			"$e" "$(env_field "$e" date | tr T ' ' | tr -d Z)" "$(env_field "$e" host)" "$(env_field "$e" ncpu)" \
			"$(env_field "$e" cpu)" "$(env_field "$e" mem_mb)" "$(env_field "$e" kernel)" \
			"$(env_field "$e" redis)" "$(env_field "$e" beanstalkd)" "$(env_field "$e" git)" \
			"$([ "$q" = 1 ] && echo ' — **quick run (bench-quick): small sizes, smoke test only**')"
		printf '  Sizes: throughput %s msgs; lateness %s msg/s for %s s; held %s (probe burst %s); idle %s held for %s s.\n' \
			"$(env_field "$e" n)" "$(env_field "$e" rate)" "$(env_field "$e" lat_s)" \
			"$(env_field "$e" scale_ns)" "$(env_field "$e" probe)" "$(env_field "$e" idle_n)" "$(env_field "$e" idle_s)"
		c=$(env_field "$e" caps)
		[ -n "$c" ] && printf '  Capped to fit the time budget: %s.\n' "$c"
	done
	echo
	echo "Systems: **dq-uring** (dq.ko, commands over io_uring, a consumer thread parked in"
	echo "\`DQ_URING_CMD_WAIT\`), **dq-ioctl** (dq.ko, ioctls, an event loop on \`poll()\`),"
	echo "**dq-user** (libdqshim's in-process engine), **uring-timeout** (one"
	echo "\`IORING_OP_TIMEOUT\` per message), **timerfd** (one timerfd per message, epoll),"
	echo "**redis-Nms** (Redis ZSET shards polled every N ms with an atomic Lua"
	echo "ZRANGEBYSCORE+ZREM), **beanstalkd** (delayed put + reserve), **fifo-sleep** (a bounded FIFO"
	echo "and 32 worker threads that sleep until each message is due), and **cyclictest**"
	echo "(rt-tests) as the floor for timer → thread wake-up latency."
	echo
	echo "## Headline: dq / peer ratios"
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$HEADLINE"
	done
	echo
	echo "## Every system at a glance"
	echo
	echo "msgs/s and CPU from workload a (CPU: whole-VM per message in the VM, process + server on the host),"
	echo "lateness from workload b without load, early/lost/dup from a and b, bytes/msg and idle"
	echo "wake-ups/s from the largest held-messages run (c–e)."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$SUMMARY"
	done
	echo
	echo "## a. Throughput"
	echo
	echo "Messages submitted as fast as each system takes them, each due 0–1 s (uniform) after"
	echo "its submission. msgs/s = messages ÷ (last release − first submit), so it includes the"
	echo "last message's delay; submit/s is the producer's rate alone. CPU per message"
	echo "counts the benchmark process plus the server process (redis-server, beanstalkd);"
	echo "whole-machine CPU also counts kernel work no process is charged for (timer interrupts,"
	echo "softirqs) and is only meaningful in the VM, where nothing else runs."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$THROUGHPUT"
		echo
		x=$(section "$e" "$DQBENCH")
		if [ -n "$x" ]; then
			echo "Cross-check with libdqshim's own \`dqbench --json\` (same N, delays and payload; its"
			echo "msgs/s is the release rate from first to last release):"
			echo
			echo "$x"
		fi
	done
	echo
	echo "## b. Lateness at a steady rate"
	echo
	echo "A steady stream, delays uniform 100 ms – 2 s, released messages timed by the consumer."
	echo "Max send lag: how far behind its schedule the producer fell (a system that cannot"
	echo "take the rate pushes back)."
	echo "Then the same with \`stress-ng --cpu <ncpu>\` hogging every CPU. cyclictest runs for"
	echo "as long, with one thread per CPU waking every 1 ms, both as SCHED_OTHER (what every"
	echo "system here uses) and SCHED_FIFO 95."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		section "$e" "$LATENESS"
		for p in lateness-cdf-$e lateness-cdf-stress-$e lateness-pct-$e; do
			[ -f "$DOCS/bench/$p.png" ] && { echo; echo "![$p](bench/$p.png)"; }
		done
	done
	echo
	echo "## c. Scale: cost per message as the number held grows"
	echo
	echo "n messages are put in, due in an hour (± 60 s); then a burst of probe messages all due"
	echo "at one instant T. Insert = wall time per probe message with n held; release = time"
	echo "from T until the last probe was released, per probe message (how fast the system"
	echo "drains a burst); release CPU counts from T. \"lost\" means the probes were not"
	echo "released within 30 s of T (5 s for fifo-sleep): fifo-sleep's workers are all asleep on the far-future"
	echo "messages ahead of them in the FIFO (head-of-line blocking), so nothing behind them"
	echo "comes out until those are due. \"capped\": not run at that size in this environment (see"
	echo "the sizes at the top); \"skipped\": not enough memory or descriptors."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		section "$e" "$SCALE"
		for p in scale-insert-$e scale-release-$e; do
			[ -f "$DOCS/bench/$p.png" ] && { echo; echo "![$p](bench/$p.png)"; }
		done
	done
	echo
	echo "## d. Idle: messages held, nothing due"
	echo
	echo "With the held messages due in an hour, how often the system wakes up and what it burns"
	echo "while nothing is due. Wake-ups = times the benchmark's and the server's threads were"
	echo "scheduled in (\`/proc/PID/task/*/schedstat\`), plus, for dq.ko, its release engines'"
	echo "hrtimer expiries (\`DQ_IOC_NODE_STATS\`), which wake no task."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$IDLE"
	done
	echo
	echo "## e. Memory per held message"
	echo
	echo "Bytes per held message beyond its 500 B payload, after the fill of workload c. In the VM"
	echo "it is the growth of the machine's used memory (\`MemTotal − MemFree − Buffers − Cached −"
	echo "SReclaimable + Shmem\` from \`/proc/meminfo\`, with the per-CPU free page lists of"
	echo "\`/proc/zoneinfo\` counted as free), which sees everything: process heaps, the server,"
	echo "kernel slab (struct file, epoll items, io_kiocbs), vmalloc, page tables, dq's arena"
	echo "and records. It is noisy at small n (a megabyte of unrelated kernel activity is 100 B"
	echo "per message at 10 k held); the RSS+slab column is the host's method, for comparison. On the"
	echo "host, where other work moves that figure, it is the process's and the server's RSS"
	echo "growth plus the slab growth. What a system allocates up front for its capacity (dq's"
	echo "arena and records) is counted for the share of the capacity that is held."
	echo "For reference (design brief): Pulsar's delayed index 24 B, RocketMQ's TimerLog 52 B."
	for e in "${ENVS[@]}"; do
		echo
		echo "### $(env_title "$e")"
		echo
		section "$e" "$MEMORY"
		p=scale-memory-$e
		[ -f "$DOCS/bench/$p.png" ] && { echo; echo "![$p](bench/$p.png)"; }
	done
	echo
	echo "## Where TCG emulation distorts the figures"
	echo
	sed '/^<!--/d' "$HERE/tcg-notes.md"
	if [ ${#ENVS[@]} -eq 2 ]; then
		echo
		echo "TCG slowdown per system, workload a (process + server CPU per message; the host runs"
		echo "more messages, see the throughput tables):"
		echo
		section vm "$SLOWDOWN"
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
	echo "make -C bench bench        # host part, VM part, then this file (20-30 min)"
	echo "make -C bench bench-quick  # small sizes, a few minutes"
	echo "make -C bench host         # native part only; make -C bench report to redo this file"
	echo '```'
	echo
	echo "Raw results: \`docs/bench/results.csv\` (one row per run, every field the harness"
	echo "measured). Sizes can be changed with \`DQ_BENCH_*\` variables (see \`bench/run.sh\`)."
} > "$MD"

echo "report.sh: wrote $MD, $CSV${PLOTS[*]:+ and ${#PLOTS[@]} plots}"
[ -s "$WORK/gnuplot.log" ] && sed 's/^/gnuplot: /' "$WORK/gnuplot.log" >&2
exit 0
