#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# `make -C fuzz coverage`: line and branch coverage of the library's
# sources reached by each target's corpus (the committed one plus what
# `make run` found in build/work/), with clang's source-based coverage:
# the targets are built again without sanitizers in build/cov/, run once
# over every input (-runs=0), and llvm-cov reports per file.
set -eu -o pipefail
cd "$(dirname "$0")"
top=$(cd .. && pwd)
out=build/cov
mkdir -p "$out"
cflags=(-O1 -g -std=gnu11 -pthread -D_GNU_SOURCE -I"$top/user/include"
	-I"$top/uapi" -I"$top/user/src" -I"$top/user/compat" -I"$top/kmod/shared"
	-fprofile-instr-generate -fcoverage-mapping -fsanitize=fuzzer)
srcs=("$top"/user/src/{dq_queue,dq_kernel,dq_user,dq_prep,dq_journal,dq_jformat}.c
	"$top/kmod/shared/dq_wheel.c")
libs=$(pkg-config --libs liburing libisal 2>/dev/null || echo -luring -lisal)
for t in "$@"; do
	# shellcheck disable=SC2086
	nice -n 19 clang "${cflags[@]}" -o "$out/$t" "$t.c" "${srcs[@]}" $libs -pthread
	rm -f "$out/$t".*.profraw
	mkdir -p "build/work/$t"
	LLVM_PROFILE_FILE="$out/$t.%p.profraw" nice -n 19 \
		"$out/$t" -runs=0 "corpus/$t" "build/work/$t" > "$out/$t.log" 2>&1
	llvm-profdata-14 merge -o "$out/$t.profdata" "$out/$t".*.profraw
	echo "== $t ($(ls "corpus/$t" "build/work/$t" | grep -vc ':$') inputs)"
	llvm-cov-14 export -summary-only "$out/$t" \
		-instr-profile="$out/$t.profdata" 2>/dev/null |
		jq -r --arg top "$top/" '.data[0].files[] |
			select(.filename | test("/(kmod/shared|user/src)/")) |
			select(.summary.lines.covered > 0) |
			"\(.filename | ltrimstr($top)): lines \(.summary.lines.covered)/\(.summary.lines.count) (\(.summary.lines.percent | floor)%), branches \(.summary.branches.covered)/\(.summary.branches.count) (\(.summary.branches.percent | floor)%), functions \(.summary.functions.covered)/\(.summary.functions.count)"'
done
