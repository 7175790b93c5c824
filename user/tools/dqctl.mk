# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqctl, the dq control-plane tool (generic netlink over libmnl).
#
# Standalone, from the repository root:
#   make -f user/tools/dqctl.mk            builds user/build/dqctl
#   make -f user/tools/dqctl.mk clean-dqctl
# Included from another makefile (e.g. user/Makefile): it adds the targets
# `dqctl`, `$(DQCTL_BIN)` and `clean-dqctl` and leaves the default goal
# alone.  The output directory is $(DQCTL_O), by default $(O) when the
# including makefile sets O, else user/build.

DQCTL_MK_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
DQCTL_TOP := $(patsubst %/,%,$(dir $(patsubst %/,%,$(dir $(DQCTL_MK_DIR)))))
DQCTL_STANDALONE := $(if $(filter 1,$(words $(MAKEFILE_LIST))),1,)
DQCTL_SAVED_GOAL := $(.DEFAULT_GOAL)

ifneq ($(O),)
DQCTL_O ?= $(O)
else
DQCTL_O ?= $(DQCTL_TOP)/user/build
endif
DQCTL_BIN := $(DQCTL_O)/dqctl

DQCTL_CC ?= $(CC)
DQCTL_OPT_CFLAGS ?= -O2 -g
DQCTL_MNL_CFLAGS := $(shell pkg-config --cflags libmnl 2>/dev/null)
DQCTL_MNL_LIBS := $(shell pkg-config --libs libmnl 2>/dev/null || echo -lmnl)
DQCTL_CFLAGS := -std=gnu11 -Wall -Wextra $(DQCTL_OPT_CFLAGS) \
		-I$(DQCTL_TOP)/uapi -D_GNU_SOURCE $(DQCTL_MNL_CFLAGS)
DQCTL_DEPS := $(DQCTL_MK_DIR)/dqctl.c $(DQCTL_TOP)/uapi/linux/dq.h \
	      $(DQCTL_MK_DIR)/dqctl.mk

.PHONY: dqctl clean-dqctl

dqctl: $(DQCTL_BIN)

$(DQCTL_BIN): $(DQCTL_DEPS)
	@mkdir -p $(DQCTL_O)
	$(DQCTL_CC) $(DQCTL_CFLAGS) $(CPPFLAGS) -o $@ $(DQCTL_MK_DIR)/dqctl.c \
		$(LDFLAGS) $(DQCTL_MNL_LIBS)

clean-dqctl:
	rm -f $(DQCTL_BIN)

ifeq ($(DQCTL_STANDALONE),1)
.DEFAULT_GOAL := dqctl
else
.DEFAULT_GOAL := $(DQCTL_SAVED_GOAL)
endif
