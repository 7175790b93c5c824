// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * redis_zset.c - the design brief's design 1: a Redis sorted set per shard,
 * score = due time, member = the message; pollers scan every shard every
 * interval and take what is due with ZRANGEBYSCORE + ZREM, made atomic by a
 * Lua script (EVALSHA) so that two pollers never release one message twice.
 *
 * A real redis-server on 127.0.0.1 (the driver starts it, without
 * persistence, on a private port), hiredis, pipelined commands: the producer
 * pipelines one ZADD per message per batch; a poller pipelines one EVALSHA
 * per shard per tick and polls a shard again at once when it returned a full
 * batch.
 *
 * Options: port=N (16379), poll-ms=N (100), shards=N (0: enough for each to
 * stay below 4,000 members, at least 8), pollers=N (1), limit=N (500 per
 * EVALSHA).
 */
#include "bench.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>

#define MAX_POLLERS 64
#define MAX_SHARDS 100000

static const char lua_src[] =
	"local m = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], "
	"'LIMIT', 0, tonumber(ARGV[2]))\n"
	"if #m > 0 then redis.call('ZREM', KEYS[1], unpack(m)) end\n"
	"return m\n";

static int port = 16379;
static unsigned int poll_ms = 100, n_shards, n_pollers = 1, limit = 500;
static redisContext *prod;
static char sha[64];
static unsigned int pipelined;
static char *pbuf;		/* the producer's payload buffer */
static pthread_t pollers[MAX_POLLERS];
static unsigned int started;
static volatile int stop_flag;
static char desc[96];
static uint64_t overruns;

static int redis_opt(const char *k, const char *v)
{
	unsigned long x = strtoul(v, NULL, 10);

	if (!strcmp(k, "port"))
		port = (int)x;
	else if (!strcmp(k, "poll-ms"))
		poll_ms = (unsigned int)x;
	else if (!strcmp(k, "shards"))
		n_shards = (unsigned int)x;
	else if (!strcmp(k, "pollers"))
		n_pollers = (unsigned int)x;
	else if (!strcmp(k, "limit"))
		limit = (unsigned int)x;
	else
		return -1;
	return poll_ms && n_pollers && n_pollers <= MAX_POLLERS && limit &&
			       limit <= 4000 && n_shards <= MAX_SHARDS ?
		       0 :
		       -1;
}

static redisContext *connect_redis(void)
{
	struct timeval tv = { .tv_sec = 5 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

	if (!c || c->err) {
		bench_err("connect 127.0.0.1:%d: %s", port, c ? c->errstr : "no memory");
		if (c)
			redisFree(c);
		return NULL;
	}
	tv.tv_sec = 60;
	redisSetTimeout(c, tv);
	return c;
}

static int redis_setup(const struct bench_opts *o, uint64_t capacity)
{
	redisReply *r;

	pbuf = malloc(o->payload);
	if (!pbuf)
		return -ENOMEM;
	if (!n_shards) {
		uint64_t s = (capacity + 3999) / 4000;

		n_shards = s < 8 ? 8 : s > MAX_SHARDS ? MAX_SHARDS : (unsigned int)s;
	}
	if (n_pollers > n_shards)
		n_pollers = n_shards;
	prod = connect_redis();
	if (!prod)
		return -ECONNREFUSED;
	r = redisCommand(prod, "FLUSHALL");
	if (r)
		freeReplyObject(r);
	r = redisCommand(prod, "SCRIPT LOAD %s", lua_src);
	if (!r || r->type != REDIS_REPLY_STRING || r->len >= (int)sizeof(sha)) {
		bench_err("SCRIPT LOAD failed");
		if (r)
			freeReplyObject(r);
		return -EPROTO;
	}
	memcpy(sha, r->str, (size_t)r->len);
	sha[r->len] = 0;
	freeReplyObject(r);
	snprintf(desc, sizeof(desc), "poll=%ums shards=%u pollers=%u", poll_ms,
		 n_shards, n_pollers);
	return 0;
}

/* poll shards [idx...] once each; returns the shards that came back full */
static unsigned int poll_once(redisContext *c, const unsigned int *shards,
			      unsigned int n, unsigned int *full)
{
	unsigned int i, nfull = 0;
	unsigned long long now = bench_now();

	for (i = 0; i < n; i++)
		redisAppendCommand(c, "EVALSHA %s 1 dqb:%u %llu %u", sha, shards[i],
				   now, limit);
	for (i = 0; i < n; i++) {
		redisReply *r = NULL;
		size_t k;

		if (redisGetReply(c, (void **)&r) != REDIS_OK || !r) {
			bench_error_count();
			if (!stop_flag)
				bench_err("poll: %s", c->errstr);
			return 0;
		}
		if (r->type == REDIS_REPLY_ARRAY) {
			struct bench_msg bm[256];
			unsigned int nb = 0;

			/* one reply is one batch: released when it was read */
			for (k = 0; k < r->elements; k++) {
				if (r->element[k]->type != REDIS_REPLY_STRING)
					continue;
				bm[nb++] = (struct bench_msg){ r->element[k]->str,
							       (size_t)r->element[k]->len };
				if (nb == 256) {
					bench_deliver_batch(bm, nb);
					nb = 0;
				}
			}
			bench_deliver_batch(bm, nb);
			if (r->elements >= limit)
				full[nfull++] = shards[i];
		} else {
			bench_error_count();
		}
		freeReplyObject(r);
	}
	return nfull;
}

static void *poller(void *arg)
{
	unsigned int me = (unsigned int)(uintptr_t)arg, n = 0, i;
	unsigned int *mine, *full, *again;
	redisContext *c = connect_redis();
	uint64_t interval = (uint64_t)poll_ms * 1000000ULL, next;

	mine = calloc(n_shards, sizeof(*mine));
	full = calloc(n_shards, sizeof(*full));
	again = calloc(n_shards, sizeof(*again));
	if (!c || !mine || !full || !again) {
		bench_error_count();
		goto out;
	}
	for (i = me; i < n_shards; i += n_pollers)
		mine[n++] = i;
	next = bench_now();
	while (!stop_flag) {
		unsigned int nf = poll_once(c, mine, n, full), rounds;

		/* a full batch: that shard has more due right now */
		for (rounds = 0; nf && rounds < 100000 && !stop_flag; rounds++) {
			memcpy(again, full, nf * sizeof(*full));
			nf = poll_once(c, again, nf, full);
		}
		next += interval;
		if (next <= bench_now()) {
			/* the scan took longer than the interval */
			__atomic_fetch_add(&overruns, 1, __ATOMIC_RELAXED);
			next = bench_now();
			continue;
		}
		bench_sleep_until(next);
	}
out:
	free(mine);
	free(full);
	free(again);
	if (c)
		redisFree(c);
	return NULL;
}

static int redis_start(void)
{
	for (started = 0; started < n_pollers; started++)
		if (pthread_create(&pollers[started], NULL, poller,
				   (void *)(uintptr_t)started))
			return -EAGAIN;
	return 0;
}

static int redis_submit(uint64_t id, uint64_t due_ns)
{
	bench_fill(pbuf, id, due_ns, bench_o->payload);
	if (redisAppendCommand(prod, "ZADD dqb:%u %llu %b",
			       (unsigned int)(id % n_shards),
			       (unsigned long long)due_ns, pbuf,
			       (size_t)bench_o->payload) != REDIS_OK)
		return -ENOMEM;
	pipelined++;
	return 0;
}

static int redis_flush(void)
{
	int rc = 0;

	for (; pipelined; pipelined--) {
		redisReply *r = NULL;

		if (redisGetReply(prod, (void **)&r) != REDIS_OK || !r) {
			bench_err("ZADD: %s", prod->errstr);
			return -EIO;
		}
		if (r->type == REDIS_REPLY_ERROR) {
			bench_err("ZADD: %s", r->str);
			rc = -EIO;
		}
		freeReplyObject(r);
	}
	return rc;
}

static void redis_stop(void)
{
	unsigned int i;

	stop_flag = 1;
	for (i = 0; i < started; i++)
		pthread_join(pollers[i], NULL);
	started = 0;
	if (overruns)
		bench_note("a shard scan outran the poll interval %llu times",
			   (unsigned long long)overruns);
}

static void redis_teardown(void)
{
	if (prod)
		redisFree(prod);
	free(pbuf);
}

static const char *redis_describe(void)
{
	return desc;
}

const struct peer_ops peer = {
	.name = "redis-zset",
	.opt = redis_opt,
	.setup = redis_setup,
	.start = redis_start,
	.submit = redis_submit,
	.flush = redis_flush,
	.stop = redis_stop,
	.teardown = redis_teardown,
	.describe = redis_describe,
};
