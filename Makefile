# SPDX-License-Identifier: GPL-2.0
#
# dq top-level build.  `make` builds the library and the tools, and dq.ko
# when the running kernel's headers are installed (else it says how to get
# them); it needs neither root nor the network.  `make deps` installs
# every Debian package dq needs to build and test.

SHELL := /bin/bash

# Kernel to build ./dq.ko against, never guessed from what happens to be
# installed: KDIR=DIR when given; else the running kernel's build directory
# when it has one; else, for `make module` (not for plain `make`), the
# lab's kernel LAB_KERNEL (default 6.1, a NAME of selftests/vm/kernels.conf),
# whose headers scripts/lab-kernel.sh fetches into the lab's cache once
# (`make lab-module`: that kernel whatever runs).  Lab kernels that need another toolchain (the
# trixie chroot) are built with `make lab-modules`, out of the work tree.
KVER_RUNNING := $(shell uname -r)
LAB_KERNEL ?= 6.1
KDIR ?= $(if $(wildcard /lib/modules/$(KVER_RUNNING)/build/Makefile),/lib/modules/$(KVER_RUNNING)/build)
KDIR_SH = $(or $(KDIR),$$(scripts/lab-kernel.sh kdir $(LAB_KERNEL)))

CC ?= cc
CFLAGS ?= -O2 -g
DQ_CFLAGS := $(CFLAGS) -Wall -Wextra -Iuapi -D_GNU_SOURCE

VM_RUN := selftests/vm/run

.PHONY: all module lab-module lab-modules maybe-module maybe-ebpf user ebpf selftests deps check \
	test host-check lab-check vm-check demo kunit stress bench bench-quick checkpatch install \
	deb deb-check clean help

# The default: what a user of dq builds, as any user, offline.  dq.ko and
# dqlat (eBPF) only where the machine has what they are built against.
all: user maybe-module maybe-ebpf

maybe-module:
ifneq ($(KDIR),)
	@$(MAKE) --no-print-directory module
else
	@echo "dq.ko: not built: no headers for the running kernel $(KVER_RUNNING) (apt-get install linux-headers-$(KVER_RUNNING); or make lab-module: the lab's kernel $(LAB_KERNEL), fetched)"
endif

maybe-ebpf:
ifneq ($(wildcard /sys/kernel/btf/vmlinux),)
	@$(MAKE) --no-print-directory ebpf
else
	@echo "dqlat: not built: the running kernel has no BTF (/sys/kernel/btf/vmlinux)"
endif

help:
	@echo "make            the library and the tools; dq.ko when $(or $(KDIR),the running kernel's headers) exist"
	@echo "make module     dq.ko (KDIR=$(or $(KDIR),lab kernel $(LAB_KERNEL)))"
	@echo "make lab-module dq.ko for the lab's kernel LAB_KERNEL=$(LAB_KERNEL) (fetched once)"
	@echo "make install    library, headers, tools and man pages (PREFIX=/usr/local DESTDIR=)"
	@echo "make lab-modules dq.ko for every kernel of the lab (selftests/vm/kernels.conf)"
	@echo "make deps       install the Debian packages the project needs"
	@echo "make check      host tests + every VM test (the test command)"
	@echo "make test       the quick tier: host suites, no root, no VM (~5 min)"
	@echo "make vm-check   the selftests inside the qemu VM, dq.ko loaded"
	@echo "make demo       show dq releasing messages on time, in the VM"
	@echo "make bench      the peers side by side, writes docs/benchmarks.md"
	@echo "make kunit      KUnit suites on the debug kernel (first build: long)"
	@echo "make stress     5 min randomized stress on the debug kernel"
	@echo "make checkpatch run the kernel's checkpatch.pl over kmod/ and uapi/"
	@echo "make deb        the Debian packages into build/deb/ (deb-check: install and test them)"

module:
	@kdir="$(KDIR_SH)" && test -n "$$kdir" && echo "dq.ko against $$kdir" && \
		$(MAKE) -C "$$kdir" M=$(CURDIR) modules

lab-module:
	@kdir=$$(scripts/lab-kernel.sh kdir $(LAB_KERNEL)) && test -n "$$kdir" && \
		echo "dq.ko against $$kdir" && $(MAKE) -C "$$kdir" M=$(CURDIR) modules

lab-modules:
	@for k in $$(scripts/lab-kernel.sh list | cut -d' ' -f1); do \
		scripts/lab-kernel.sh modules $$k || exit 1; done

selftests:
	$(MAKE) -C selftests

user:
	$(MAKE) -C user

deps:
	scripts/deps.sh

# The library, its headers and dqshim.pc, the tools and the man pages;
# dq.ko goes through DKMS (scripts/dkms.sh install) or the packages.
install: user
	$(MAKE) -C user install

ebpf:
	$(MAKE) -C ebpf

host-check: selftests user ebpf
	$(MAKE) -C selftests host-check
	$(MAKE) -C user check
	$(MAKE) -C ebpf check

# Every TAP program that needs dq.ko, run in one VM boot.
VM_TESTS = $$(cat selftests/build/TESTS) \
	user/build/tests/kernel_backend_test user/build/tests/thread_test

vm-check: module selftests user
	$(MAKE) -C selftests/ctl
	$(VM_RUN) -- selftests/run-vm-tests.sh $(VM_TESTS)
	$(VM_RUN) --timeout 1500 -- selftests/ctl/run.sh
	$(VM_RUN) --timeout 900 -- ebpf/tests/vm_dqlat_test.sh

lab-check:
	selftests/vm/lab-selftest.sh

# The test command: every suite, one total line at the end.
check: deps
	scripts/check.sh

# The quick tier (scripts/check.sh --test): the host suites that need no
# root and no VM, as any user; no make deps (it needs root), so the
# packages must be there already.
test:
	scripts/check.sh --test

demo: deps
	$(MAKE) module user
	@echo "== native, on libdqshim's user engine (no /dev/dq on this host)"
	user/build/dqdemo
	@echo "== dqbridge natively: a Redis stream offered 10k msg/s for 6 s, nginx in front of the"
	@echo "   app accepting 2000, then 500, then 3000 r/s; the bridge diverts into dq and paces"
	timeout 180 $(MAKE) -s -C user dqbridge-demo
	@echo "== in the VM, on dq.ko"
	$(VM_RUN) -- user/build/dqdemo

# Benchmarks against the peers, in the VM and natively (docs/benchmarks.md).
# The Go comparison first: bench's report takes its goal line from
# docs/records/bench/go.txt.
bench: deps module user
	$(MAKE) -C bindings/go bench-compare
	$(MAKE) -C bench bench

bench-quick: deps module user
	$(MAKE) -C bench bench-quick

# KUnit suites on the debug kernel (KASAN, lockdep, kmemleak), built once
# from linux-source-6.1 and cached in /var/cache/dq-lab.
kunit: deps
	scripts/kunit.sh

# The randomized stress, 5 minutes on the debug kernel.
stress: deps module
	$(MAKE) -C selftests/stress
	scripts/stress.sh 300 --kernel debug

checkpatch:
	scripts/checkpatch.sh

# The Debian packages (debian/), built out of the work tree into build/deb/.
deb:
	scripts/deb-build.sh

# Install them in a clean chroot and load dq-dkms's dq.ko in the lab VM.
deb-check: deb
	scripts/deb-test.sh

# Without a kernel at hand (no KDIR, no running kernel's headers) the
# module's outputs are removed by name: cleaning never fetches a kernel.
clean:
ifneq ($(KDIR),)
	-$(MAKE) -C "$(KDIR)" M=$(CURDIR) clean
else
	rm -f dq.ko dq.o dq.mod dq.mod.c dq.mod.o .dq.* Module.symvers modules.order \
		.Module.symvers.cmd .modules.order.cmd
	find kmod -name '*.o' -o -name '.*.cmd' -o -name '*.o.d' | xargs rm -f
endif
	-$(MAKE) -C selftests clean
