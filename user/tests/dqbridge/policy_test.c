// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge's policy (tools/dqbridge/policy.c) on its own: verdicts,
 * Retry-After (seconds, HTTP-date, garbage), backoff bounds and jitter,
 * the key's parity bit, the AIMD token bucket.  TAP; last line
 * "N passed, N failed".
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "policy.h"
#include "sink.h"

static int n, failed;

static void __attribute__((format(printf, 2, 3))) ok(int cond, const char *fmt, ...)
{
	va_list ap;

	n++;
	if (!cond)
		failed++;
	printf("%sok %d - ", cond ? "" : "not ", n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static struct sink_result http(long status, const char *ra)
{
	struct sink_result r;

	memset(&r, 0, sizeof(r));
	r.kind = SINK_HTTP;
	r.status = status;
	snprintf(r.retry_after, sizeof(r.retry_after), "%s", ra);
	return r;
}

int main(void)
{
	struct config c;
	struct sink_result r;
	struct rate rt;
	char why[48], err[128];
	uint64_t secs, d, rng = 1, lo = UINT64_MAX, hi = 0;
	int thr, bad, i;
	unsigned int tok;
	uint16_t att;
	const char *gu;

	config_defaults(&c);
	config_set(&c, "sink_url", "http://x", err, sizeof(err));
	config_set(&c, "redis_stream", "s", err, sizeof(err));
	ok(!config_finish(&c, err, sizeof(err)), "defaults are a valid configuration");

	r = http(204, "");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_DELIVERED, "2xx: delivered");
	{
		/* The reason token is built by hand since Cost lever 12:
		 * snprintf()'s "http_%ld" to the byte, cut short alike. */
		static const long st[] = { 0, 7, 99, 100, 204, 429, 599, 1000,
					   123456789, LONG_MAX, -1, LONG_MIN };
		static const unsigned int sz[] = { 1, 2, 5, 6, 7, 9, 48 };
		char want[48];
		unsigned int a, k, same = 0, all = 0;

		for (a = 0; a < sizeof(st) / sizeof(st[0]); a++) {
			for (k = 0; k < sizeof(sz) / sizeof(sz[0]); k++) {
				r = http(st[a], "");
				memset(why, 'x', sizeof(why));
				snprintf(want, sz[k], "http_%ld", st[a]);
				policy_judge(&c, &r, why, sz[k], &thr);
				/* and nothing written past @n */
				same += !strcmp(why, want) &&
					(sz[k] >= sizeof(why) || why[sz[k]] == 'x');
				all++;
			}
		}
		ok(same == all, "reason \"http_<status>\" as snprintf() writes it: %u of %u", same, all);
	}
	r = http(429, "1");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_RETRY && thr &&
	   !strcmp(why, "http_429"), "429: retry, throttled, reason http_429");
	/* The rate signals (docs/dqbridge.md, Pace): 429 and 503, with or
	 * without Retry-After; every other failure is a failure only. */
	r = http(503, "");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_RETRY && thr &&
	   !strcmp(why, "http_503"), "503 without Retry-After: retry, throttled");
	r = http(503, "2");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_RETRY && thr,
	   "503 with Retry-After: retry, throttled");
	r = http(429, "");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_RETRY && thr,
	   "429 without Retry-After: retry, throttled");
	{
		static const long fails[] = { 500, 501, 502, 504, 599 };
		unsigned int k;

		for (k = 0; k < sizeof(fails) / sizeof(fails[0]); k++) {
			char what[64];

			r = http(fails[k], "1");
			snprintf(what, sizeof(what), "%ld: retry, not a rate signal", fails[k]);
			ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_RETRY && !thr, what);
		}
	}
	r = http(0, "");
	r.kind = SINK_TIMEOUT;
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_RETRY && !thr, "timeout: retry, not a rate signal");
	r.kind = SINK_CONNECT;
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_RETRY && !thr, "connection refused: retry, not a rate signal");
	r.kind = SINK_ERROR;
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_FAIL && !thr, "transport error: dead letter, not a rate signal");
	r = http(400, "1");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_FAIL && !thr, "400: dead letter, not a rate signal");
	config_set(&c, "retry_on", "429", err, sizeof(err));
	r = http(503, "1");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_FAIL && thr,
	   "retry_on=429: 503 dead-lettered, still a rate signal");
	config_set(&c, "retry_on", "429,503,5xx,timeout,connect", err, sizeof(err));
	r = http(404, "");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_FAIL, "404: dead letter");
	config_set(&c, "retry_on", "429", err, sizeof(err));
	r = http(503, "");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_FAIL, "retry_on=429: 503 is a dead letter");
	r.kind = SINK_TIMEOUT;
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_FAIL, "retry_on=429: a timeout is a dead letter");
	ok(config_set(&c, "retry_on", "429,bogus", err, sizeof(err)) == -22, "retry_on: unknown token refused");
	config_set(&c, "retry_on", "429,503,5xx,timeout,connect", err, sizeof(err));

	/* What an answer costs the message (issue 35: "not now" is no
	 * verdict on the message). */
	config_set(&c, "max_attempts", "2", err, sizeof(err));
	att = 0;
	for (i = 0; i < 100; i++) {
		r = http(i % 2 ? 429 : 503, i % 3 ? "1" : "");
		policy_judge(&c, &r, why, sizeof(why), &thr);
		if (policy_give_up(&c, V_RETRY, thr, &att, 3600000))
			break;
	}
	ok(i == 100 && att == 0,
	   "100 answers 429/503 with max_attempts 2: retried every time, no attempt spent");
	r = http(500, "");
	policy_judge(&c, &r, why, sizeof(why), &thr);
	ok(!policy_give_up(&c, V_RETRY, thr, &att, 0) && att == 1,
	   "a 500 spends an attempt (1 of 2), retried");
	r = http(429, "");
	policy_judge(&c, &r, why, sizeof(why), &thr);
	ok(!policy_give_up(&c, V_RETRY, thr, &att, 0) && att == 1,
	   "a 429 after it: still 1, retried");
	r.kind = SINK_TIMEOUT;
	policy_judge(&c, &r, why, sizeof(why), &thr);
	gu = policy_give_up(&c, V_RETRY, thr, &att, 0);
	ok(gu && !strcmp(gu, "_max_attempts") && att == 2,
	   "a timeout: the second failure, dead letter _max_attempts");
	att = 0;
	r = http(400, "");
	policy_judge(&c, &r, why, sizeof(why), &thr);
	gu = policy_give_up(&c, V_FAIL, thr, &att, 0);
	ok(gu && !*gu && att == 1, "a 400: dead letter at once, reason without suffix");
	config_set(&c, "retry_on", "429", err, sizeof(err));
	att = 0;
	r = http(503, "");
	ok(policy_judge(&c, &r, why, sizeof(why), &thr) == V_FAIL && thr &&
	   (gu = policy_give_up(&c, V_FAIL, thr, &att, 0)) && !*gu,
	   "retry_on=429: a 503 (a signal not retried) is a dead letter at once");
	config_set(&c, "retry_on", "429,503,5xx,timeout,connect", err, sizeof(err));
	config_set(&c, "max_wait_s", "60", err, sizeof(err));
	att = 0;
	r = http(429, "");
	policy_judge(&c, &r, why, sizeof(why), &thr);
	ok(!policy_give_up(&c, V_RETRY, thr, &att, 59999),
	   "max_wait_s 60: a 429 after 59.999 s of waiting is retried");
	gu = policy_give_up(&c, V_RETRY, thr, &att, 60000);
	ok(gu && !strcmp(gu, "_max_wait") && att == 0,
	   "max_wait_s 60: a 429 after 60 s is a dead letter _max_wait, no attempt spent");
	config_set(&c, "max_wait_s", "0", err, sizeof(err));
	config_set(&c, "max_attempts", "8", err, sizeof(err));

	ok(!parse_retry_after("120", 0, &secs) && secs == 120, "Retry-After: 120 seconds");
	ok(!parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 - 30, &secs) &&
	   secs == 30, "Retry-After: IMF-fixdate 30 s ahead");
	ok(!parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", 784111777 + 99, &secs) &&
	   secs == 0, "Retry-After: a date in the past is 0");
	ok(parse_retry_after("soon", 0, &secs) < 0, "Retry-After: garbage refused");
	ok(parse_retry_after("-5", 0, &secs) < 0, "Retry-After: negative refused");
	ok(parse_retry_after("12abc", 0, &secs) < 0, "Retry-After: trailing junk refused");
	ok(parse_retry_after("99999999999999999999", 0, &secs) < 0, "Retry-After: overflow refused");

	r = http(429, "7");
	d = policy_delay_ns(&c, &r, 1, &rng, &bad);
	ok(d == 7000000000ULL && !bad, "delay: Retry-After wins");
	r = http(429, "999999");
	d = policy_delay_ns(&c, &r, 1, &rng, &bad);
	ok(d == (uint64_t)c.retry_after_max_s * 1000000000ULL, "delay: Retry-After capped at retry_after_max_s");
	r = http(429, "garbage");
	d = policy_delay_ns(&c, &r, 1, &rng, &bad);
	ok(bad && d >= c.backoff_base_ms * 1000000ULL / 2 && d <= c.backoff_base_ms * 1000000ULL,
	   "delay: a bad Retry-After falls back to backoff and is flagged");
	r = http(503, "");
	for (i = 0; i < 1000; i++) {
		d = policy_delay_ns(&c, &r, 3, &rng, &bad);
		lo = d < lo ? d : lo;
		hi = d > hi ? d : hi;
	}
	ok(lo >= 1000000000ULL && hi <= 2000000000ULL && hi - lo > 500000000ULL,
	   "delay: attempt 3 backoff in [base*4/2, base*4], jittered");
	d = policy_delay_ns(&c, &r, 60, &rng, &bad);
	ok(d <= (uint64_t)c.backoff_max_ms * 1000000ULL, "delay: capped at backoff_max_ms");

	ok(!(policy_key("1700000000000-0") & 1), "key: parity bit clear");
	ok(policy_key("1-0") != policy_key("1-1"), "key: neighbours differ");

	config_set(&c, "rate_ceiling", "100", err, sizeof(err));
	config_set(&c, "rate_initial", "100", err, sizeof(err));
	config_set(&c, "rate_floor", "10", err, sizeof(err));
	config_set(&c, "rate_decrease", "0.5", err, sizeof(err));
	config_set(&c, "burst_ms", "100", err, sizeof(err));
	rate_init(&rt, &c, 1000000000ULL);
	tok = rate_available(&rt, 1000000000ULL + 1000000000ULL);
	ok(tok == 10, "bucket: depth burst_ms of the rate (100/s * 100 ms = 10)");
	rate_take(&rt, tok);
	ok(rate_available(&rt, 2000000000ULL) == 0 && rate_wait_ns(&rt) > 9000000 &&
	   rate_wait_ns(&rt) <= 10000001, "bucket: empty, next token in 10 ms");
	ok(rate_throttled(&rt, 3000000000ULL) && rt.rate == 50,
	   "429, every answer a signal: rate x rate_decrease (0.5), no less");
	ok(!rate_throttled(&rt, 3100000000ULL) && rt.rate == 50, "429 within the interval: no second decrease");
	for (i = 0; i < 20; i++)
		rate_throttled(&rt, 4000000000ULL + i * 1000000000ULL);
	ok(rt.rate == 10, "429s: never below the floor");
	/*
	 * issue 35: a rate probing a fixed limit. At 3125/s against 3000/s
	 * the downstream refuses 125 requests in 3125, 4 %: the rate must
	 * come down by about that, to ~3000, not saw-tooth to 0.7 x 3125 =
	 * 2188 on the first refusal (such a saw-tooth's mean is ~0.85 x the
	 * limit). rate_decrease_interval_ms 100; rate_increase ~0 so that
	 * the successes only count.
	 */
	config_set(&c, "rate_ceiling", "5000", err, sizeof(err));
	config_set(&c, "rate_floor", "50", err, sizeof(err));
	config_set(&c, "rate_decrease", "0.7", err, sizeof(err));
	config_set(&c, "rate_decrease_interval_ms", "100", err, sizeof(err));
	config_set(&c, "rate_increase", "0.000001", err, sizeof(err));
	rate_reconfig(&rt, &c);
	rt.rate = 3125;
	/* the last decrease (the floor's loop above) was at 23 s */
	for (i = 0; i < 3125; i++)
		rate_success(&rt);
	thr = rate_throttled(&rt, 24000000000ULL);
	ok(thr && rt.rate >= 3120,
	   "one 429 after a second of successes at 3125/s: the rate stays >= 3120 (got %.0f)", rt.rate);
	for (i = 0; i < 312; i++) {
		if (i % 24 == 23)
			rate_throttled(&rt, 24000000000ULL + 300000ULL * i);
		else
			rate_success(&rt);
	}
	thr = rate_throttled(&rt, 24100000000ULL);
	ok(thr && rt.rate > 2950 && rt.rate < 3050,
	   "14 429s in 313 answers in 100 ms (4.5 %%): 4.5 %% off, ~3000/s left (got %.0f)", rt.rate);
	rt.rate = 2000;
	for (i = 0; i < 1000; i++)
		rate_throttled(&rt, 40000000000ULL + 50000ULL * i);
	ok(rt.rate > 1399.99 && rt.rate < 1400.01,
	   "a downstream refusing everything: x0.7 an interval, no more (got %.0f)", rt.rate);
	thr = rate_throttled(&rt, 40100000000ULL);
	ok(thr && rt.rate > 979.99 && rt.rate < 980.01,
	   "the next interval, every answer refused: x0.7 again (got %.0f)", rt.rate);
	for (i = 0; i < 100; i++) {
		if (i % 5 == 4)
			rate_throttled(&rt, 40100000000ULL + 900000ULL * i);
		else
			rate_success(&rt);
	}
	thr = rate_throttled(&rt, 40200000000ULL);
	ok(thr && rt.rate > 775 && rt.rate < 778,
	   "21 of 101 answers refused: 21 %% off (got %.1f)", rt.rate);
	/* A rate far above what was sent: at start, or the loop slower. */
	rate_throttled(&rt, 50000000000ULL);
	rt.rate = 5000;
	for (i = 0; i < 150; i++) {
		if (i % 20 == 19)
			rate_throttled(&rt, 50000000000ULL + 600000ULL * i);
		else
			rate_success(&rt);
	}
	thr = rate_throttled(&rt, 50100000000ULL);
	ok(thr && rt.rate > 3499.99 && rt.rate < 3500.01,
	   "rate 5000/s, 151 answers in 100 ms (1510/s), 5 %% refused: x0.7, toward what was sent (got %.0f)",
	   rt.rate);
	for (i = 0; i < 150; i++)
		rate_success(&rt);
	thr = rate_throttled(&rt, 50200000000ULL);
	ok(thr && rt.rate > 2449.99 && rt.rate < 2450.01,
	   "still far above it: x0.7 again (got %.0f)", rt.rate);
	for (i = 0; i < 150; i++)
		rate_success(&rt);
	thr = rate_throttled(&rt, 50300000000ULL);
	ok(thr && rt.rate > 1714.99 && rt.rate < 1715.01,
	   "1510/s < 0.7 x 2450: x0.7 again (got %.0f)", rt.rate);
	for (i = 0; i < 150; i++)
		rate_success(&rt);
	thr = rate_throttled(&rt, 50400000000ULL);
	ok(thr && rt.rate > 1703 && rt.rate < 1705,
	   "1510/s >= 0.7 x 1715, a rate in use: the refused share off (1715 x 150/151, got %.0f)",
	   rt.rate);
	rt.rate = 50;
	config_set(&c, "rate_increase", "20", err, sizeof(err));
	config_set(&c, "rate_decrease", "0.5", err, sizeof(err));
	config_set(&c, "rate_ceiling", "100", err, sizeof(err));
	config_set(&c, "rate_floor", "10", err, sizeof(err));
	rate_reconfig(&rt, &c);
	for (i = 0; i < 100000; i++)
		rate_success(&rt);
	ok(rt.rate == 100, "successes: never above the ceiling");
	rt.rate = 50;
	for (i = 0; i < 50; i++)
		rate_success(&rt);
	/* Each success adds increase/rate: r^2 grows by 2 * 20 per success,
	 * so 50 of them (a second's worth at 50/s) take 50 to ~67. */
	ok(rt.rate > 66.5 && rt.rate < 67.5, "additive increase: a second of successes adds about rate_increase");
	/*
	 * Lever 21: the increase is slow at the rate the last decrease left
	 * (what the downstream took then) and whole 10 % above it or below
	 * it. A decrease leaves 500/s: 550/s sent for a second, 50 of the
	 * 550 answers refused (rate_increase ~0 meanwhile).
	 */
	config_set(&c, "rate_ceiling", "5000", err, sizeof(err));
	config_set(&c, "rate_floor", "50", err, sizeof(err));
	config_set(&c, "rate_decrease", "0.7", err, sizeof(err));
	config_set(&c, "rate_increase", "0.000001", err, sizeof(err));
	rate_reconfig(&rt, &c);
	rate_throttled(&rt, 60000000000ULL);
	rt.rate = 550;
	for (i = 0; i < 500; i++)
		rate_success(&rt);
	for (i = 0; i < 49; i++)
		rate_throttled(&rt, 60001000000ULL);
	thr = rate_throttled(&rt, 61000000000ULL);
	ok(thr && rt.rate > 499.99 && rt.rate < 500.01,
	   "50 of 550 answers refused: 500/s left (got %.2f)", rt.rate);
	config_set(&c, "rate_increase", "1000", err, sizeof(err));
	rate_reconfig(&rt, &c);
	for (i = 0; i < 50; i++)
		rate_success(&rt);
	ok(rt.rate > 505 && rt.rate < 507.5,
	   "at the rate the downstream took: 100 ms of successes add ~1/16 of rate_increase's 100 (got %.2f)",
	   rt.rate);
	rt.rate = 550;
	for (i = 0; i < 55; i++)
		rate_success(&rt);
	/* The whole increase: r^2 grows by 2 x 1000 a success, 550 -> 642.4. */
	ok(rt.rate > 641 && rt.rate < 644,
	   "10 %% above it: the whole increase, 100 ms of successes take 550 to ~642 (got %.2f)", rt.rate);
	rt.rate = 400;
	for (i = 0; i < 40; i++)
		rate_success(&rt);
	ok(rt.rate > 488 && rt.rate < 492,
	   "below it (a fall to recover from): the whole increase, 400 -> ~490 (got %.2f)", rt.rate);
	/*
	 * Refusals bunched into one interval: 2100/s sent, 200 taken in
	 * 100 ms (2000/s) and 90 refused (31 %): a fall by x0.7 to 1470,
	 * not a measure of the limit: climbed back at the whole increase.
	 */
	rate_throttled(&rt, 70000000000ULL);
	config_set(&c, "rate_increase", "0.000001", err, sizeof(err));
	rate_reconfig(&rt, &c);
	rt.rate = 2100;
	for (i = 0; i < 200; i++)
		rate_success(&rt);
	for (i = 0; i < 89; i++)
		rate_throttled(&rt, 70001000000ULL);
	thr = rate_throttled(&rt, 70100000000ULL);
	ok(thr && rt.rate > 1469.99 && rt.rate < 1470.01,
	   "90 of 290 refused in 100 ms: x0.7 (got %.2f)", rt.rate);
	config_set(&c, "rate_increase", "1000", err, sizeof(err));
	rate_reconfig(&rt, &c);
	for (i = 0; i < 147; i++)
		rate_success(&rt);
	ok(rt.rate > 1565 && rt.rate < 1568,
	   "under the 2000/s taken: the whole increase, 1470 -> ~1567 in 100 ms (got %.2f)", rt.rate);

	/* The latency signal: off by default; on, a 2xx slower than factor x
	 * the usual time (and the usual + min) lowers the rate. */
	config_defaults(&c);
	config_set(&c, "sink_url", "http://x", err, sizeof(err));
	config_set(&c, "redis_stream", "s", err, sizeof(err));
	config_finish(&c, err, sizeof(err));
	rate_init(&rt, &c, 0);
	for (i = 0; i < 100; i++)
		thr = rate_slow(&rt, 2000000ULL);
	ok(!thr && !rate_slow(&rt, 5000000000ULL), "latency signal off by default: a 5 s answer is no signal");
	ok(config_set(&c, "rate_latency_factor", "0.5", err, sizeof(err)) == 0 &&
	   config_finish(&c, err, sizeof(err)) == -22, "rate_latency_factor 0.5 refused");
	config_set(&c, "rate_latency_factor", "3", err, sizeof(err));
	config_set(&c, "rate_latency_min_ms", "10", err, sizeof(err));
	ok(!config_finish(&c, err, sizeof(err)), "rate_latency_factor 3 accepted");
	rate_init(&rt, &c, 0);
	for (i = 0, bad = 0; i < 200; i++)
		bad += rate_slow(&rt, (i & 1 ? 18 : 22) * 1000000ULL);
	ok(!bad, "latency: answers around 20 ms are no signal");
	ok(!rate_slow(&rt, 55000000ULL), "latency: 55 ms < 3 x 20 ms: no signal");
	/* (the 55 ms answer, judged normal, moved the usual time to ~22 ms) */
	ok(rate_slow(&rt, 70000000ULL), "latency: 70 ms > 3 x 22 ms: a signal");
	for (i = 0, bad = 0; i < 200; i++)
		bad += rate_slow(&rt, 80000000ULL);
	ok(bad == 200, "latency: a downstream staying slow stays a signal (slow answers do not move the baseline)");
	rate_init(&rt, &c, 0);
	for (i = 0; i < 100; i++)
		rate_slow(&rt, 1000000ULL);
	ok(!rate_slow(&rt, 8000000ULL), "latency: 8 ms against 1 ms is no signal (below usual + rate_latency_min_ms)");
	ok(rate_slow(&rt, 12000000ULL), "latency: 12 ms against 1 ms is one");
	printf("1..%d\n%d passed, %d failed\n", n, n - failed, failed);
	return failed != 0;
}
