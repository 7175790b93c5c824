/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's configuration: a file of `key = value` lines (# comments,
 * blank lines ignored) read first, then command-line flags `--key value`
 * (or `--key=value`, dashes or underscores alike) on top.  Every key is
 * listed, with its default and meaning, in docs/dqbridge.md and by
 * `dqbridge --help-config`; config.c holds the one table they come from.
 */
#ifndef DQB_CONFIG_H
#define DQB_CONFIG_H

#include <stdint.h>
#include <stdio.h>

#define CFG_STR 256

/* retry_on bits: which failures divert a message into dq for a retry. */
#define RETRY_429	(1U << 0)
#define RETRY_503	(1U << 1)
#define RETRY_5XX	(1U << 2)	/* any other 5xx */
#define RETRY_TIMEOUT	(1U << 3)
#define RETRY_CONNECT	(1U << 4)	/* refused, reset, DNS: downstream down */

struct config {
	/* source */
	char source[CFG_STR];		/* "redis" (or "kafka" when built in) */
	char redis_host[CFG_STR];
	uint32_t redis_port;
	char redis_stream[CFG_STR];
	char redis_group[CFG_STR];
	char redis_consumer[CFG_STR];	/* default: the host name */
	char redis_field[CFG_STR];	/* the entry's field that is the body */
	char redis_start_id[CFG_STR];	/* where a new group starts: 0 or $ */
	char deadletter_stream[CFG_STR]; /* default: <stream>:dead */
	uint32_t redis_claim_idle_ms;	/* XAUTOCLAIM entries idle this long */
	uint32_t redis_claim_interval_ms;
	uint32_t source_batch;		/* entries per read */
	uint32_t source_read_interval_ms; /* Redis: wait after a short read */
	char kafka_brokers[CFG_STR];
	char kafka_topic[CFG_STR];
	char kafka_group[CFG_STR];
	char kafka_deadletter_topic[CFG_STR];
	uint32_t kafka_session_timeout_ms; /* a dead member is noticed after */
	char kafka_instance_id[CFG_STR]; /* group.instance.id: static member */
	uint32_t kafka_mock_brokers;	/* >0: librdkafka's mock cluster (tests) */
	/* sink */
	char sink_url[CFG_STR];
	char sink_client[CFG_STR];	/* auto (native for http://), curl */
	char sink_content_type[CFG_STR];
	uint32_t sink_timeout_ms;
	uint32_t sink_connect_timeout_ms;
	uint32_t max_inflight;		/* HTTP requests at once (and dq's cap) */
	/* policy */
	uint32_t retry_on;		/* RETRY_* */
	uint32_t max_attempts;		/* failures (not rate signals) before dead letter */
	uint32_t max_wait_s;		/* since first diverted, then dead letter; 0: off */
	uint32_t backoff_base_ms;
	uint32_t backoff_max_ms;
	uint32_t retry_after_max_s;	/* a longer Retry-After is capped */
	uint32_t direct_cooldown_ms;	/* after a 429, divert for this long */
	/* rate (token bucket, msgs/s) */
	double rate_floor;
	double rate_ceiling;
	double rate_initial;		/* 0: the ceiling */
	double rate_increase;		/* msgs/s added per second of success */
	double rate_decrease;		/* factor applied on a 429/503 (0..1) */
	uint32_t rate_decrease_interval_ms; /* at most one decrease per this */
	uint32_t burst_ms;		/* bucket depth: this much time's tokens */
	double rate_latency_factor;	/* slow 2xx = a rate signal; 0: off */
	uint32_t rate_latency_min_ms;	/* ... and slower than usual + this */
	char rate_state_file[CFG_STR];	/* the rate kept across restarts */
	/* dq */
	char dq_dir[CFG_STR];		/* journal directory */
	char dq_backend[CFG_STR];	/* auto, kernel, user */
	char dq_durability[CFG_STR];	/* batch, always */
	uint32_t dq_sync_interval_ms;	/* batch: group commit interval */
	uint32_t dq_retire_sync_ms;	/* batch: fdatasync interval of retires alone */
	uint32_t dq_slots;
	uint32_t dq_slot_size;
	uint64_t dq_max_bytes;		/* journal limit; 0: library default */
	uint64_t dq_segment_bytes;	/* 0: library default */
	uint32_t high_watermark;	/* held >= this: stop reading the source */
	uint32_t low_watermark;		/* held <= this: read again */
	uint32_t max_unacked;		/* source messages read, not yet acked */
	/* operations */
	char metrics_listen[CFG_STR];	/* host:port; empty: no endpoint */
	char log_level[CFG_STR];
	uint32_t drain_timeout_ms;	/* SIGTERM: wait this long for HTTP */
};

/* Fill @c with the defaults. */
void config_defaults(struct config *c);

/*
 * Set key @key (dashes or underscores) to @val.  0, or -ENOENT (unknown
 * key) / -EINVAL (bad value), with a message in @err.
 */
int config_set(struct config *c, const char *key, const char *val,
	       char *err, size_t errlen);

/*
 * Read @path: every `key = value` line through config_set().  0, or
 * -errno with "PATH:LINE: why" in @err.
 */
int config_load(struct config *c, const char *path, char *err, size_t errlen);

/*
 * Fill what the defaults leave to other keys (consumer name, dead-letter
 * stream, watermarks, initial rate) and check the whole.  0 or -EINVAL.
 */
int config_finish(struct config *c, char *err, size_t errlen);

/* The effective configuration, as a file config_load() reads back. */
void config_print(const struct config *c, FILE *f);

/* Every key with its default and a line of help. */
void config_help(FILE *f);

/* The rate keys only (SIGHUP): copy them from @from into @to. */
void config_copy_rates(struct config *to, const struct config *from);

#endif /* DQB_CONFIG_H */
