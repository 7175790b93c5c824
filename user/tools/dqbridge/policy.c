// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the policy (policy.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "policy.h"
#include "sink.h"

/*
 * "http_<status>" into @reason: snprintf() was ~730 instructions of the
 * ~15k a delivered message cost at 3000 msg/s (Cost lever 12), for a
 * token no one reads when the answer is a 2xx.
 */
static void status_reason(char *reason, unsigned int n, long status)
{
	char t[sizeof("http_") + 20];
	unsigned long v;
	size_t k = sizeof(t), len;

	if (status < 0) {
		snprintf(reason, n, "http_%ld", status);
		return;
	}
	v = (unsigned long)status;
	do {
		t[--k] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	k -= 5;
	memcpy(t + k, "http_", 5);
	len = sizeof(t) - k;
	if (!n)
		return;
	if (len > n - 1)
		len = n - 1;
	memcpy(reason, t + k, len);
	reason[len] = '\0';
}

enum verdict policy_judge(const struct config *c, const struct sink_result *r,
			  char *reason, unsigned int n, int *throttled)
{
	uint32_t bit = 0;

	*throttled = 0;
	switch (r->kind) {
	case SINK_HTTP:
		status_reason(reason, n, r->status);
		if (r->status >= 200 && r->status < 300)
			return V_DELIVERED;
		/*
		 * The rate signals: 429 and 503 say "too much, slow down"
		 * (RFC 9110 15.6.4: 503 is overload or maintenance, and
		 * proxies such as Envoy shed load with it).  Other 5xx and
		 * transport failures say "broken", not "too fast": retried
		 * with backoff, the rate kept (docs/dqbridge.md, Pace).
		 */
		if (r->status == 429) {
			*throttled = 1;
			bit = RETRY_429;
		} else if (r->status == 503) {
			*throttled = 1;
			bit = RETRY_503;
		} else if (r->status >= 500 && r->status < 600) {
			bit = RETRY_5XX;
		}
		break;
	case SINK_TIMEOUT:
		snprintf(reason, n, "timeout");
		bit = RETRY_TIMEOUT;
		break;
	case SINK_CONNECT:
		snprintf(reason, n, "connect");
		bit = RETRY_CONNECT;
		break;
	default:
		/* TLS, protocol and such: retrying will not help. */
		snprintf(reason, n, "transport");
		break;
	}
	return (c->retry_on & bit) ? V_RETRY : V_FAIL;
}

const char *policy_give_up(const struct config *c, enum verdict v,
			   int throttled, uint16_t *attempts,
			   uint64_t waited_ms)
{
	int signal = throttled && v == V_RETRY;

	if (!signal && *attempts < UINT16_MAX)
		(*attempts)++;
	if (v != V_RETRY)
		return "";
	if (!signal && *attempts >= c->max_attempts)
		return "_max_attempts";
	if (c->max_wait_s && waited_ms >= (uint64_t)c->max_wait_s * 1000)
		return "_max_wait";
	return NULL;
}

int parse_retry_after(const char *v, time_t now, uint64_t *secs)
{
	struct tm tm;
	const char *end;
	time_t t;

	while (*v == ' ')
		v++;
	if (!*v)
		return -EINVAL;
	if (isdigit((unsigned char)*v)) {
		unsigned long long s = 0;

		for (end = v; isdigit((unsigned char)*end); end++) {
			if (s > 100000000ULL)
				return -EINVAL;
			s = s * 10 + (unsigned long long)(*end - '0');
		}
		while (*end == ' ')
			end++;
		if (*end)
			return -EINVAL;
		*secs = s;
		return 0;
	}
	/* IMF-fixdate, the one form senders must use: "Sun, 06 Nov 1994
	 * 08:49:37 GMT" (strptime in the C locale the daemon runs in). */
	memset(&tm, 0, sizeof(tm));
	end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end || *end)
		return -EINVAL;
	t = timegm(&tm);
	if (t == (time_t)-1)
		return -EINVAL;
	*secs = t > now ? (uint64_t)(t - now) : 0;
	return 0;
}

uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

uint64_t policy_delay_ns(const struct config *c, const struct sink_result *r,
			 unsigned int attempts, uint64_t *rng,
			 int *bad_retry_after)
{
	uint64_t secs, ms, half;

	*bad_retry_after = 0;
	if (r && r->retry_after[0]) {
		if (!parse_retry_after(r->retry_after, time(NULL), &secs)) {
			if (secs > c->retry_after_max_s)
				secs = c->retry_after_max_s;
			return secs * 1000000000ULL;
		}
		*bad_retry_after = 1;
	}
	ms = c->backoff_base_ms;
	while (--attempts > 0 && ms < c->backoff_max_ms)
		ms *= 2;
	if (ms > c->backoff_max_ms)
		ms = c->backoff_max_ms;
	half = ms * 1000000ULL / 2;
	return half + (half ? rng_next(rng) % (half + 1) : 0);
}

uint64_t policy_key(const char *id)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *id; id++) {
		h ^= (unsigned char)*id;
		h *= 0x100000001b3ULL;
	}
	/* splitmix64's finaliser. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h & ~1ULL;
}

static double depth(const struct rate *r)
{
	double d = r->rate * r->burst_ms / 1000.0;

	return d < 1 ? 1 : d;
}

void rate_reconfig(struct rate *r, const struct config *c)
{
	r->floor = c->rate_floor;
	r->ceiling = c->rate_ceiling;
	r->increase = c->rate_increase;
	r->decrease = c->rate_decrease;
	r->decrease_interval_ns = (uint64_t)c->rate_decrease_interval_ms * 1000000ULL;
	r->burst_ms = c->burst_ms;
	r->lat_factor = c->rate_latency_factor;
	r->lat_min_ns = (uint64_t)c->rate_latency_min_ms * 1000000ULL;
	if (r->rate < r->floor)
		r->rate = r->floor;
	if (r->rate > r->ceiling)
		r->rate = r->ceiling;
	if (r->tokens > depth(r))
		r->tokens = depth(r);
}

void rate_init(struct rate *r, const struct config *c, uint64_t now_ns)
{
	memset(r, 0, sizeof(*r));
	r->rate = c->rate_initial;
	r->last_ns = now_ns;
	r->window_ns = now_ns;
	rate_reconfig(r, c);
	r->tokens = 1;
}

unsigned int rate_available(struct rate *r, uint64_t now_ns)
{
	if (now_ns > r->last_ns) {
		r->tokens += (double)(now_ns - r->last_ns) * r->rate / 1e9;
		if (r->tokens > depth(r))
			r->tokens = depth(r);
		r->last_ns = now_ns;
	}
	return r->tokens >= 1 ? (unsigned int)r->tokens : 0;
}

void rate_take(struct rate *r, unsigned int n)
{
	r->tokens -= n;
}

uint64_t rate_wait_ns(const struct rate *r)
{
	if (r->tokens >= 1)
		return 0;
	return (uint64_t)((1 - r->tokens) * 1e9 / r->rate) + 1;
}

/*
 * Near what the last decrease measured the downstream takes (cap_est), the
 * additive increase is RATE_PROBE_MIN of rate_increase, growing
 * quadratically to all of it RATE_PROBE_WIDTH above: slow where the
 * downstream refused last, fast away from it (below it: a fall to climb
 * back; well above it: the limit went up).  The same shape as TCP CUBIC's
 * window around its last loss.  With the whole increase everywhere, a
 * rate_increase fast enough to follow a limit that moves overshot one that
 * does not by that much each decrease interval (1000/s a second, 100 ms:
 * +20 % of a 500/s limit, 14 % of the requests refused): lever 21 in
 * docs/records/bench/dqbridge-levers.md.
 */
#define RATE_PROBE_MIN		(1.0 / 16)
#define RATE_PROBE_WIDTH	0.1

void rate_success(struct rate *r)
{
	double f = 1;

	r->ok_n++;
	if (r->cap_est > 0 && r->rate >= r->cap_est) {
		f = (r->rate - r->cap_est) / (r->cap_est * RATE_PROBE_WIDTH);
		f *= f;
		if (f < RATE_PROBE_MIN)
			f = RATE_PROBE_MIN;
		if (f > 1)
			f = 1;
	}
	r->rate += r->increase * f / r->rate;
	if (r->rate > r->ceiling)
		r->rate = r->ceiling;
}

int rate_throttled(struct rate *r, uint64_t now_ns)
{
	double keep, used;
	bool measured;

	r->signal_n++;
	if (r->last_decrease_ns &&
	    now_ns - r->last_decrease_ns < r->decrease_interval_ns)
		return 0;
	/*
	 * The share of the answers that said "slow down" is the share of
	 * the rate the downstream did not take: take that off. A fixed
	 * factor on every first signal made a rate probing a fixed limit L
	 * saw-tooth between decrease x L and L, ~0.85 L on average at 0.7
	 * (issue 35: the scenario's 3000/s phase accepted 2688/s with about
	 * one 429 a second). A downstream refusing most requests still gets
	 * the multiplicative fall: at most decrease per interval.
	 */
	keep = 1.0 - (double)r->signal_n / (double)(r->signal_n + r->ok_n);
	measured = keep > r->decrease;
	if (!measured)
		keep = r->decrease;
	/*
	 * The share is of what was sent. A rate the bridge did not use (its
	 * loop, max_inflight or the backlog sent less: at start, 5000/s of
	 * rate sending ~1500/s) says nothing of what the downstream takes,
	 * and its share of refusals is low while the downstream refuses the
	 * bursts it lets through: a rate the answers came at less than
	 * decrease x of falls by decrease, as before. Only then: the token
	 * bucket's own granularity sends some % below the rate, and taking
	 * the answers' rate as the rate on every decrease ratcheted it down
	 * (dqbridge_shed_test.sh accepted 181/s of a capacity of 200).
	 */
	if (now_ns > r->window_ns) {
		used = (double)(r->signal_n + r->ok_n) * 1e9 / (double)(now_ns - r->window_ns);
		if (used < r->rate * r->decrease) {
			keep = r->decrease;
			measured = false;
		}
	}
	r->ok_n = r->signal_n = 0;
	r->last_decrease_ns = now_ns;
	r->window_ns = now_ns;
	r->rate *= keep;
	if (r->rate < r->floor)
		r->rate = r->floor;
	/*
	 * Where the increase slows down (rate_success()): the rate the
	 * refused share left, a measure of what the downstream takes.  A
	 * fall by decrease (most answers refused, or a rate not used)
	 * measures nothing: the whole increase until the next measure.
	 */
	r->cap_est = measured ? r->rate : 0;
	if (r->tokens > depth(r))
		r->tokens = depth(r);
	return 1;
}

int rate_slow(struct rate *r, uint64_t elapsed_ns)
{
	double e = (double)elapsed_ns;

	if (r->lat_factor <= 0)
		return 0;
	if (r->lat_base_ns <= 0) {
		r->lat_base_ns = e;
		return 0;
	}
	if (e > r->lat_base_ns * r->lat_factor &&
	    e > r->lat_base_ns + (double)r->lat_min_ns)
		return 1;
	/* Only answers judged normal move the baseline, so a downstream
	 * slowing down past the threshold does not teach the bridge that
	 * slow is usual; a slow drift below it is followed (1/16 a step). */
	r->lat_base_ns += (e - r->lat_base_ns) / 16;
	return 0;
}
