#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install every Debian package dq needs to build, test and benchmark.
# Idempotent, and quick when everything is already there.
set -euo pipefail

packages=(
	build-essential make gcc pkg-config kmod cpio xz-utils patch
	linux-headers-amd64 linux-source-6.1
	qemu-system-x86 busybox-static
	debootstrap dwarves zstd
	clang llvm libclang-rt-14-dev libbpf-dev bpftool liburing-dev libmnl-dev libjson-c-dev
	rt-tests jq util-linux dkms python3-yaml
	flex bison bc libelf-dev libssl-dev rsync
	redis-server libhiredis-dev beanstalkd gnuplot-nox stress-ng valgrind
	libisal-dev systemtap-sdt-dev
	libcurl4-openssl-dev libmicrohttpd-dev libhttp-parser-dev nginx librdkafka-dev strace
	wrk
	debhelper dh-dkms lintian
	man-db groff-base
	golang-go
)

missing=()
for p in "${packages[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "deps: all ${#packages[@]} packages present"
	exit 0
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
