// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * The producer of dqbridge_scenario.sh: XADDs random binary payloads to a
 * Redis stream at a paced rate, pipelined, and records what it sent.
 *
 * usage: scen_producer PORT STREAM RATE SECONDS OUT [SEED]
 *
 * Pacing: message i is due at start + i / RATE; every millisecond the
 * producer sends, in one pipelined write, all messages due by then (at
 * most 1000 per write) and reads their replies.  OUT gets one line per
 * message, in send order:
 *     <stream id> <sha256 of payload, hex> <send time, unix s> <length>
 * (the send time is the wall clock just before the pipelined write that
 * carried it).  The test's ground truth for what went in.  On stderr at
 * the end: "sent=N seconds=S rate=R max_behind_ms=B".
 *
 * Payloads: 16..600 random bytes (xorshift64*, SEED, default 17), any
 * byte value, so that a bridge that treats the body as a C string fails.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <hiredis/hiredis.h>
#include <openssl/sha.h>

#define PIPE_MAX 1000

struct msg {
	unsigned char body[600];
	size_t len;
	unsigned char sha[SHA256_DIGEST_LENGTH];
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void make_msg(struct msg *m, uint64_t *rng)
{
	size_t i;

	m->len = 16 + rng_next(rng) % (600 - 16 + 1);
	for (i = 0; i < m->len; i++)
		m->body[i] = (unsigned char)(rng_next(rng) >> 56);
	SHA256(m->body, m->len, m->sha);
}

int main(int argc, char **argv)
{
	static struct msg batch[PIPE_MAX];
	uint64_t total, sent = 0, rng;
	double rate, seconds, start, behind_max = 0;
	const char *stream;
	redisContext *rc;
	FILE *out;
	int port;

	if (argc < 6) {
		fprintf(stderr, "usage: scen_producer PORT STREAM RATE SECONDS OUT [SEED]\n");
		return 1;
	}
	port = atoi(argv[1]);
	stream = argv[2];
	rate = atof(argv[3]);
	seconds = atof(argv[4]);
	rng = argc > 6 ? strtoull(argv[6], NULL, 0) : 17;
	if (!rng)
		rng = 17;
	if (rate <= 0 || seconds <= 0) {
		fprintf(stderr, "scen_producer: RATE and SECONDS must be > 0\n");
		return 1;
	}
	total = (uint64_t)(rate * seconds + 0.5);
	out = fopen(argv[5], "w");
	if (!out) {
		fprintf(stderr, "scen_producer: %s: %s\n", argv[5], strerror(errno));
		return 1;
	}
	rc = redisConnect("127.0.0.1", port);
	if (!rc || rc->err) {
		fprintf(stderr, "scen_producer: redis: %s\n", rc ? rc->errstr : "oom");
		return 1;
	}
	start = mono();
	while (sent < total) {
		double now = mono(), t_wall, behind;
		uint64_t due = (uint64_t)((now - start) * rate) + 1, n, i;
		struct timespec ts = { 0, 1000000 };

		if (due > total)
			due = total;
		n = due > sent ? due - sent : 0;
		if (!n) {
			nanosleep(&ts, NULL);
			continue;
		}
		if (n > PIPE_MAX)
			n = PIPE_MAX;
		behind = now - (start + (double)sent / rate);
		if (behind > behind_max)
			behind_max = behind;
		for (i = 0; i < n; i++) {
			make_msg(&batch[i], &rng);
			redisAppendCommand(rc, "XADD %s * payload %b", stream,
					   batch[i].body, batch[i].len);
		}
		t_wall = wall();
		for (i = 0; i < n; i++) {
			redisReply *r;
			int k;

			if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r) {
				fprintf(stderr, "scen_producer: redis: %s\n", rc->errstr);
				return 1;
			}
			if (r->type != REDIS_REPLY_STRING) {
				fprintf(stderr, "scen_producer: XADD: %s\n",
					r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
				return 1;
			}
			fprintf(out, "%s ", r->str);
			for (k = 0; k < SHA256_DIGEST_LENGTH; k++)
				fprintf(out, "%02x", batch[i].sha[k]);
			fprintf(out, " %.6f %zu\n", t_wall, batch[i].len);
			freeReplyObject(r);
		}
		sent += n;
		fflush(out);
	}
	if (fclose(out)) {
		fprintf(stderr, "scen_producer: %s: %s\n", argv[5], strerror(errno));
		return 1;
	}
	fprintf(stderr, "sent=%llu seconds=%.3f rate=%.1f max_behind_ms=%.1f\n",
		(unsigned long long)sent, mono() - start,
		sent / (mono() - start), behind_max * 1000);
	redisFree(rc);
	return 0;
}
