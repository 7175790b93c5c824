#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqctl journal verify and inspect on journals written by journal_gen
# (journal_gen.c, through the library's own encoders): a clean journal,
# an empty one, and one damage at a time (a flipped bit in a sealed
# segment, a torn tail, durable records cut off, a missing segment
# (middle, oldest, newest), a leftover segment, another journal's
# segment, a damaged header, a damaged sync mark, a segment left
# unsealed, a record forged inside a payload, a version 1 journal with
# a bad record); verify's exit status (0
# clean, 1 findings, 2 usage or I/O), the findings' segment, offset and
# kind, inspect's JSON (jq) totals; and that neither changes a file.
# Usage: dqctl_journal_test.sh path/to/dqctl path/to/journal_gen
DQCTL=${1:-$(dirname "$0")/../build/dqctl}
GEN=${2:-$(dirname "$0")/../build/tests/journal_gen}
T=$(mktemp -d /tmp/dqctl-journal.XXXXXX)
trap 'rm -rf "$T"' EXIT

n=0 p=0 f=0 s=0
ok() {		# ok DESCRIPTION CONDITION...
	d=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $d"
		p=$((p + 1))
	else
		echo "not ok $n - $d"
		f=$((f + 1))
	fi
}
skip() {
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
	s=$((s + 1))
}

# st WANT CMD...: CMD's exit status is WANT (its output in $T/out).
st() {
	want=$1
	shift
	"$@" > "$T/out" 2> "$T/err"
	got=$?
	[ "$got" = "$want" ] && return 0
	echo "#   $*: exit $got, not $want"
	sed 's/^/#   /' "$T/out" "$T/err" | head -n 20
	return 1
}

# jqt DIR FILTER: FILTER is true of inspect --json --records on DIR.
jqt() {
	"$DQCTL" --json journal inspect "$1" --records > "$T/js" 2>&1 &&
		jq -e "$2" "$T/js" > /dev/null && return 0
	echo "#   jq: $2"
	head -c 2000 "$T/js" | sed 's/^/#   /'
	echo
	return 1
}

# vjq DIR FILTER: FILTER is true of verify --json on DIR.
vjq() {
	"$DQCTL" --json journal verify "$1" > "$T/js" 2>&1
	jq -e "$2" "$T/js" > /dev/null && return 0
	echo "#   jq: $2"
	sed 's/^/#   /' "$T/js"
	return 1
}

# gen NAME STEPS...: a journal in $T/NAME; its records listed in
# $T/NAME.recs ("TYPE SEG OFF LEN ID").
gen() {
	d=$1
	shift
	"$GEN" "$T/$d" "$@" > "$T/$d.recs" || echo "# journal_gen $d failed"
}
# off NAME TYPE ID: the offset of that record.
off() {
	awk -v t="$2" -v id="$3" '$1 == t && $5 == id { print $3; exit }' \
		"$T/$1.recs"
}

# A clean journal: two sealed segments and the active one, preallocated.
# Commits 1..7, due 1700000000+id s unless given; 1, 2, 4 retired (4,
# due first, does not count for the oldest due); the last 3 is a RELOC
# copy of the first (the newest copy counts once).  Live: 3 5 6 7.
CLEAN="seg 1 commit 1 10 commit 2 0 commit 3 500 1700000300 retire 1 seal
       seg 2 commit 4 64 1 retire 2 commit 5 7 1700000100 seal
       seg 3 commit 3 500 1700000300 4 retire 4 commit 6 1 commit 7 8 pad 65536"
echo "TAP version 13"
if ! command -v jq > /dev/null; then
	echo "1..1"
	skip "dqctl journal" "no jq"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
echo "1..41"

# shellcheck disable=SC2086
gen clean $CLEAN
ok "verify: a clean journal exits 0" st 0 "$DQCTL" journal verify "$T/clean"
ok "verify: text says clean" grep -q "clean, 3 segments" "$T/out"
ok "verify --json: clean, no findings" \
	vjq "$T/clean" '.clean == true and .segments == 3 and .findings == []'
ok "inspect: totals (commits, retires, live, oldest due, bytes)" \
	jqt "$T/clean" '.totals | .segments == 3 and .commits == 8 and
		.retires == 3 and .retired == 3 and .live == 4 and
		.oldest_due_ns == 1700000006000000000 and
		.oldest_due == "2023-11-14T22:13:26.000000000Z" and
		.findings == 0'
ok "inspect: segments (first_msg_id, records by type, sealed)" \
	jqt "$T/clean" '[.segments[] | [.segment, .first_msg_id, .commits,
		.retires, .seals, .sealed]] ==
		[[1,1,3,1,1,true], [2,4,2,1,1,true], [3,6,3,1,0,false]]'
ok "inspect: the active segment's size is its preallocation" \
	jqt "$T/clean" '.segments[2].size == 65536 and
		.totals.bytes == (.segments | map(.size) | add)'
ok "inspect --records: every record, with offset, type, msg_id, flags" \
	jqt "$T/clean" '[.segments[].records[]] | length == 13 and
		.[0] == {"offset":12288,"type":"commit","len":58,"msg_id":1,
		"flags":0,"user_data":10,"attempts":0,"payload_len":10,
		"due_ns":1700000001000000000,
		"due":"2023-11-14T22:13:21.000000000Z"} and
		(map(select(.type == "commit" and .flags == 4)) | length) == 1'
ok "inspect --records: retire ids and seal count" \
	jqt "$T/clean" '.segments[0].records[3] ==
		{"offset":12952,"type":"retire","len":24,"count":1,"msg_ids":[1]}
		and .segments[1].records[3].count == 3'
ok "inspect: text lists segments and totals" \
	st 0 "$DQCTL" journal inspect "$T/clean" --records
ok "inspect: text has the oldest due time in UTC" \
	grep -q "oldest due 2023-11-14T22:13:26.000000000Z" "$T/out"

mkdir "$T/empty"
ok "verify: an empty directory is a clean (new) journal" \
	st 0 "$DQCTL" journal verify "$T/empty"
ok "inspect --json: no segments, nothing live" \
	jqt "$T/empty" '.segments == [] and .totals.live == 0 and
		(.totals | has("oldest_due") | not)'

# One damage at a time.
# shellcheck disable=SC2086
gen flip $CLEAN
o=$(off flip commit 2)
"$GEN" "$T/flip" flip 1 $((o + 20)) 0x40 > /dev/null
ok "verify: a flipped bit in a sealed segment exits 1" \
	st 1 "$DQCTL" journal verify "$T/flip"
ok "verify: it names segment 1 at the record's offset" \
	grep -q "^segment 1 offset $o: bad record, 48 bytes skipped" "$T/out"
ok "verify --json: corrupt there, and the SEAL's count off" \
	vjq "$T/flip" "[.findings[] | [.segment, .offset, .kind]] ==
		[[1, $o, \"corrupt\"], [1, $(off flip seal 3), \"seal_mismatch\"]]"
ok "inspect: the records after it are still found" \
	jqt "$T/flip" '.segments[0].commits == 2 and .segments[0].retires == 1
		and .segments[0].seals == 1 and .totals.live == 4 and
		.clean == false'

# The last record written after the last sync: a tear, cut.
# shellcheck disable=SC2086
gen torn $(echo $CLEAN | sed 's/commit 7 8/sync commit 7 8/')
o=$(off torn commit 7)
"$GEN" "$T/torn" truncate 3 $((o + 52)) > /dev/null
ok "verify: a torn tail exits 1" st 1 "$DQCTL" journal verify "$T/torn"
ok "verify --json: torn at the last record, 52 bytes" \
	vjq "$T/torn" ".findings == [{\"segment\":3,\"offset\":$o,
		\"kind\":\"torn\",\"bytes\":52,
		\"what\":\"torn tail, 52 bytes after the last good record\"}]"
ok "inspect: the torn record is not counted; end is where it starts" \
	jqt "$T/torn" ".segments[2].commits == 2 and .segments[2].end == $o
		and .totals.live == 3"

# The same cut through a record the sync mark says was durable: lost.
# shellcheck disable=SC2086
gen cut $CLEAN
o=$(off cut commit 7)
"$GEN" "$T/cut" truncate 3 $((o + 52)) > /dev/null
ok "verify --json: a durable record cut short is corrupt, the rest lost" \
	vjq "$T/cut" "[.findings[] | [.segment, .offset, .kind, .bytes]] ==
		[[3, $o, \"corrupt\", 52], [3, $((o + 52)), \"lost\", 4]]"

# shellcheck disable=SC2086
gen gap $CLEAN rm 2
ok "verify: a missing segment exits 1, named" \
	vjq "$T/gap" '.findings == [{"segment":2,"kind":"gap",
		"what":"segment missing"}]'

# shellcheck disable=SC2086
gen oldest $CLEAN rm 1
ok "verify: a missing oldest segment (the sync mark needs it), named" \
	vjq "$T/oldest" '[.findings[] | [.segment, .kind]] == [[1, "missing"]]'
ok "verify: exit status 1 for it" st 1 "$DQCTL" journal verify "$T/oldest"

# shellcheck disable=SC2086
gen newest $CLEAN rm 3
ok "verify: a missing newest segment (its predecessor is sealed), named" \
	vjq "$T/newest" '[.findings[] | [.segment, .kind]] == [[3, "missing"]]'

# Reclamation deleted segment 1 and its mark says so; 1 is still there.
# shellcheck disable=SC2086
gen stale $(echo $CLEAN | sed 's/seg 2/first 2 seg 2/')
ok "verify: a segment below the mark's first_segment is stale, not read" \
	vjq "$T/stale" '[.findings[] | [.segment, .kind]] == [[1, "stale"]]'
ok "inspect: the stale segment is listed, its records not counted" \
	jqt "$T/stale" '.segments[0].stale == true and .totals.commits == 5'

# shellcheck disable=SC2086
gen badmark $CLEAN flip 3 4104
ok "verify: a damaged sync mark is named; the older one is used" \
	vjq "$T/badmark" '[.findings[] | [.segment, .offset, .kind]] ==
		[[3, 4096, "bad_mark"]]'
ok "inspect: the older mark (seq 1) is the segment's" \
	jqt "$T/badmark" '.segments[2].mark_seq == 1'

# A payload holding well-formed COMMITs (plain CRC32C, and salted but for
# another offset), its own record's CRC flipped: skipped, never read.
gen forged seg 1 commit 1 10 forge 2 200 99 commit 3 10 seal \
	seg 2 commit 4 10 pad 65536
o=$(off forged commit 2)
"$GEN" "$T/forged" flip 1 "$o" 0x01 > /dev/null
ok "verify: the bad record is skipped in one piece, the next one found" \
	vjq "$T/forged" "[.findings[] | [.segment, .offset, .kind, .bytes]] ==
		[[1, $o, \"corrupt\", 248], [1, $(off forged seal 3),
		\"seal_mismatch\", null]]"
ok "inspect: no record of the forged message 99, message 3 found" \
	jqt "$T/forged" '[.segments[].records[] | select(.type == "commit") |
		.msg_id] == [1, 3, 4]'

# Version 1 (no salt): a bad record in a sealed segment ends its scan.
gen v1 v1 seg 1 commit 1 10 forge 2 200 99 commit 3 10 seal \
	seg 2 commit 4 10 pad 65536
ok "verify: a clean version 1 journal is clean" \
	vjq "$T/v1" '.clean == true and .findings == []'
o=$(off v1 commit 2)
"$GEN" "$T/v1" flip 1 "$o" 0x01 > /dev/null
ok "verify: v1, a bad record: the rest of the segment skipped, named" \
	vjq "$T/v1" "[.findings[] | [.segment, .offset, .kind]] ==
		[[1, $o, \"corrupt\"]]"
ok "inspect: v1, the forged record inside the payload is not read" \
	jqt "$T/v1" '[.segments[].records[] | select(.type == "commit") |
		.msg_id] == [1, 4] and .segments[0].version == 1'

# shellcheck disable=SC2086
gen foreign $CLEAN foreign 1
ok "verify: another journal's segment exits 1, named" \
	vjq "$T/foreign" '[.findings[] | [.segment, .kind]] == [[1, "foreign"]]'
ok "verify: exit status 1 for it" st 1 "$DQCTL" journal verify "$T/foreign"

# shellcheck disable=SC2086
gen hdr $CLEAN flip 2 40
ok "verify: a damaged header exits 1, named" \
	vjq "$T/hdr" '[.findings[] | [.segment, .offset, .kind]] ==
		[[2, 0, "bad_header"]]'

gen unsealed seg 1 commit 1 10 seg 2 commit 2 10
ok "verify: a segment other than the newest without SEAL is a finding" \
	vjq "$T/unsealed" '[.findings[] | [.segment, .kind]] == [[1, "unsealed"]]'

ok "usage errors exit 2 (no DIR, unknown subcommand, verify --records)" \
	sh -c '"$1" journal verify; [ $? = 2 ] || exit 1
	       "$1" journal frob "$2"; [ $? = 2 ] || exit 1
	       "$1" journal verify "$2" --records; [ $? = 2 ] || exit 1
	       "$1" journal; [ $? = 2 ]' sh "$DQCTL" "$T/clean" 2> /dev/null
ok "a directory that is not there exits 2" \
	st 2 "$DQCTL" journal verify "$T/nonexistent"
gen io seg 1 commit 1 10 seal
mkdir "$T/io/0000000000000002.dqj"
ok "a segment that cannot be read exits 2 (verify and inspect)" \
	sh -c '"$1" journal verify "$2"; [ $? = 2 ] || exit 1
	       "$1" journal inspect "$2"; [ $? = 2 ]' sh "$DQCTL" "$T/io" \
	2> /dev/null

# Read only: nothing written, truncated, created or locked.
before=$(cd "$T" && ls -l --time-style=+%s.%N torn flip clean && \
	 cat torn/* flip/* clean/* | sha256sum)
for d in torn flip clean gap oldest stale forged; do
	"$DQCTL" journal verify "$T/$d" > /dev/null 2>&1
	"$DQCTL" --json journal inspect "$T/$d" --records > /dev/null 2>&1
done
after=$(cd "$T" && ls -l --time-style=+%s.%N torn flip clean && \
	cat torn/* flip/* clean/* | sha256sum)
ok "verify and inspect change no file (sizes, times, bytes, no LOCK)" \
	[ "$before" = "$after" ]

echo "$p passed, $f failed, $s skipped"
[ "$f" = 0 ]
