/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqbridge's policy, pure functions and a token bucket (no I/O, so a unit
 * test or another program can use them as they are):
 *  - what a downstream answer means (deliver, retry through dq, give up);
 *  - when a retry is due (Retry-After, else exponential backoff with
 *    jitter);
 *  - the adaptive send rate (AIMD token bucket);
 *  - the dq key of a source message id.
 */
#ifndef DQB_POLICY_H
#define DQB_POLICY_H

#include <stdint.h>
#include <time.h>

struct config;
struct sink_result;

enum verdict {
	V_DELIVERED = 0,	/* 2xx */
	V_RETRY = 1,		/* in retry_on: back into dq */
	V_FAIL = 2,		/* anything else: dead letter now */
};

/*
 * Judge @r under @c->retry_on.  @reason (@n bytes) gets a short token for
 * logs and dead letters: "http_429", "timeout", "connect", ...
 * @throttled is set when the answer asks to slow down (429 or 503: the
 * rate signals; other 5xx, timeouts and refused connections are failures).
 */
enum verdict policy_judge(const struct config *c, const struct sink_result *r,
			  char *reason, unsigned int n, int *throttled);

/*
 * Retry-After (RFC 9110): delay-seconds or an HTTP-date, against @now (a
 * CLOCK_REALTIME second).  0 and the seconds in *@secs (a date in the
 * past: 0), or -EINVAL.
 */
/*
 * After an answer judged @v (not V_DELIVERED; @throttled as
 * policy_judge() set it) to a message that failed *@attempts times
 * before and was first diverted @waited_ms ago (0: never diverted):
 * counts the answer in *@attempts, unless it is a rate signal that is
 * retried (a 429 or 503 says "not now", not "this message is bad", so it
 * must not bring the message closer to the dead letter; the rate is what
 * answers it), and decides.  NULL: retry through dq.  Else the message
 * goes to the dead letter and the suffix of its reason is returned: ""
 * (@v is V_FAIL), "_max_attempts" (failures reached max_attempts) or
 * "_max_wait" (max_wait_s on, and the message waited that long).
 */
const char *policy_give_up(const struct config *c, enum verdict v,
			   int throttled, uint16_t *attempts,
			   uint64_t waited_ms);

int parse_retry_after(const char *v, time_t now, uint64_t *secs);

/*
 * The delay before attempt @attempts + 1 (the message failed @attempts
 * times, >= 1): Retry-After when @r has a good one (capped at
 * retry_after_max_s), else backoff_base_ms * 2^(attempts-1) capped at
 * backoff_max_ms, with "equal jitter" (between half and all of it) so a
 * batch that failed together does not come back together.  @rng: the
 * caller's xorshift state.  *@bad_retry_after is set when the header was
 * there and unreadable.
 */
uint64_t policy_delay_ns(const struct config *c, const struct sink_result *r,
			 unsigned int attempts, uint64_t *rng,
			 int *bad_retry_after);

/*
 * The dq key of a source message id: a 64-bit hash (FNV-1a, then a
 * finaliser so nearby ids spread) with bit 0 clear.  Bit 0 is the copy's
 * parity: a retry commits the new copy under key ^ 1 BEFORE it finishes
 * the failed one (still in flight, still holding its key), so a crash
 * between the two leaves two copies (a duplicate delivery) and never
 * none.  A source message, first diverted or redelivered after a crash,
 * always uses parity 0, so dq refuses a second copy of it (-EEXIST).
 */
uint64_t policy_key(const char *id);

/*
 * The adaptive send rate: a token bucket whose rate moves between
 * rate_floor and rate_ceiling, additive increase (rate_increase msgs/s
 * per second of successes: each success adds rate_increase / rate; 1/16
 * of that near the rate the last measured decrease left, rate_success()),
 * decrease by the refused share (at most times rate_decrease, on a rate
 * signal: a 429 or 503, or with rate_latency_factor a slow 2xx; at most
 * once per rate_decrease_interval_ms, since the signals of one overload
 * arrive together).  Depth: burst_ms of the current rate, at least 1 token.
 */
struct rate {
	double rate;		/* msgs/s now */
	double tokens;
	uint64_t last_ns;	/* last refill */
	uint64_t last_decrease_ns;
	uint64_t ok_n, signal_n;	/* answers since the last decrease */
	uint64_t window_ns;	/* when they began to count (init, decrease) */
	double floor, ceiling, increase, decrease;
	uint64_t decrease_interval_ns;
	uint32_t burst_ms;
	double lat_factor;	/* rate_latency_factor; 0: off */
	uint64_t lat_min_ns;
	double lat_base_ns;	/* the usual 2xx answer time (EWMA); 0: none */
	double cap_est;		/* the rate the last decrease by the refused
				 * share left; 0: none (or a fall since) */
};

void rate_init(struct rate *r, const struct config *c, uint64_t now_ns);
/* New limits (SIGHUP): the rate is clamped into them, tokens kept. */
void rate_reconfig(struct rate *r, const struct config *c);
/* Tokens available now (whole ones). */
unsigned int rate_available(struct rate *r, uint64_t now_ns);
void rate_take(struct rate *r, unsigned int n);
/* Nanoseconds until the next whole token. */
uint64_t rate_wait_ns(const struct rate *r);
void rate_success(struct rate *r);
/*
 * A rate signal (429, 503, a slow 2xx): outside the decrease interval
 * the rate is multiplied by 1 - the share of signals among the answers
 * since the last decrease (rate_success() and this count them), but by
 * no less than decrease; by decrease itself when those answers came at
 * less than decrease x the rate (a rate not in use). Returns 1 then, 0
 * inside the interval (the signal counts for the next decrease).
 */
int rate_throttled(struct rate *r, uint64_t now_ns);
/*
 * A 2xx answered in @elapsed_ns: 1 when it is a rate signal (latency
 * signal on, and slower than lat_factor x the usual time and than the
 * usual time + lat_min_ns), else 0 and the usual time learns from it.
 */
int rate_slow(struct rate *r, uint64_t elapsed_ns);

/* xorshift64*: the jitter's randomness (seed with anything non-zero). */
uint64_t rng_next(uint64_t *state);

#endif /* DQB_POLICY_H */
