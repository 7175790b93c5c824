/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * bench.h - the harness every dq benchmark peer shares.
 *
 * One peer = one delay-queue design (Redis ZSET polling, a FIFO with
 * sleeping workers, beanstalkd, timerfd, io_uring timeouts, dq...).  The
 * peer implements struct peer_ops; the harness (bench.c, which owns main())
 * generates the workload from a seed, keeps the due time of every message,
 * checks every release (early, duplicate, corrupt payload, lost), builds the
 * lateness histogram, measures CPU, memory and idle wake-ups, and prints one
 * JSON object per run with the same fields for every system.
 *
 * Two consumer models:
 *  - threaded: start() launches the peer's own consumer threads, which call
 *    bench_deliver() for each released message; poll is NULL.
 *  - event loop: poll is set; the harness thread both produces and calls
 *    poll(), which delivers whatever was released (single-threaded designs:
 *    epoll over timerfds, an io_uring, poll() on /dev/dq).
 *
 * Every message carries its id and due time in a bench_hdr at the start of
 * its payload (bench_fill()), and a tag at the end, so a consumer needs only
 * the payload bytes to report a release.
 */
#ifndef DQ_BENCH_H
#define DQ_BENCH_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

enum bench_workload {
	WL_THROUGHPUT,	/* a: n messages as fast as possible */
	WL_LATENESS,	/* b: a steady rate for a duration */
	WL_PENDING,	/* c/d/e: n pending far ahead, idle window, probe burst */
	WL_CAPACITY,	/* f: n submitted ahead, all due within one second */
};

struct bench_opts {
	enum bench_workload workload;
	const char *workload_name;
	uint64_t n;		/* throughput: messages; pending: messages held */
	uint64_t rate;		/* lateness: messages per second (offered) */
	double max_lag_ms;	/* lateness: give up offering when this far behind */
	double lead_s;		/* capacity: the second starts this long after the fill does */
	double ontime_ms;	/* capacity: released within this of its due time = on time */
	double duration_s;	/* lateness: how long to send */
	uint64_t dmin_ns, dmax_ns; /* delay range (throughput, lateness) */
	uint32_t payload;	/* payload bytes per message */
	uint64_t seed;
	double idle_s;		/* pending: idle window */
	uint64_t probe_n;	/* pending: probe burst size */
	double far_s;		/* pending: how far ahead the held messages are */
	double grace_s;		/* how long past the last due time to wait */
	uint32_t batch;		/* producer batch (messages per flush) */
	uint32_t tick_us;	/* lateness: producer tick */
	double timeout_s;	/* watchdog for the whole run */
	int stress;		/* label: a CPU hog ran alongside */
	const char *env;	/* label: "host" or "vm" */
	const char *variant;	/* label given on the command line */
	const char *json_path;	/* append the JSON line here (default stdout) */
	const char *cdf_path;	/* write the lateness CDF here */
	pid_t server_pid;	/* a server process whose cost is ours too */
	const char *memcg;	/* cgroup v2 directory holding us and the server */
	int verbose;
};

struct peer_ops {
	const char *name;	/* "redis-zset", "fifo-sleep", ... */
	/* --opt key=value; 0 when taken, -1 when unknown or bad */
	int (*opt)(const char *key, const char *val);
	/* capacity: the most messages that can be held at once */
	int (*setup)(const struct bench_opts *o, uint64_t capacity);
	/* threaded peers: start consumers */
	int (*start)(void);
	/*
	 * Producer side (the harness thread): queue message @id due at @due_ns
	 * (CLOCK_MONOTONIC); the peer writes the payload with bench_fill()
	 * wherever it keeps it.  0, -EAGAIN (full: the harness flushes, polls
	 * and retries), or another -errno (fatal).
	 */
	int (*submit)(uint64_t id, uint64_t due_ns);
	/* end of a producer batch: hand it over; 0 or -errno */
	int (*flush)(void);
	/* event-loop peers: deliver what is released, block until @until_ns
	 * at most (0: do not block); NULL for threaded peers */
	int (*poll)(uint64_t until_ns);
	/* optional: 1 when this run uses consumer threads although poll is
	 * set (a peer that offers both models) */
	int (*threaded)(void);
	/* stop the consumers; what is still held may be dropped */
	void (*stop)(void);
	void (*teardown)(void);
	/* wake-ups the per-task counters cannot see (kernel timers) */
	int (*extra_wakeups)(uint64_t *count);
	/* variant description for the JSON ("poll=10ms shards=8"), or NULL */
	const char *(*describe)(void);
	/*
	 * optional, called once after stop(): report every message the peer
	 * still holds with bench_held().  A message not released by the
	 * deadline that the peer shows it still holds is "overdue" (it missed
	 * its deadline); one it does not hold any more is "lost".  Without
	 * held(), every message not released by the deadline is lost.
	 */
	void (*held)(void);
};

/* Each peer program defines this one. */
extern const struct peer_ops peer;

/* The options of this run (valid from setup() on). */
extern const struct bench_opts *bench_o;

/* CLOCK_MONOTONIC in ns. */
uint64_t bench_now(void);
/* Sleep until CLOCK_MONOTONIC @t_ns (absolute). */
void bench_sleep_until(uint64_t t_ns);

/* Payload layout: header first, tag in the last 8 bytes. */
struct bench_hdr {
	uint64_t id;
	uint64_t due_ns;
};
#define BENCH_MIN_PAYLOAD 32U

/* Write the payload of message @id (@len = bench_o->payload) at @dst. */
void bench_fill(void *dst, uint64_t id, uint64_t due_ns, uint32_t len);

/* One released message: its payload @p, @len bytes. */
struct bench_msg {
	const void *p;
	size_t len;
};

/*
 * Report the release of the @n messages of one batch the consumer reaped
 * (an io_uring's CQEs, dq_reap()'s array, epoll's events).  Thread-safe
 * (any number of consumer threads).  It reads the clock once, on entry,
 * and takes that as every message's release time: call it as soon as the
 * whole batch is in hand (reaped), and before anything else is done with
 * it, so that the lateness is never understated and what the consumer
 * does next is not charged to the system.  Each message is checked: id in
 * range, payload tag, due time the one the harness recorded, not released
 * before, not early.
 */
void bench_deliver_batch(const struct bench_msg *m, unsigned int n);

/* A batch of one (a consumer that gets one message at a time). */
void bench_deliver(const void *p, size_t len);

/* Report a release by id when the payload is not at hand (0 when ok). */
void bench_deliver_id(uint64_t id);

/* From peer.held(): the message whose payload is @p is still held. */
void bench_held(const void *p, size_t len);

/*
 * From setup(): this system keeps its per-message state in kernel objects
 * (files, timers, io_uring requests, dq.ko's records), which the smaps
 * method cannot see; without a memory cgroup its bytes/msg is not
 * published.
 */
void bench_state_in_kernel(void);

/* A consumer hit a protocol or system error it cannot attribute. */
void bench_error_count(void);

/* Set once the harness has asked the peer to stop. */
int bench_stopping(void);

/* A free-text note for the JSON "notes" field (appended, "; "-separated). */
void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Diagnostics on stderr (only with --verbose unless it is an error). */
void bench_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void bench_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Raise RLIMIT_NOFILE towards @want (capped by fs.nr_open, and by the hard
 * limit without CAP_SYS_RESOURCE): 0 when reached, -EMFILE when only part
 * of it was.
 */
int bench_raise_nofile(uint64_t want);

#endif /* DQ_BENCH_H */
