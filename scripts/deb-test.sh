#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages as a stranger gets them (make deb's build/deb/*.deb):
# lintian, then `apt-get install ./*.deb` in a clean Debian 12 chroot,
# then dq.ko from dq-dkms loaded in the lab VM, with a sample program
# built against the installed headers through pkg-config.
#
# Usage: scripts/deb-test.sh [--build] [DEBDIR]
#                                 DEBDIR default build/deb; --build: make
#                                 the packages there first (make deb)
#        scripts/deb-test.sh base        only make the cached base chroot
# Prints TAP and "N passed, N failed, 0 skipped".  Needs root (chroot,
# mounts), the lab kernel 6.1 (its headers for DKMS, its VM for the load).
#
# The chroot: a debootstrap of bookworm (minbase) with what the packages
# depend on already in (dkms and its compiler, the runtime libraries), made
# once into the lab cache; every run installs into a throw-away overlay of
# it, so the packages are installed with apt, offline, into a system that
# never saw dq.  dq-dkms's postinst builds for the kernels it finds
# (none: the chroot has no kernel); the test then asks dkms for the lab's
# 6.1 kernel, whose headers are bind-mounted in, as an operator installing
# linux-headers would.  The VM boots 6.1 with that dq.ko (not the lab's
# test build) and runs the chroot's binaries from the host file system.
set -u -o pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
REPO=$(readlink -f "$(dirname "$SELF")/..")
CACHE=${DQ_CACHE:-/var/cache/dq-lab}
MIRROR=${DQ_LAB_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SUITE=bookworm
DEB_KERNEL=${DQ_DEB_KERNEL:-6.1}
# What dq's packages depend on, preinstalled so that installing them needs
# no network: dq-dkms (dkms: gcc, make, kmod), libdqshim0 and the tools'
# libraries, pkg-config and libc6-dev for the sample program.
BASE_PACKAGES=(dkms gcc make libc6-dev pkg-config kmod liburing2 libisal2 libmnl0
	libjson-c5 libhiredis0.14 libcurl4 libmicrohttpd12 libhttp-parser2.9 librdkafka1 libbpf1 libelf1
	liburing-dev libisal-dev)

die() {
	echo "deb-test: $*" >&2
	exit 2
}

base_dir() {
	local key
	key=$(printf '%s\n' "$SUITE" "${BASE_PACKAGES[@]}" | sha256sum | cut -c1-12)
	echo "$CACHE/chroot/deb-$SUITE-$key"
}

make_base() {
	local dir tmp
	dir=$(base_dir)
	[ -f "$dir/.complete" ] && return 0
	mkdir -p "$CACHE/chroot/debs"
	exec {lock}> "$CACHE/chroot/.deb-lock"
	flock "$lock"
	if [ ! -f "$dir/.complete" ]; then
		echo "# debootstrap $SUITE into $dir (once; a few minutes)" >&2
		tmp=$dir.tmp
		rm -rf "$tmp"
		if ! debootstrap --variant=minbase --keyring="$KEYRING" \
			--cache-dir="$CACHE/chroot/debs" \
			--include="$(IFS=,; echo "${BASE_PACKAGES[*]}")" \
			"$SUITE" "$tmp" "$MIRROR" > "$CACHE/chroot/deb-debootstrap.log" 2>&1; then
			tail -n 20 "$CACHE/chroot/deb-debootstrap.log" >&2
			rm -rf "$tmp"
			die "debootstrap failed (log: $CACHE/chroot/deb-debootstrap.log)"
		fi
		rm -f "$tmp/var/cache/apt/archives"/*.deb
		touch "$tmp/.complete"
		mv "$tmp" "$dir"
	fi
	flock -u "$lock"
}

if [ "${1:-}" = base ]; then
	make_base
	base_dir
	exit 0
fi

BUILD=0
if [ "${1:-}" = --build ]; then
	BUILD=1
	shift
fi
DEBDIR=$(realpath -m "${1:-$REPO/build/deb}")
V=$(cat "$REPO/VERSION")
PKGS=(dq-dkms libdqshim0 libdqshim-dev dq-tools dqbridge)
n=0 pass=0 fail=0
ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
		pass=$((pass + 1))
	else
		echo "not ok $n - $2"
		fail=$((fail + 1))
	fi
}
finish() {
	echo "$pass passed, $fail failed, 0 skipped"
	[ "$fail" = 0 ]
	exit
}

[ "$(id -u)" = 0 ] || die "needs root (chroot, overlay mount)"
if [ "$BUILD" = 1 ]; then
	t0=$SECONDS
	if ! "$REPO/scripts/deb-build.sh" "$DEBDIR" > /dev/null; then
		echo "not ok 1 - make deb"
		echo "0 passed, 1 failed, 0 skipped"
		exit 1
	fi
	echo "# make deb: $((SECONDS - t0)) s"
fi
DEBS=()
for p in "${PKGS[@]}"; do
	f=$(ls "$DEBDIR/${p}_${V}_"*.deb 2> /dev/null | head -n 1)
	[ -n "$f" ] || die "no $p $V in $DEBDIR: make deb"
	DEBS+=("$f")
done
eval "$("$REPO/scripts/lab-kernel.sh" env --no-modules "$DEB_KERNEL")" ||
	die "no lab kernel $DEB_KERNEL"
make_base
BASE=$(base_dir)

T=$(mktemp -d "$REPO/build/deb-test.XXXXXX")
ROOT=$T/root
cleanup() {
	local m
	for m in proc dev/pts dev "$CACHE"; do
		mountpoint -q "$ROOT/${m#/}" && umount -l "$ROOT/${m#/}"
	done
	mountpoint -q "$ROOT" && umount -l "$ROOT"
	rm -rf "$T"
}
trap cleanup EXIT
echo "TAP version 13"
echo "1..9"

# 1: lintian, errors fail; warnings are listed.
lintian --no-tag-display-limit "${DEBS[@]}" > "$T/lintian.log" 2>&1
grep -E '^[EW]: ' "$T/lintian.log" | sed 's/^/# /'
! grep -q '^E: ' "$T/lintian.log"
ok $? "lintian: no errors in ${PKGS[*]} ($(grep -c '^W: ' "$T/lintian.log") warnings)"

# 2: apt installs the five into a clean bookworm, offline (an overlay of
# the base: the base itself never changes).
mkdir -p "$T/upper" "$T/work" "$ROOT"
mount -t overlay overlay -o "lowerdir=$BASE,upperdir=$T/upper,workdir=$T/work" "$ROOT" ||
	die "overlay mount failed"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
mount -t proc proc "$ROOT/proc"
mkdir -p "$ROOT$CACHE"
mount --bind "$CACHE" "$ROOT$CACHE"
mount -o remount,bind,ro "$ROOT$CACHE"
mkdir -p "$ROOT/tmp/debs"
cp "${DEBS[@]}" "$ROOT/tmp/debs/"
in_root() {
	chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
		LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}
# No daemon starts inside the chroot.
printf '#!/bin/sh\nexit 101\n' > "$ROOT/usr/sbin/policy-rc.d"
chmod 0755 "$ROOT/usr/sbin/policy-rc.d"
# shellcheck disable=SC2046 # one word per package
in_root apt-get install -y --no-install-recommends \
	$(printf '/tmp/debs/%s ' "${DEBS[@]##*/}") \
	> "$T/apt.log" 2>&1
rc=$?
[ $rc = 0 ] || tail -n 20 "$T/apt.log" | sed 's/^/#   /'
ok $rc "apt-get install ./*.deb (${PKGS[*]}) in a clean $SUITE chroot"
[ $rc = 0 ] || finish
grep -E '^(Setting up|dkms|Module build)' "$T/apt.log" | sed 's/^/#   /'

# 3: DKMS builds dq.ko for the lab kernel from what dq-dkms installed.
mkdir -p "$ROOT/lib/modules/$LAB_KVER"
ln -sfn "$LAB_KDIR" "$ROOT/lib/modules/$LAB_KVER/build"
in_root dkms install -m dq -v "$V" -k "$LAB_KVER" > "$T/dkms.log" 2>&1
rc=$?
KO=$(find "$ROOT/lib/modules/$LAB_KVER" -name 'dq.ko*' | head -n 1)
[ $rc = 0 ] && [ -n "$KO" ] || { rc=1; tail -n 20 "$T/dkms.log" | sed 's/^/#   /'
	cat "$ROOT/var/lib/dkms/dq/$V/build/make.log" 2> /dev/null | tail -n 20 | sed 's/^/#   /'; }
ok $rc "dkms install -m dq -v $V -k $LAB_KVER: ${KO#"$ROOT"}"
[ $rc = 0 ] || finish

# 4: the shipped module: its version, its kernel, no test-only parameter.
# The same look at the lab's test build (DQ_TESTING=1) must find both, or
# the check could not tell.
test_params() { modinfo -p "$1" | grep -cE '^(test_arm_delay_ns|fixed_slack):'; }
kov=$(modinfo -F version "$KO") kvm=$(modinfo -F vermagic "$KO" | cut -d' ' -f1)
echo "#   version $kov, vermagic $kvm, parameters: $(modinfo -p "$KO" | cut -d: -f1 | tr '\n' ' ')"
LABOUT=$("$REPO/scripts/lab-kernel.sh" modules "$DEB_KERNEL" 2> "$T/lab.log") ||
	sed 's/^/#   /' "$T/lab.log"
echo "#   the lab's test build: $(test_params "$LABOUT/dq/dq.ko") test parameters"
[ "$kov" = "$V" ] && [ "$kvm" = "$LAB_KVER" ] && [ "$(test_params "$KO")" = 0 ] &&
	[ -z "$(modinfo -F dq_testing "$KO")" ] && [ "$(test_params "$LABOUT/dq/dq.ko")" = 2 ]
ok $? "dq.ko is $V for $LAB_KVER without test_arm_delay_ns, fixed_slack (the lab's has them)"

# 5: a program builds against the installed headers through pkg-config.
cat > "$ROOT/tmp/sample.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <dqshim.h>

/* One message 20 ms ahead on dq.ko: back whole, and never early. */
int main(void)
{
	struct dq_params p = DQ_PARAMS_INIT;
	struct dq_info info = { .sz = sizeof(info) };
	struct dqshim_queue *q;
	struct dqshim_msg m;
	struct dq_reaped r;
	const char msg[] = "hello from the dq packages";
	uint64_t due;
	int ret;

	p.backend = DQ_BACKEND_KERNEL;
	ret = dq_queue_open(&p, &q);
	if (ret)
		return fprintf(stderr, "open: %s\n", dq_strerror(ret)), 1;
	dq_queue_info(q, &info);
	if (dq_reserve(q, &m))
		return 1;
	memcpy(m.data, msg, sizeof(msg));
	due = dq_now_ns() + 20000000;
	if (dq_commit(q, &m, sizeof(msg), due, 7) || dq_flush(q) != 1)
		return 1;
	ret = dq_reap(q, &r, 1, 2000000000LL);
	if (ret != 1 || r.user_data != 7 || r.len != sizeof(msg) ||
	    memcmp(r.data, msg, sizeof(msg)) || dq_now_ns() < due)
		return fprintf(stderr, "reap %d\n", ret), 1;
	printf("%s: backend %s, abi %u, %s\n", (char *)r.data,
	       dq_backend_name(dq_queue_backend(q)), info.abi_version,
	       dq_now_ns() >= due ? "not early" : "EARLY");
	dq_done(q, r.slot);
	dq_queue_close(q);
	return 0;
}
C
in_root sh -c 'cc -Wall -Werror -o /tmp/sample /tmp/sample.c $(pkg-config --cflags --libs dqshim)' \
	> "$T/cc.log" 2>&1
rc=$?
[ $rc = 0 ] || sed 's/^/#   /' "$T/cc.log"
ok $rc "cc sample.c \$(pkg-config --cflags --libs dqshim): $(in_root pkg-config --modversion dqshim)"
# The README's example, built the way the README says, against the
# installed packages: the stranger's path, README -> apt install -> it runs.
cp "$REPO/examples/hello.c" "$ROOT/tmp/hello.c"
in_root sh -c 'cd /tmp && cc hello.c $(pkg-config --cflags --libs dqshim) -o hello' \
	>> "$T/cc.log" 2>&1 || sed 's/^/#   /' "$T/cc.log"

# 6: the tools say the version.
tv=$(in_root dqctl --version 2>&1 | head -n 1; in_root dqbridge --version 2>&1 | head -n 1)
echo "$tv" | sed 's/^/#   /'
echo "$tv" | grep -q "^dqctl $V" && echo "$tv" | grep -q "^dqbridge $V" &&
	[ -f "$ROOT/etc/dqbridge/dqbridge.conf" ] &&
	grep -q '^/etc/dqbridge/dqbridge.conf$' "$ROOT/var/lib/dpkg/info/dqbridge.conffiles" &&
	[ -f "$ROOT/lib/systemd/system/dqbridge.service" ] && [ ! -e "$ROOT/usr/bin/dqbench_hot" ]
ok $? "dqctl and dqbridge --version say $V; dqbridge.conf is a conffile, the unit installed"

# 7-9: in the lab VM on the DKMS-built dq.ko: the sample, the README's
# example, then dqctl over netlink, all as installed (the chroot's files, its library).
mkdir -p "$T/vm"
cp "$KO" "$T/vm/dq.ko"
LIBD=$ROOT/usr/lib/x86_64-linux-gnu
cp -a "$ROOT/tmp/sample" "$ROOT/tmp/hello" "$ROOT/usr/bin/dqctl" "$LIBD"/libdqshim.so.* "$T/vm/"
cat > "$T/vm/run.sh" <<SH
#!/bin/sh
cd "$T/vm" || exit 1
export LD_LIBRARY_PATH=$T/vm
./sample; echo "sample-exit=\$?"
h=\$(./hello); hrc=\$?; echo "hello-out:" \$h "hello-exit=\$hrc"
./dqctl create debtest --slots 16 --slot-size 64 && ./dqctl list; echo "dqctl-exit=\$?"
SH
chmod +x "$T/vm/run.sh"
"$REPO/selftests/vm/run" --kernel "$DEB_KERNEL" --module "$T/vm/dq.ko" --timeout 300 \
	-- "$T/vm/run.sh" > "$T/vm.log" 2>&1
grep -vE '^dq-vm' "$T/vm.log" | sed 's/^/#   /' | tail -n 12
grep -q '^sample-exit=0' "$T/vm.log" &&
	grep -q '^hello from the dq packages: backend kernel' "$T/vm.log"
ok $? "the sample runs on dq-dkms's dq.ko in the $DEB_KERNEL VM: payload back, not early"
# examples/hello.c commits hello, world, dq due at 100, 200, 300 ms out
# of order ("world" first): they must come back in due order.
grep -q '^hello-out: hello world dq hello-exit=0$' "$T/vm.log"
ok $? "the README's example (examples/hello.c) built against the packages runs on dq.ko: hello world dq"
grep -q '^dqctl-exit=0' "$T/vm.log" && grep -q 'debtest' "$T/vm.log"
ok $? "dqctl creates and lists a named queue on it"
finish
