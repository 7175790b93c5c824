#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build (once) and cache the dq debug test kernel: Debian's linux-source-6.1
# with allnoconfig + selftests/vm/debug.config (KUnit, KASAN, lockdep,
# kmemleak, ...; 9p/virtio built in, no other driver), and build dq.ko +
# dq_kunit.ko against it.
#
# Usage: scripts/build-debug-kernel.sh [--modules] [--print-key] [--force]
#   (no option)   make sure the kernel is built; print its cache directory
#   --modules     also build dq.ko and kmod/tests/dq_kunit.ko against it
#                 (into <dir>/dq, never into the work tree); print <dir>
#   --print-key   print the cache key and exit
#   --force       rebuild the kernel even when cached
#
# The cache directory, ${DQ_CACHE:-/var/cache/dq-lab}/debug-kernel-<key>,
# is keyed by the sha256 of the fragment, of the lab's kernel patches
# (selftests/vm/debug-kernel-patches), of this script's kernel recipe
# (the functions check_config, prune_tree, build_kernel, apply_patches,
# so that edits elsewhere in the script do not rebuild the kernel) and of
# the version of the linux-source-6.1 package.  It holds:
#   bzImage    the kernel
#   vmlinux    the same, uncompressed (qemu boots it through the PVH entry,
#              which saves the decompression under TCG)
#   build/     the kernel tree after the build, pruned of objects: enough
#              for `make -C build M=... modules` (Module.symvers included)
#   dq/        dq.ko and kmod/tests/dq_kunit.ko built against it (--modules)
#   build-time wall-clock seconds the first kernel build took, and the CPU
#              seconds of its make (CPU / 2 is the wall time on 2 idle
#              cores)
# Only stdout carries the directory; progress goes to stderr.
#
# Environment: DQ_CACHE, DQ_KSRC_TARBALL (default
# /usr/src/linux-source-6.1.tar.xz), DQ_KBUILD_JOBS (default nproc),
# DQ_KBUILD_TIMEOUT (default 60m, for the kernel build itself; an
# interrupted build resumes where it stopped on the next run).

set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(readlink -f "$(dirname "$SELF")/..")
FRAGMENT=$REPO/selftests/vm/debug.config
PATCHES=$REPO/selftests/vm/debug-kernel-patches
CACHE=${DQ_CACHE:-/var/cache/dq-lab}
TARBALL=${DQ_KSRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
JOBS=${DQ_KBUILD_JOBS:-$(nproc)}
KTIMEOUT=${DQ_KBUILD_TIMEOUT:-60m}

msg() { echo "debug-kernel: $*" >&2; }
die() {
	msg "$*"
	exit 1
}

MODULES=0
PRINT_KEY=0
FORCE=0
while [ $# -gt 0 ]; do
	case "$1" in
	--modules) MODULES=1 ;;
	--print-key) PRINT_KEY=1 ;;
	--force) FORCE=1 ;;
	-h | --help)
		sed -n '/^# Usage:/,/^# Environment/p' "$SELF" | sed 's/^# \{0,1\}//' >&2
		exit 0
		;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
	shift
done

[ -f "$TARBALL" ] || die "$TARBALL missing (apt-get install linux-source-6.1, or make deps)"
[ -f "$FRAGMENT" ] || die "$FRAGMENT missing"

src_version() {
	dpkg-query -W -f='${Version}' linux-source-6.1 2> /dev/null ||
		stat -c '%s %Y' "$TARBALL"
}


# The config must hold every option the fragment asks for; a silently
# dropped one (a missing dependency) would make the lab test less than it
# says.
check_config() {
	local line opt want got bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=*) opt=${line%%=*}; want=${line#*=} ;;
		"# CONFIG_"*" is not set") opt=${line#\# }; opt=${opt%% *}; want=n ;;
		*) continue ;;
		esac
		got=$(grep -E "^$opt=" "$BUILD/.config" | head -n 1 | cut -d= -f2-)
		[ -n "$got" ] || got=n
		if [ "$got" != "$want" ]; then
			msg "config: $opt=$want asked, got $got"
			bad=1
		fi
	done < "$FRAGMENT"
	return "$bad"
}

# Objects are only needed to link vmlinux; external modules need the
# headers, the generated files, scripts/ and objtool.  Keeps the cache
# at a few hundred MB.
prune_tree() {
	find "$BUILD" \( -path "$BUILD/scripts" -o -path "$BUILD/tools" \) -prune -o \
		-type f \( -name '*.o' -o -name '*.a' -o -name '.*.cmd' -o -name '*.mod.c' \) \
		-print0 | xargs -0r rm -f
	rm -f "$BUILD"/vmlinux.o "$BUILD"/.tmp_vmlinux* "$BUILD"/arch/x86/boot/compressed/vmlinux.bin*
}

# The lab's fixes to the kernel itself (selftests/vm/debug-kernel-patches,
# in name order): bugs of 6.1 that hang or break the debug lab, not dq.
apply_patches() {
	local p
	for p in "$PATCHES"/*.patch; do
		[ -e "$p" ] || continue
		msg "applying ${p##*/}"
		patch -d "$BUILD" -p1 --forward --quiet < "$p" ||
			die "${p##*/} does not apply to $TARBALL"
	done
}

# CPU seconds (user + system) of this shell's finished children.
children_cpu() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($16 + $17) / hz }' /proc/$$/stat
}

build_kernel() {
	local t0 t1 c0 c1 cfg
	if [ "$FORCE" = 1 ]; then
		rm -rf "$DIR"
	fi
	[ -f "$DIR/.complete" ] && return 0
	msg "building the debug kernel into $DIR (once; ~10 min on 2 cores)"
	t0=$(date +%s)
	mkdir -p "$DIR"
	if [ ! -f "$BUILD/.unpacked" ]; then
		rm -rf "$BUILD" "$DIR/.src"
		mkdir -p "$DIR/.src"
		msg "unpacking $TARBALL"
		tar -xJf "$TARBALL" -C "$DIR/.src"
		mv "$DIR/.src/linux-source-6.1" "$BUILD"
		rmdir "$DIR/.src"
		apply_patches
		touch "$BUILD/.unpacked"
	fi
	if [ ! -f "$BUILD/.configured" ]; then
		cfg=$BUILD/kernel/configs/dq-debug.config
		cp "$FRAGMENT" "$cfg"
		# Everything the fragment does not name is off (not at its
		# default): no driver, file system or protocol the VM never uses.
		make -s -C "$BUILD" KCONFIG_ALLCONFIG="$cfg" allnoconfig \
			> "$DIR/config.log" 2>&1 ||
			die "make allnoconfig failed: see $DIR/config.log"
		check_config || die "the fragment does not apply cleanly (fix selftests/vm/debug.config)"
		touch "$BUILD/.configured"
	fi
	msg "make -j$JOBS (log: $DIR/build.log)"
	c0=$(children_cpu)
	if ! timeout "$KTIMEOUT" make -C "$BUILD" -j"$JOBS" bzImage modules > "$DIR/build.log" 2>&1; then
		tail -n 40 "$DIR/build.log" >&2
		die "kernel build failed or timed out; rerun to resume (log: $DIR/build.log)"
	fi
	cp "$BUILD/arch/x86/boot/bzImage" "$DIR/bzImage"
	cp "$BUILD/vmlinux" "$DIR/vmlinux"
	cp "$BUILD/.config" "$DIR/config"
	prune_tree
	t1=$(date +%s)
	c1=$(children_cpu)
	echo "wall $((t1 - t0)) s, make cpu $((c1 - c0)) s, jobs $JOBS" >> "$DIR/build-time"
	touch "$DIR/.complete"
	msg "kernel built in $((t1 - t0)) s: $DIR"
}

# dq.ko and dq_kunit.ko for this kernel, built in <dir>/dq from a tree of
# symlinks to the repo's sources so that no object lands in the work tree
# (the stock dq.ko there belongs to everyone else).
build_modules() {
	local out=$DIR/dq f
	mkdir -p "$out"
	# Mirror every source file; drop links whose target went away.
	find "$out" -type l ! -exec test -e {} \; -delete
	while IFS= read -r f; do
		mkdir -p "$out/$(dirname "$f")"
		ln -sfn "$REPO/$f" "$out/$f"
	done < <(cd "$REPO" && find kmod uapi -type f \( -name '*.c' -o -name '*.h' \) | sort)
	{
		echo "# generated by scripts/build-debug-kernel.sh"
		echo "include $REPO/Kbuild"
		if [ -f "$REPO/kmod/tests/dq_kunit.c" ]; then
			echo "obj-m += kmod/tests/dq_kunit.o"
		fi
	} > "$out/Kbuild.new"
	if ! cmp -s "$out/Kbuild.new" "$out/Kbuild"; then
		mv "$out/Kbuild.new" "$out/Kbuild"
	else
		rm -f "$out/Kbuild.new"
	fi
	# Built last from another tree (a clone): its objects may be newer
	# than this tree's sources, so make would keep them.  Start clean.
	if [ "$(cat "$out/.repo" 2> /dev/null)" != "$REPO" ]; then
		make -C "$BUILD" M="$out" clean > /dev/null 2>&1 || true
		echo "$REPO" > "$out/.repo"
	fi
	msg "building dq.ko against the debug kernel in $out"
	# The lab's test build (Kbuild, DQ_TESTING): the debug suite's
	# dq_order plants a release delay through test_arm_delay_ns.
	make -C "$BUILD" M="$out" DQ_TESTING=1 -j"$JOBS" modules >&2 ||
		die "module build failed"
}

KEY=$({
	cat "$FRAGMENT" "$PATCHES"/*.patch
	declare -f check_config prune_tree build_kernel apply_patches
	src_version
} | sha256sum | cut -c1-16)
if [ "$PRINT_KEY" = 1 ]; then
	echo "$KEY"
	exit 0
fi

DIR=$CACHE/debug-kernel-$KEY
BUILD=$DIR/build
mkdir -p "$CACHE"
exec {LOCK}> "$CACHE/.debug-kernel.lock"

flock "$LOCK"
build_kernel
flock -u "$LOCK"
if [ "$MODULES" = 1 ]; then
	exec {MLOCK}> "$DIR/.modules.lock"
	flock "$MLOCK"
	build_modules
fi
echo "$DIR"
