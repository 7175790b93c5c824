/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqlat: types shared by dqlat.bpf.c and dqlat.c.
 *
 * Every latency is aggregated in the kernel into a log2 histogram of
 * microseconds plus an exact count, sum and maximum in nanoseconds; user
 * space reads them, never individual events.
 */
#ifndef DQLAT_H
#define DQLAT_H

/* Slot i counts values v (us) with 2^i <= v < 2^(i+1); slot 0 holds 0 and 1. */
#define DQLAT_MAX_SLOTS		32

/* Per-queue memory of released, not yet reaped due times (power of two). */
#define DQLAT_RING		4096
#define DQLAT_MAX_QUEUES	64
#define DQLAT_MAX_CONSUMERS	4096
#define DQLAT_MAX_TASKS		10240

/* The parts a message's lateness is split into (histogram map keys). */
enum dqlat_part {
	DQLAT_TIMER,		/* due -> release (dq_ready)			*/
	DQLAT_WAKE,		/* release -> consumer woken (sched_wakeup)	*/
	DQLAT_RUNQ,		/* woken -> on a CPU (sched_switch)		*/
	DQLAT_REAP,		/* on a CPU -> wait completed (dq_reap)		*/
	DQLAT_E2E,		/* due -> reaped, per message			*/
	DQLAT_CHAIN,		/* release -> reaped, per consumer wake-up:	*/
				/* exactly WAKE + RUNQ + REAP			*/
	DQLAT_NR_PARTS,
};

struct dqlat_hist {
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
	__u64 slots[DQLAT_MAX_SLOTS];
};

/*
 * Event and bookkeeping counters (one per-CPU entry; field names show up
 * in `bpftool map dump`).
 */
struct dqlat_counters {
	/*
	 * dq:* events that passed the filters.  dq_ready has no counter: it
	 * is the timer histogram's count.  dq_submit is traced only with -p
	 * or -n, which need what it says (pid, node) early.
	 */
	__u64 submit;
	__u64 reject;
	__u64 release;
	__u64 park;
	__u64 wake;
	__u64 reap;
	__u64 cancel;
	/* How each consumer wake-up chain ended at dq_reap. */
	__u64 chain_slept;	/* sched_wakeup and sched_switch seen	*/
	__u64 chain_running;	/* woken while still on its CPU		*/
	__u64 chain_nosleep;	/* never left the CPU after the release	*/
	__u64 reap_nowake;	/* wait ended with no dq_wake before it	*/
	__u64 chain_failed;	/* wait ended with an error after a wake	*/
	/* Things that should stay zero. */
	__u64 early;		/* release_ns < due_ns: released early	*/
	__u64 order;		/* a part came out negative		*/
	__u64 e2e_overflow;	/* more than DQLAT_RING unreaped	*/
	__u64 e2e_race;		/* two consumers reaped one queue at once */
	__u64 unknown_node;	/* -n given, queue's node not known yet	*/
	__u64 map_full;		/* a map update failed			*/
	__u64 evicted;		/* queue entries taken over by another id */
};

/*
 * A queue dqlat has seen: array map "queues", index queue_id mod
 * DQLAT_MAX_QUEUES, tagged with the id (dq allocates small ids, so two live
 * queues share an entry only beyond DQLAT_MAX_QUEUES of them; the newer
 * one then takes the entry over and "evicted" counts it).
 */
struct dqlat_queue {
	__u32 queue_id;
	__u32 valid;
	__s32 node;
	__u32 node_known;	/* dq_submit or dq_release named the node */
	__u32 pid_ok;		/* -p: a task of the process used it	*/
	__u32 resv;
	__u64 head;		/* next entry of "unreaped" to reap	*/
	__u64 tail;		/* next free entry of "unreaped"	*/
};

/*
 * Array map "unreaped", same index: the messages released on the queue
 * and not reaped yet, entries [head, tail) mod DQLAT_RING.
 */
struct dqlat_unreaped {
	__u64 due_ns;
	__u64 release_ns;
};

struct dqlat_ring {
	struct dqlat_unreaped e[DQLAT_RING];
};

/* Where a consumer thread is between dq_wait_park and dq_reap. */
enum dqlat_cstate {
	DQLAT_C_IDLE,		/* its last wait has completed		*/
	DQLAT_C_PARKED,		/* dq_wait_park seen			*/
	DQLAT_C_RELEASED,	/* dq_wake named it			*/
	DQLAT_C_WOKEN,		/* sched_wakeup seen after that		*/
	DQLAT_C_ONCPU,		/* sched_switch onto a CPU after that	*/
};

/* Hash map "consumers", key: tid. */
struct dqlat_consumer {
	__u32 queue_id;
	__u32 state;		/* enum dqlat_cstate */
	__u64 release_ns;	/* dq_release's now_ns */
	__u64 wakeup_ns;
	__u64 oncpu_ns;
};

#endif /* DQLAT_H */
