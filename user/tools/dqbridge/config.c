// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the configuration (config.h).  One table names every key, its
 * type, where it lives in struct config, its default and its help line:
 * the file parser, the flag parser, --print-config and --help-config all
 * read it, so they cannot disagree.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"

enum ktype { K_STR, K_U32, K_U64, K_DBL, K_RETRY };

struct key {
	const char *name;
	enum ktype type;
	size_t off;
	const char *def;
	const char *help;
};

#define F(f) offsetof(struct config, f)

static const struct key keys[] = {
	{ "source", K_STR, F(source), "redis", "redis or kafka" },
	{ "redis_host", K_STR, F(redis_host), "127.0.0.1", "Redis server" },
	{ "redis_port", K_U32, F(redis_port), "6379", "" },
	{ "redis_stream", K_STR, F(redis_stream), "", "stream to consume (required for redis)" },
	{ "redis_group", K_STR, F(redis_group), "dqbridge", "consumer group (XGROUP CREATE ... MKSTREAM)" },
	{ "redis_consumer", K_STR, F(redis_consumer), "", "consumer name; keep it stable across restarts (default: host name)" },
	{ "redis_field", K_STR, F(redis_field), "payload", "entry field sent as the HTTP body" },
	{ "redis_start_id", K_STR, F(redis_start_id), "0", "where a new group starts: 0 (whole stream) or $ (new entries)" },
	{ "deadletter_stream", K_STR, F(deadletter_stream), "", "dead-letter stream (default: <redis_stream>:dead)" },
	{ "redis_claim_idle_ms", K_U32, F(redis_claim_idle_ms), "60000", "XAUTOCLAIM entries another consumer left pending this long" },
	{ "redis_claim_interval_ms", K_U32, F(redis_claim_interval_ms), "5000", "how often to XAUTOCLAIM" },
	{ "source_batch", K_U32, F(source_batch), "64", "entries per read" },
	{ "source_read_interval_ms", K_U32, F(source_read_interval_ms), "10", "Redis: after a read that came back not full, the next one waits this long (batches at low rates; 0: at once)" },
	{ "kafka_brokers", K_STR, F(kafka_brokers), "", "bootstrap.servers" },
	{ "kafka_topic", K_STR, F(kafka_topic), "", "" },
	{ "kafka_group", K_STR, F(kafka_group), "dqbridge", "group.id" },
	{ "kafka_deadletter_topic", K_STR, F(kafka_deadletter_topic), "", "default: <kafka_topic>.dead" },
	{ "kafka_session_timeout_ms", K_U32, F(kafka_session_timeout_ms), "10000", "session.timeout.ms: a dead member's partitions move after this" },
	{ "kafka_instance_id", K_STR, F(kafka_instance_id), "", "group.instance.id (static membership: a restart keeps the partitions); empty: dynamic" },
	{ "kafka_mock_brokers", K_U32, F(kafka_mock_brokers), "0", ">0: use librdkafka's mock cluster (tests only)" },
	{ "sink_url", K_STR, F(sink_url), "", "downstream URL, POSTed to (required)" },
	{ "sink_client", K_STR, F(sink_client), "auto", "HTTP client: auto (dqbridge's own HTTP/1.1 client for an http:// sink_url without a proxy, libcurl otherwise) or curl (libcurl always)" },
	{ "sink_content_type", K_STR, F(sink_content_type), "application/octet-stream", "" },
	{ "sink_timeout_ms", K_U32, F(sink_timeout_ms), "5000", "whole request" },
	{ "sink_connect_timeout_ms", K_U32, F(sink_connect_timeout_ms), "1000", "" },
	{ "max_inflight", K_U32, F(max_inflight), "32", "HTTP requests at once; also dq's max in flight" },
	{ "retry_on", K_RETRY, F(retry_on), "429,503,5xx,timeout,connect", "failures retried through dq: 429 503 5xx timeout connect" },
	{ "max_attempts", K_U32, F(max_attempts), "8", "failed HTTP attempts before the dead-letter stream; rate signals (429, 503) do not count" },
	{ "max_wait_s", K_U32, F(max_wait_s), "0", "a message not delivered this long after it was first diverted goes to the dead-letter stream at its next answer (0: no bound)" },
	{ "backoff_base_ms", K_U32, F(backoff_base_ms), "500", "first retry delay without Retry-After" },
	{ "backoff_max_ms", K_U32, F(backoff_max_ms), "60000", "" },
	{ "retry_after_max_s", K_U32, F(retry_after_max_s), "3600", "a longer Retry-After is capped" },
	{ "direct_cooldown_ms", K_U32, F(direct_cooldown_ms), "1000", "after a 429 or 503, new messages go through dq this long" },
	{ "rate_floor", K_DBL, F(rate_floor), "1", "msgs/s, lowest send rate" },
	{ "rate_ceiling", K_DBL, F(rate_ceiling), "1000", "msgs/s, highest send rate" },
	{ "rate_initial", K_DBL, F(rate_initial), "0", "msgs/s at start; 0: the ceiling" },
	{ "rate_increase", K_DBL, F(rate_increase), "20", "msgs/s added per second of successes (additive increase); 1/16 of it at the rate the last decrease by the refused share left, growing to all of it 10 % above; all of it below" },
	{ "rate_decrease", K_DBL, F(rate_decrease), "0.7", "a rate signal (429, 503) multiplies the rate by 1 - the share of signals among the answers since the last decrease, by no less than this (and by this when the answers came at less than this x the rate)" },
	{ "rate_decrease_interval_ms", K_U32, F(rate_decrease_interval_ms), "500", "at most one decrease per interval (the signals within it count for the next)" },
	{ "rate_latency_factor", K_DBL, F(rate_latency_factor), "0", "a 2xx slower than this x the usual answer time lowers the rate like a 429 (0: off; else > 1)" },
	{ "rate_latency_min_ms", K_U32, F(rate_latency_min_ms), "10", "and slower than the usual time + this (jitter of fast answers is no signal)" },
	{ "burst_ms", K_U32, F(burst_ms), "20", "token bucket depth, in time at the current rate" },
	{ "rate_state_file", K_STR, F(rate_state_file), "", "the learnt rate, kept across restarts (default: <dq_dir>.rate; \"none\": not kept)" },
	{ "dq_dir", K_STR, F(dq_dir), "/var/lib/dqbridge/dq", "journal directory of the durable queue" },
	{ "dq_backend", K_STR, F(dq_backend), "auto", "auto (kernel if /dev/dq works), kernel, user" },
	{ "dq_durability", K_STR, F(dq_durability), "batch", "batch (group commit) or always" },
	{ "dq_sync_interval_ms", K_U32, F(dq_sync_interval_ms), "50", "batch: at most one fdatasync per this long (commits, and retires with them; retires alone: dq_retire_sync_ms; source_batch commits waiting sync at once); a diverted message is acked up to this plus an fdatasync after its commit; 1..1000" },
	{ "dq_retire_sync_ms", K_U32, F(dq_retire_sync_ms), "1000", "batch: while only retire entries (deliveries) wait, at most one fdatasync per this long; they are still written every dq_sync_interval_ms, so a kill -9 resends nothing, but a power cut may resend up to this long of deliveries (with their Idempotency-Key); 0 or <= dq_sync_interval_ms: as dq_sync_interval_ms; 0..60000" },
	{ "dq_slots", K_U32, F(dq_slots), "65536", "most messages held" },
	{ "dq_slot_size", K_U32, F(dq_slot_size), "4096", "bytes per slot: header + id + body" },
	{ "dq_max_bytes", K_U64, F(dq_max_bytes), "0", "journal size limit; 0: 1 GiB" },
	{ "dq_segment_bytes", K_U64, F(dq_segment_bytes), "0", "journal segment size; 0: 64 MiB" },
	{ "high_watermark", K_U32, F(high_watermark), "0", "held >= this: stop reading the source (0: 80 % of slots)" },
	{ "low_watermark", K_U32, F(low_watermark), "0", "held <= this: read again (0: 50 % of slots)" },
	{ "max_unacked", K_U32, F(max_unacked), "0", "source messages read and not acked; Kafka: read and not committed (0: 4 x max_inflight + source_batch)" },
	{ "metrics_listen", K_STR, F(metrics_listen), "127.0.0.1:9464", "Prometheus endpoint host:port; empty: none" },
	{ "log_level", K_STR, F(log_level), "info", "error warn info debug" },
	{ "drain_timeout_ms", K_U32, F(drain_timeout_ms), "10000", "SIGTERM: wait this long for requests in flight" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const retry_names[] = { "429", "503", "5xx", "timeout", "connect" };

static const struct key *key_find(const char *name)
{
	char n[64];
	size_t i;

	for (i = 0; name[i] && i < sizeof(n) - 1; i++)
		n[i] = name[i] == '-' ? '_' : name[i];
	n[i] = '\0';
	for (i = 0; i < NKEYS; i++)
		if (!strcmp(keys[i].name, n))
			return &keys[i];
	return NULL;
}

static int parse_retry(const char *v, uint32_t *out)
{
	char buf[CFG_STR], *save, *tok;
	uint32_t bits = 0;
	unsigned int i;

	snprintf(buf, sizeof(buf), "%s", v);
	for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		for (i = 0; i < sizeof(retry_names) / sizeof(retry_names[0]); i++)
			if (!strcasecmp(tok, retry_names[i]))
				break;
		if (i == sizeof(retry_names) / sizeof(retry_names[0]))
			return -EINVAL;
		bits |= 1U << i;
	}
	*out = bits;
	return 0;
}

static int key_set(struct config *c, const struct key *k, const char *v)
{
	char *p = (char *)c + k->off, *end;
	unsigned long long u;
	double d;

	switch (k->type) {
	case K_STR:
		if (strlen(v) >= CFG_STR)
			return -EINVAL;
		strcpy(p, v);
		return 0;
	case K_U32:
	case K_U64:
		if (!*v || *v == '-')
			return -EINVAL;
		errno = 0;
		u = strtoull(v, &end, 0);
		if (errno || *end || (k->type == K_U32 && u > UINT32_MAX))
			return -EINVAL;
		if (k->type == K_U32)
			*(uint32_t *)p = (uint32_t)u;
		else
			*(uint64_t *)p = u;
		return 0;
	case K_DBL:
		errno = 0;
		d = strtod(v, &end);
		if (errno || !*v || *end || d < 0)
			return -EINVAL;
		*(double *)p = d;
		return 0;
	case K_RETRY:
		return parse_retry(v, (uint32_t *)p);
	}
	return -EINVAL;
}

void config_defaults(struct config *c)
{
	size_t i;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NKEYS; i++)
		key_set(c, &keys[i], keys[i].def);
}

int config_set(struct config *c, const char *key, const char *val,
	       char *err, size_t errlen)
{
	const struct key *k = key_find(key);

	if (!k) {
		snprintf(err, errlen, "unknown key '%s'", key);
		return -ENOENT;
	}
	if (key_set(c, k, val)) {
		snprintf(err, errlen, "bad value '%s' for %s", val, k->name);
		return -EINVAL;
	}
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
			 e[-1] == '\r'))
		*--e = '\0';
	return s;
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
	char line[1024], why[256], *k, *v, *eq;
	unsigned int lineno = 0;
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return ret;
	}
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		k = trim(line);
		if (!*k || *k == '#')
			continue;
		eq = strchr(k, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%u: expected key = value", path, lineno);
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		v = trim(eq + 1);
		k = trim(k);
		/* A value may be quoted to keep leading spaces or a '#'. */
		if (*v == '"' && strlen(v) >= 2 && v[strlen(v) - 1] == '"') {
			v[strlen(v) - 1] = '\0';
			v++;
		}
		ret = config_set(c, k, v, why, sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
			break;
		}
	}
	fclose(f);
	return ret;
}

int config_finish(struct config *c, char *err, size_t errlen)
{
	if (!c->redis_consumer[0] &&
	    gethostname(c->redis_consumer, sizeof(c->redis_consumer) - 1))
		strcpy(c->redis_consumer, "dqbridge");
	if (!c->deadletter_stream[0])
		snprintf(c->deadletter_stream, CFG_STR, "%.*s:dead",
			 CFG_STR - 6, c->redis_stream);
	if (!c->kafka_deadletter_topic[0])
		snprintf(c->kafka_deadletter_topic, CFG_STR, "%.*s.dead",
			 CFG_STR - 6, c->kafka_topic);
	if (!c->high_watermark)
		c->high_watermark = (uint32_t)((uint64_t)c->dq_slots * 8 / 10);
	if (!c->low_watermark)
		c->low_watermark = c->dq_slots / 2;
	if (!c->rate_state_file[0])
		snprintf(c->rate_state_file, CFG_STR, "%.*s.rate", CFG_STR - 6, c->dq_dir);
	if (!c->max_unacked)
		c->max_unacked = 4 * c->max_inflight + c->source_batch;
	if (c->rate_initial == 0)
		c->rate_initial = c->rate_ceiling;
	if (!c->sink_url[0]) {
		snprintf(err, errlen, "sink_url is required");
		return -EINVAL;
	}
	if (!strcmp(c->source, "redis") && !c->redis_stream[0]) {
		snprintf(err, errlen, "redis_stream is required");
		return -EINVAL;
	}
	if (!c->max_inflight || !c->source_batch || !c->max_attempts ||
	    !c->dq_slots) {
		snprintf(err, errlen, "max_inflight, source_batch, max_attempts and dq_slots must be > 0");
		return -EINVAL;
	}
	if (c->rate_floor <= 0 || c->rate_ceiling < c->rate_floor ||
	    c->rate_initial < c->rate_floor || c->rate_initial > c->rate_ceiling) {
		snprintf(err, errlen, "need 0 < rate_floor <= rate_initial <= rate_ceiling");
		return -EINVAL;
	}
	if (c->rate_latency_factor != 0 && !(c->rate_latency_factor > 1)) {
		snprintf(err, errlen, "rate_latency_factor must be 0 (off) or > 1");
		return -EINVAL;
	}
	if (c->rate_decrease <= 0 || c->rate_decrease >= 1) {
		snprintf(err, errlen, "rate_decrease must be in (0, 1)");
		return -EINVAL;
	}
	if (c->low_watermark >= c->high_watermark ||
	    c->high_watermark > c->dq_slots) {
		snprintf(err, errlen, "need low_watermark < high_watermark <= dq_slots");
		return -EINVAL;
	}
	if (!c->dq_sync_interval_ms || c->dq_sync_interval_ms > 1000) {
		snprintf(err, errlen, "dq_sync_interval_ms must be in 1..1000");
		return -EINVAL;
	}
	if (c->dq_retire_sync_ms > 60000) {
		snprintf(err, errlen, "dq_retire_sync_ms must be in 0..60000");
		return -EINVAL;
	}
	if (strcmp(c->sink_client, "auto") && strcmp(c->sink_client, "curl")) {
		snprintf(err, errlen, "sink_client must be auto or curl");
		return -EINVAL;
	}
	if (strcmp(c->dq_durability, "batch") && strcmp(c->dq_durability, "always")) {
		snprintf(err, errlen, "dq_durability must be batch or always");
		return -EINVAL;
	}
	if (strcmp(c->dq_backend, "auto") && strcmp(c->dq_backend, "kernel") &&
	    strcmp(c->dq_backend, "user")) {
		snprintf(err, errlen, "dq_backend must be auto, kernel or user");
		return -EINVAL;
	}
	return 0;
}

static void print_value(const struct config *c, const struct key *k, FILE *f)
{
	const char *p = (const char *)c + k->off;
	uint32_t bits;
	unsigned int i, n = 0;

	switch (k->type) {
	case K_STR:
		fprintf(f, "%s", p);
		break;
	case K_U32:
		fprintf(f, "%u", *(const uint32_t *)p);
		break;
	case K_U64:
		fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p);
		break;
	case K_DBL:
		fprintf(f, "%g", *(const double *)p);
		break;
	case K_RETRY:
		bits = *(const uint32_t *)p;
		for (i = 0; i < sizeof(retry_names) / sizeof(retry_names[0]); i++)
			if (bits & (1U << i))
				fprintf(f, "%s%s", n++ ? "," : "", retry_names[i]);
		break;
	}
}

void config_print(const struct config *c, FILE *f)
{
	size_t i;

	for (i = 0; i < NKEYS; i++) {
		fprintf(f, "%s = ", keys[i].name);
		print_value(c, &keys[i], f);
		fputc('\n', f);
	}
}

void config_help(FILE *f)
{
	size_t i;

	for (i = 0; i < NKEYS; i++)
		fprintf(f, "  %-26s %-24s %s\n", keys[i].name,
			keys[i].def[0] ? keys[i].def : "\"\"", keys[i].help);
}

void config_copy_rates(struct config *to, const struct config *from)
{
	to->rate_floor = from->rate_floor;
	to->rate_ceiling = from->rate_ceiling;
	to->rate_increase = from->rate_increase;
	to->rate_decrease = from->rate_decrease;
	to->rate_decrease_interval_ms = from->rate_decrease_interval_ms;
	to->burst_ms = from->burst_ms;
	to->rate_latency_factor = from->rate_latency_factor;
	to->rate_latency_min_ms = from->rate_latency_min_ms;
}
