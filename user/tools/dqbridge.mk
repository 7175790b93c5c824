# SPDX-License-Identifier: LGPL-2.1 OR MIT
#
# dqbridge, the message-queue-to-HTTP bridge over a durable dq queue
# (docs/dqbridge.md), built from user/tools/dqbridge/ and linked with the
# static libdqshim of the including makefile (user/Makefile), like the
# other tools.  Needs libhiredis-dev, libcurl4-openssl-dev,
# libmicrohttpd-dev, libhttp-parser-dev; librdkafka-dev adds the Kafka source (HAVE_KAFKA).
#
# Included from user/Makefile: adds `dqbridge`, `$(DQBRIDGE_BIN)`,
# `dqbridge-check` (policy_test, resp_test, sink_test, dqbridge_test.sh,
# dqbridge_shed_test.sh, dqbridge_burst_test.sh, dqbridge_release_test.sh,
# dqbridge_sync_test.sh, dqbridge_retire_test.sh, dqbridge_ack_test.sh, dqbridge_inhand_test.sh,
# dqbridge_signal_test.sh (on
# both HTTP clients) and, with librdkafka, dqbridge_kafka_test.sh against librdkafka's mock
# cluster) and
# `clean-dqbridge`; leaves the default goal alone.

DQBRIDGE_MK_DIR := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
DQBRIDGE_TOP := $(patsubst %/,%,$(dir $(patsubst %/,%,$(dir $(DQBRIDGE_MK_DIR)))))
DQBRIDGE_SAVED_GOAL := $(.DEFAULT_GOAL)

DQBRIDGE_O ?= $(if $(O),$(O),$(DQBRIDGE_TOP)/user/build)
DQBRIDGE_BIN := $(DQBRIDGE_O)/dqbridge
DQBRIDGE_SRC := $(DQBRIDGE_MK_DIR)/dqbridge
DQBRIDGE_OBJ := $(DQBRIDGE_O)/dqbridge.obj

DQBRIDGE_HAVE_KAFKA := $(and $(wildcard $(DQBRIDGE_MK_DIR)/dqbridge/source_kafka.c),$(shell pkg-config --exists rdkafka 2>/dev/null && echo 1))
DQBRIDGE_PKGS := hiredis libcurl libmicrohttpd $(if $(DQBRIDGE_HAVE_KAFKA),rdkafka)
DQBRIDGE_NAMES := main bridge config log source source_redis sink sink_curl sink_http1 resolver store policy metrics ages ev resp \
		  $(if $(DQBRIDGE_HAVE_KAFKA),source_kafka)
DQBRIDGE_OBJS := $(patsubst %,$(DQBRIDGE_OBJ)/%.o,$(DQBRIDGE_NAMES))
DQBRIDGE_CFLAGS := -std=gnu11 -Wall -Wextra -O2 -g -pthread -D_GNU_SOURCE \
		   -DDQ_VERSION='"$(shell cat $(DQBRIDGE_TOP)/VERSION)"' \
		   -I$(DQBRIDGE_TOP)/user/include -I$(DQBRIDGE_TOP)/uapi \
		   $(shell pkg-config --cflags $(DQBRIDGE_PKGS) 2>/dev/null) \
		   $(if $(DQBRIDGE_HAVE_KAFKA),-DHAVE_KAFKA)
# libhttp-parser (the native HTTP client's parser) has no pkg-config file.
DQBRIDGE_LIBS := $(shell pkg-config --libs $(DQBRIDGE_PKGS) 2>/dev/null || \
		   echo -lhiredis -lcurl -lmicrohttpd) -lhttp_parser \
		 $(shell pkg-config --libs liburing 2>/dev/null || echo -luring) \
		 $(shell pkg-config --libs libisal 2>/dev/null || echo -lisal)
DQBRIDGE_HDRS := $(wildcard $(DQBRIDGE_SRC)/*.h) $(DQBRIDGE_TOP)/user/include/dqshim.h \
		 $(DQBRIDGE_MK_DIR)/dqbridge.mk $(DQBRIDGE_TOP)/VERSION

.PHONY: dqbridge clean-dqbridge dqbridge-check dqbridge-fault-check

dqbridge: $(DQBRIDGE_BIN)

$(DQBRIDGE_OBJ)/%.o: $(DQBRIDGE_SRC)/%.c $(DQBRIDGE_HDRS)
	@mkdir -p $(DQBRIDGE_OBJ)
	$(CC) $(DQBRIDGE_CFLAGS) $(CPPFLAGS) -c -o $@ $<

$(DQBRIDGE_BIN): $(DQBRIDGE_OBJS) $(O)/libdqshim.a
	$(CC) $(DQBRIDGE_CFLAGS) -o $@ $(DQBRIDGE_OBJS) $(O)/libdqshim.a \
		$(LDFLAGS) $(DQBRIDGE_LIBS)

# The end-to-end tests: redis-server (or librdkafka's mock cluster),
# nginx and a recorder on loopback.
DQBRIDGE_KAFKA_MOCK := $(DQBRIDGE_O)/tests/dqbridge_kafka_mock
$(DQBRIDGE_KAFKA_MOCK): $(DQBRIDGE_TOP)/user/tests/dqbridge/kafka_mock.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -O2 -g -o $@ $< $(LDFLAGS) \
		$(shell pkg-config --libs rdkafka 2>/dev/null || echo -lrdkafka)

# policy.c alone (verdicts, Retry-After, backoff, the AIMD bucket).
DQBRIDGE_POLICY_TEST := $(DQBRIDGE_O)/tests/dqbridge_policy_test
$(DQBRIDGE_POLICY_TEST): $(DQBRIDGE_TOP)/user/tests/dqbridge/policy_test.c \
		$(DQBRIDGE_OBJ)/policy.o $(DQBRIDGE_OBJ)/config.o $(DQBRIDGE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DQBRIDGE_CFLAGS) -I$(DQBRIDGE_SRC) -o $@ $< \
		$(DQBRIDGE_OBJ)/policy.o $(DQBRIDGE_OBJ)/config.o $(LDFLAGS)

# resp.c against hiredis's own formatting of the same commands.
DQBRIDGE_RESP_TEST := $(DQBRIDGE_O)/tests/dqbridge_resp_test
$(DQBRIDGE_RESP_TEST): $(DQBRIDGE_TOP)/user/tests/dqbridge/resp_test.c \
		$(DQBRIDGE_OBJ)/resp.o $(DQBRIDGE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DQBRIDGE_CFLAGS) -I$(DQBRIDGE_SRC) -o $@ $< $(DQBRIDGE_OBJ)/resp.o $(LDFLAGS) \
		$(shell pkg-config --libs hiredis 2>/dev/null || echo -lhiredis)

# The HTTP sink (both clients) against a downstream of the test's own.
DQBRIDGE_SINK_TEST := $(DQBRIDGE_O)/tests/dqbridge_sink_test
DQBRIDGE_SINK_OBJS := $(patsubst %,$(DQBRIDGE_OBJ)/%.o,sink sink_curl sink_http1 resolver ev config log)
$(DQBRIDGE_SINK_TEST): $(DQBRIDGE_TOP)/user/tests/dqbridge/sink_test.c $(DQBRIDGE_SINK_OBJS) $(DQBRIDGE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DQBRIDGE_CFLAGS) -I$(DQBRIDGE_SRC) -pthread -o $@ $< $(DQBRIDGE_SINK_OBJS) $(LDFLAGS) \
		$(shell pkg-config --libs libcurl 2>/dev/null || echo -lcurl) -lhttp_parser

dqbridge-check: $(DQBRIDGE_BIN) $(DQBRIDGE_POLICY_TEST) $(DQBRIDGE_SINK_TEST) $(DQBRIDGE_RESP_TEST) \
		$(if $(DQBRIDGE_HAVE_KAFKA),$(DQBRIDGE_KAFKA_MOCK))
	@fail=0; \
	$(DQBRIDGE_POLICY_TEST) || fail=1; \
	$(DQBRIDGE_RESP_TEST) || fail=1; \
	$(DQBRIDGE_SINK_TEST) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_shed_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_burst_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_release_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_sync_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_retire_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_ack_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_inhand_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_signal_test.sh $(DQBRIDGE_BIN) || fail=1; \
	DQB_SINK_CLIENT=curl $(DQBRIDGE_TOP)/user/tests/dqbridge_signal_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_term_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(if $(DQBRIDGE_HAVE_KAFKA),$(DQBRIDGE_TOP)/user/tests/dqbridge_kafka_test.sh \
		$(DQBRIDGE_BIN) $(DQBRIDGE_KAFKA_MOCK) || fail=1;) \
	exit $$fail

# ages.c alone (the table behind dqbridge_oldest_age_seconds).
DQBRIDGE_AGES_TEST := $(DQBRIDGE_O)/tests/dqbridge_ages_test
$(DQBRIDGE_AGES_TEST): $(DQBRIDGE_TOP)/user/tests/dqbridge/ages_test.c \
		$(DQBRIDGE_OBJ)/ages.o $(DQBRIDGE_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(DQBRIDGE_CFLAGS) -I$(DQBRIDGE_SRC) -o $@ $< $(DQBRIDGE_OBJ)/ages.o $(LDFLAGS)

# The fault and scaling tests (docs/dqbridge.md, Tests): three instances
# on one Redis group, faults (journal full, Retry-After, too_large,
# drain_timeout, oldest age), Redis unreachable at start and the
# downstream down for 30 s, and, with librdkafka, a Kafka rebalance.
dqbridge-fault-check: $(DQBRIDGE_BIN) $(DQBRIDGE_AGES_TEST) \
		$(if $(DQBRIDGE_HAVE_KAFKA),$(DQBRIDGE_KAFKA_MOCK))
	@fail=0; \
	$(DQBRIDGE_AGES_TEST) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_group_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_fault_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(DQBRIDGE_TOP)/user/tests/dqbridge_outage_test.sh $(DQBRIDGE_BIN) || fail=1; \
	$(if $(DQBRIDGE_HAVE_KAFKA),$(DQBRIDGE_TOP)/user/tests/dqbridge_rebalance_test.sh \
		$(DQBRIDGE_BIN) $(DQBRIDGE_KAFKA_MOCK) || fail=1;) \
	exit $$fail

clean-dqbridge:
	rm -rf $(DQBRIDGE_BIN) $(DQBRIDGE_OBJ) $(DQBRIDGE_POLICY_TEST) $(DQBRIDGE_SINK_TEST) $(DQBRIDGE_KAFKA_MOCK) \
		$(DQBRIDGE_SCEN_PRODUCER) $(DQBRIDGE_SCEN_RECORDER) $(DQBRIDGE_AGES_TEST)

# The scenario (user/tests/dqbridge_scenario.sh): 10k msg/s offered, the
# downstream's limit 2000 -> 500 -> 3000 r/s.  dqbridge-scenario-check:
# 15 s of offer (the make check suite dqbridge-scenario, ~1.5 min);
# dqbridge-scenario-bench: 60 s of offer, figures into
# docs/records/bench/dqbridge-scenario.txt (~4-5 min); dqbridge-demo: 6 s with a
# per-second table (make demo).
DQBRIDGE_SCEN_PRODUCER := $(DQBRIDGE_O)/tests/dqbridge_scen_producer
DQBRIDGE_SCEN_RECORDER := $(DQBRIDGE_O)/tests/dqbridge_scen_recorder
DQBRIDGE_SCEN := $(DQBRIDGE_TOP)/user/tests/dqbridge_scenario.sh $(DQBRIDGE_BIN) \
		 $(DQBRIDGE_SCEN_PRODUCER) $(DQBRIDGE_SCEN_RECORDER)
$(DQBRIDGE_SCEN_PRODUCER): $(DQBRIDGE_TOP)/user/tests/dqbridge/scen_producer.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -O2 -g -o $@ $< $(LDFLAGS) \
		$(shell pkg-config --libs hiredis libcrypto 2>/dev/null || echo -lhiredis -lcrypto)
$(DQBRIDGE_SCEN_RECORDER): $(DQBRIDGE_TOP)/user/tests/dqbridge/scen_recorder.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Wall -Wextra -O2 -g -pthread -o $@ $< $(LDFLAGS) \
		$(shell pkg-config --libs libmicrohttpd libcrypto 2>/dev/null || echo -lmicrohttpd -lcrypto)

.PHONY: dqbridge-scenario-check dqbridge-scenario-bench dqbridge-demo
dqbridge-scenario-check: $(DQBRIDGE_BIN) $(DQBRIDGE_SCEN_PRODUCER) $(DQBRIDGE_SCEN_RECORDER)
	timeout 300 $(DQBRIDGE_SCEN) --offer-s 15
dqbridge-scenario-bench: $(DQBRIDGE_BIN) $(DQBRIDGE_SCEN_PRODUCER) $(DQBRIDGE_SCEN_RECORDER)
	timeout 900 $(DQBRIDGE_SCEN) --offer-s 60 \
		--report $(DQBRIDGE_TOP)/docs/records/bench/dqbridge-scenario.txt
dqbridge-demo: $(DQBRIDGE_BIN) $(DQBRIDGE_SCEN_PRODUCER) $(DQBRIDGE_SCEN_RECORDER)
	timeout 150 $(DQBRIDGE_SCEN) --offer-s 6 --demo

.DEFAULT_GOAL := $(DQBRIDGE_SAVED_GOAL)
