# SPDX-License-Identifier: GPL-2.0
#
# dq top-level build.  `make` builds dq.ko, the library, the tools and the
# tests; `make deps` installs every Debian package they need.

SHELL := /bin/bash

# Kernel to build ./dq.ko against, never guessed from what happens to be
# installed: KDIR=DIR when given; else the running kernel's build directory
# when it has one; else the lab's kernel LAB_KERNEL (default 6.1, a NAME of
# selftests/vm/kernels.conf), whose headers scripts/lab-kernel.sh fetches
# into the lab's cache once.  Lab kernels that need another toolchain (the
# trixie chroot) are built with `make lab-modules`, out of the work tree.
KVER_RUNNING := $(shell uname -r)
LAB_KERNEL ?= 6.1
KDIR ?= $(if $(wildcard /lib/modules/$(KVER_RUNNING)/build/Makefile),/lib/modules/$(KVER_RUNNING)/build)
KDIR_SH = $(or $(KDIR),$$(scripts/lab-kernel.sh kdir $(LAB_KERNEL)))

CC ?= cc
CFLAGS ?= -O2 -g
DQ_CFLAGS := $(CFLAGS) -Wall -Wextra -Iuapi -D_GNU_SOURCE

VM_RUN := selftests/vm/run

.PHONY: all module lab-modules user ebpf selftests deps check test host-check lab-check vm-check demo \
	kunit stress bench bench-quick checkpatch clean help

all: module selftests user ebpf

help:
	@echo "make            build dq.ko (KDIR=$(or $(KDIR),lab kernel $(LAB_KERNEL))) and the tests"
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

module:
	@kdir="$(KDIR_SH)" && test -n "$$kdir" && echo "dq.ko against $$kdir" && \
		$(MAKE) -C "$$kdir" M=$(CURDIR) modules

lab-modules:
	@for k in $$(scripts/lab-kernel.sh list | cut -d' ' -f1); do \
		scripts/lab-kernel.sh modules $$k || exit 1; done

selftests:
	$(MAKE) -C selftests

user:
	$(MAKE) -C user

deps:
	scripts/deps.sh

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
bench: deps module user
	$(MAKE) -C bench bench
	$(MAKE) -C bindings/go bench-compare

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

clean:
	-kdir="$(KDIR_SH)" && $(MAKE) -C "$$kdir" M=$(CURDIR) clean
	-$(MAKE) -C selftests clean
