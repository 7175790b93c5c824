# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqctl, the dq control-plane tool (generic netlink over libmnl, JSON
# through json-c), built from user/tools/dqctl/, with the journal format
# (user/src/dq_jformat.c, CRC32C from isa-l) for `dqctl journal`.
#
# Standalone, from the repository root:
#   make -f user/tools/dqctl.mk            builds user/build/dqctl
#   make -f user/tools/dqctl.mk clean-dqctl
# Included from another makefile (e.g. user/Makefile): it adds the targets
# `dqctl`, `$(DQCTL_BIN)` and `clean-dqctl` and leaves the default goal
# alone.  The output directory is $(DQCTL_O), by default $(O) when the
# including makefile sets O, else user/build; objects go to
# $(DQCTL_O)/dqctl.obj/.  $(DQCTL_LIB_OBJS) is every object but main's,
# for tests that link dqctl's printers (user/tests/dqctl_format_test.c).

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
DQCTL_PKGS := libmnl json-c
DQCTL_PKG_CFLAGS := $(shell pkg-config --cflags $(DQCTL_PKGS) 2>/dev/null)
DQCTL_LIBS := $(shell pkg-config --libs $(DQCTL_PKGS) 2>/dev/null || \
		echo -lmnl -ljson-c) \
	      $(shell pkg-config --libs libisal 2>/dev/null || echo -lisal)
# dq's one version, VERSION at the top (dqctl --version).
DQCTL_VERSION := $(shell cat $(DQCTL_TOP)/VERSION)
DQCTL_CFLAGS := -std=gnu11 -Wall -Wextra $(DQCTL_OPT_CFLAGS) \
		-I$(DQCTL_TOP)/uapi -D_GNU_SOURCE $(DQCTL_PKG_CFLAGS) \
		-DDQ_VERSION='"$(DQCTL_VERSION)"'
DQCTL_SRC := $(DQCTL_MK_DIR)/dqctl
DQCTL_OBJ := $(DQCTL_O)/dqctl.obj
DQCTL_NAMES := main args nl attrs queue node events raw fmt print journal
# The journal format is the library's own file, compiled in from
# user/src (not copied), so dqctl reads journals as recovery does.
DQCTL_LIBSRC := $(DQCTL_TOP)/user/src
DQCTL_OBJS := $(patsubst %,$(DQCTL_OBJ)/%.o,$(DQCTL_NAMES)) \
	      $(DQCTL_OBJ)/dq_jformat.o
DQCTL_LIB_OBJS := $(filter-out $(DQCTL_OBJ)/main.o,$(DQCTL_OBJS))
DQCTL_HDRS := $(wildcard $(DQCTL_SRC)/*.h) $(DQCTL_TOP)/uapi/linux/dq.h \
	      $(DQCTL_LIBSRC)/dq_jformat.h $(DQCTL_MK_DIR)/dqctl.mk $(DQCTL_TOP)/VERSION
# What a program linking dqctl's objects depends on.
DQCTL_DEPS := $(DQCTL_LIB_OBJS) $(DQCTL_HDRS)

.PHONY: dqctl clean-dqctl

dqctl: $(DQCTL_BIN)

$(DQCTL_OBJ)/%.o: $(DQCTL_SRC)/%.c $(DQCTL_HDRS)
	@mkdir -p $(DQCTL_OBJ)
	$(DQCTL_CC) $(DQCTL_CFLAGS) $(CPPFLAGS) -c -o $@ $<

$(DQCTL_OBJ)/journal.o: DQCTL_CFLAGS += -I$(DQCTL_LIBSRC)
$(DQCTL_OBJ)/dq_jformat.o: $(DQCTL_LIBSRC)/dq_jformat.c $(DQCTL_HDRS)
	@mkdir -p $(DQCTL_OBJ)
	$(DQCTL_CC) $(DQCTL_CFLAGS) $(CPPFLAGS) -c -o $@ $<

$(DQCTL_BIN): $(DQCTL_OBJS)
	$(DQCTL_CC) $(DQCTL_CFLAGS) -o $@ $(DQCTL_OBJS) $(LDFLAGS) $(DQCTL_LIBS)

clean-dqctl:
	rm -rf $(DQCTL_BIN) $(DQCTL_OBJ)

ifeq ($(DQCTL_STANDALONE),1)
.DEFAULT_GOAL := dqctl
else
.DEFAULT_GOAL := $(DQCTL_SAVED_GOAL)
endif
