#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Every file of the tree says its licence: an SPDX-License-Identifier
# line in its first 3 lines, naming only identifiers whose text is in
# LICENSES/<id>.txt (COPYING says which applies where).  The files that
# carry none are the exceptions below, each with why; anything else
# without one fails.  Files are git's: tracked ones, and new ones (not
# ignored) of a kind that must carry a line (source_kind below), so build
# outputs and stray logs are not looked at.  TAP; last line "N
# passed, N failed, N skipped".
#
# Usage: scripts/spdx-check.sh [DIR]   (default: this tree)
set -u -o pipefail
cd "${1:-$(dirname "$0")/..}" || exit 1

# exempt FILE: true for a file that carries no licence line, and why.
exempt() {
	case $1 in
	*.md) ;;		# documentation (prose; many carry a line anyway)
	docs/records/*) ;;	# run records: test and benchmark outputs
	fuzz/RESULTS.txt) ;;	# a run record of the fuzzers
	fuzz/corpus/*) ;;	# fuzzer inputs (binary)
	*.golden) ;;		# expected outputs a test compares with
	*.json | *.jsonl | *.csv | *.png) ;;	# data and figures (no comments)
	VERSION) ;;		# one line, read by the build
	COPYING | LICENSES/*) ;;	# the licence texts themselves
	*.patch) ;;		# patches to other projects: their licence
	debian/*) ;;		# Debian packaging metadata: debian/copyright
	*) return 1 ;;
	esac
}

# source_kind FILE: a new (untracked) file of a kind that must carry a
# line: sources, scripts, makefiles, configuration, man pages,
# executables.  Other untracked files (a log, an editor's backup) are
# not the tree's until added.
source_kind() {
	case ${1##*/} in
	*.c | *.h | *.sh | *.py | *.mk | *.pl | *.awk | *.yaml | *.conf | *.service | \
		*.rules | *.in | *.map | *.[1-8] | Makefile | Kbuild | *.example) return 0 ;;
	esac
	[ -x "$1" ]
}

if ! tracked=$(git ls-files --cached 2> /dev/null) ||
	! untracked=$(git ls-files --others --exclude-standard 2> /dev/null); then
	echo "1..0 # SKIP not a git checkout: no list of the tree's files"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
files=$tracked
while IFS= read -r f; do
	[ -n "$f" ] && source_kind "$f" && files+=$'\n'"$f"
done <<< "$untracked"
echo "TAP version 13"
echo "1..2"
nfiles=0 exempted=0
missing=() unknown=() checked=()
declare -A seen_ids=() line_of=()
while IFS= read -r f; do
	[ -f "$f" ] || continue		# deleted in the work tree
	if exempt "$f"; then
		exempted=$((exempted + 1))
		continue
	fi
	checked+=("$f")
done <<< "$files"
nfiles=${#checked[@]}
# One awk over every file (no process per file): its first SPDX line
# within the first 3 lines.
while IFS=$'\t' read -r f line; do
	line_of[$f]=$line
done < <(printf '%s\0' "${checked[@]}" | xargs -0 awk '
	FNR <= 3 && /SPDX-License-Identifier:/ { print FILENAME "\t" $0; nextfile }
	FNR > 3 { nextfile }')
for f in "${checked[@]}"; do
	line=${line_of[$f]:-}
	if [ -z "$line" ]; then
		missing+=("$f")
		continue
	fi
	# The expression, without the comment's closing characters.
	expr=${line#*SPDX-License-Identifier:}
	expr=${expr%%\*/*}
	expr=${expr%%-->*}
	expr=${expr%%\"*}
	expr=${expr//[()]/ }
	for id in $expr; do
		case $id in OR | AND | WITH) continue ;; esac
		seen_ids[$id]=1
		[ -f "LICENSES/$id.txt" ] || unknown+=("$f: $id")
	done
done
pass=0 fail=0
if [ ${#missing[@]} -eq 0 ] && [ "$nfiles" -gt 0 ]; then
	echo "ok 1 - $nfiles files carry an SPDX-License-Identifier line ($exempted exempt)"
	pass=$((pass + 1))
else
	echo "not ok 1 - ${#missing[@]} of $nfiles files carry no SPDX-License-Identifier in their first 3 lines:"
	printf '#   %s\n' "${missing[@]}"
	fail=$((fail + 1))
fi
if [ ${#unknown[@]} -eq 0 ]; then
	echo "ok 2 - every identifier has its text in LICENSES/: ${!seen_ids[*]}"
	pass=$((pass + 1))
else
	echo "not ok 2 - identifiers without a text in LICENSES/:"
	printf '#   %s\n' "${unknown[@]}"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed, 0 skipped"
[ "$fail" = 0 ]
