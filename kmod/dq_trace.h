/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dq tracepoints (system "dq").  Arguments are plain scalars so perf,
 * bpftrace and raw_tp BPF programs can read them without dq's headers.
 * Times are CLOCK_MONOTONIC nanoseconds.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM dq

#if !defined(_DQ_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _DQ_TRACE_H

#include <linux/tracepoint.h>
#include <linux/timekeeping.h>

/*
 * trace_EVENT(ARGS..., now) with the clock read only while the event is
 * enabled (perf, ftrace or an attached BPF program): a tracepoint's
 * arguments are evaluated before its own static-key test, so a plain
 * trace_dq_reap(..., ktime_get_ns()) reads the clock on every call.  On
 * a clocksource without a vDSO-speed read (HPET, acpi_pm: many VMs) that
 * read costs as much as the rest of a WAIT's completion.
 */
#define dq_trace_now(event, ...)					\
	do {								\
		if (trace_##event##_enabled())				\
			trace_##event(__VA_ARGS__, ktime_get_ns());	\
	} while (0)

/* An accepted descriptor, now pending in the node's engine. */
TRACE_EVENT(dq_submit,
	TP_PROTO(u32 queue_id, int node, u32 slot, u32 gen, u64 user_data,
		 u64 due_ns, u64 now_ns),
	TP_ARGS(queue_id, node, slot, gen, user_data, due_ns, now_ns),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(int, node)
		__field(u32, slot)
		__field(u32, gen)
		__field(u64, user_data)
		__field(u64, due_ns)
		__field(u64, now_ns)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->node = node;
		__entry->slot = slot;
		__entry->gen = gen;
		__entry->user_data = user_data;
		__entry->due_ns = due_ns;
		__entry->now_ns = now_ns;
	),
	TP_printk("q=%u node=%d slot=%u gen=%u user_data=%llu due=%llu now=%llu",
		  __entry->queue_id, __entry->node, __entry->slot,
		  __entry->gen, __entry->user_data, __entry->due_ns,
		  __entry->now_ns)
);

/* A descriptor that failed validation (reason: enum dq_reject_reason). */
TRACE_EVENT(dq_reject,
	TP_PROTO(u32 queue_id, u32 index, u32 reason, int error, u32 slot,
		 u64 user_data),
	TP_ARGS(queue_id, index, reason, error, slot, user_data),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, index)
		__field(u32, reason)
		__field(int, error)
		__field(u32, slot)
		__field(u64, user_data)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->index = index;
		__entry->reason = reason;
		__entry->error = error;
		__entry->slot = slot;
		__entry->user_data = user_data;
	),
	TP_printk("q=%u index=%u reason=%u error=%d slot=%u user_data=%llu",
		  __entry->queue_id, __entry->index, __entry->reason,
		  __entry->error, __entry->slot, __entry->user_data)
);

/*
 * One release run's records for one queue: count messages, earliest and
 * latest due time among them, released at now_ns.
 */
TRACE_EVENT(dq_release,
	TP_PROTO(u32 queue_id, int node, u32 count, u64 first_due_ns,
		 u64 last_due_ns, u64 now_ns),
	TP_ARGS(queue_id, node, count, first_due_ns, last_due_ns, now_ns),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(int, node)
		__field(u32, count)
		__field(u64, first_due_ns)
		__field(u64, last_due_ns)
		__field(u64, now_ns)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->node = node;
		__entry->count = count;
		__entry->first_due_ns = first_due_ns;
		__entry->last_due_ns = last_due_ns;
		__entry->now_ns = now_ns;
	),
	TP_printk("q=%u node=%d count=%u first_due=%llu last_due=%llu now=%llu",
		  __entry->queue_id, __entry->node, __entry->count,
		  __entry->first_due_ns, __entry->last_due_ns, __entry->now_ns)
);

/* One message posted on the ready ring (release_ns: engine's clock). */
TRACE_EVENT(dq_ready,
	TP_PROTO(u32 queue_id, u32 slot, u64 user_data, u64 due_ns,
		 u64 release_ns, int node),
	TP_ARGS(queue_id, slot, user_data, due_ns, release_ns, node),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, slot)
		__field(u64, user_data)
		__field(u64, due_ns)
		__field(u64, release_ns)
		__field(int, node)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->slot = slot;
		__entry->user_data = user_data;
		__entry->due_ns = due_ns;
		__entry->release_ns = release_ns;
		__entry->node = node;
	),
	TP_printk("q=%u slot=%u user_data=%llu due=%llu release=%llu node=%d",
		  __entry->queue_id, __entry->slot, __entry->user_data,
		  __entry->due_ns, __entry->release_ns, __entry->node)
);

/* A queue goes away; its id may be reused by a later queue. */
TRACE_EVENT(dq_queue_free,
	TP_PROTO(u32 queue_id),
	TP_ARGS(queue_id),
	TP_STRUCT__entry(
		__field(u32, queue_id)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
	),
	TP_printk("q=%u", __entry->queue_id)
);

/* A consumer starts waiting (ioctl, poll or a parked io_uring WAIT). */
TRACE_EVENT(dq_wait_park,
	TP_PROTO(u32 queue_id, pid_t tid, u32 min_ready),
	TP_ARGS(queue_id, tid, min_ready),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(pid_t, tid)
		__field(u32, min_ready)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->tid = tid;
		__entry->min_ready = min_ready;
	),
	TP_printk("q=%u tid=%d min_ready=%u", __entry->queue_id,
		  __entry->tid, __entry->min_ready)
);

/* The release path wakes a waiting consumer (tid: the consumer). */
TRACE_EVENT(dq_wake,
	TP_PROTO(u32 queue_id, pid_t tid, u32 ready),
	TP_ARGS(queue_id, tid, ready),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(pid_t, tid)
		__field(u32, ready)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->tid = tid;
		__entry->ready = ready;
	),
	TP_printk("q=%u tid=%d ready=%u", __entry->queue_id, __entry->tid,
		  __entry->ready)
);

/* A wait completes in the consumer's context: result ready or -errno. */
TRACE_EVENT(dq_reap,
	TP_PROTO(u32 queue_id, int result, u64 now_ns),
	TP_ARGS(queue_id, result, now_ns),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(int, result)
		__field(u64, now_ns)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->result = result;
		__entry->now_ns = now_ns;
	),
	TP_printk("q=%u result=%d now=%llu", __entry->queue_id,
		  __entry->result, __entry->now_ns)
);

/* DQ_IOC_CANCEL / DQ_URING_CMD_CANCEL and its result. */
TRACE_EVENT(dq_cancel,
	TP_PROTO(u32 queue_id, u32 slot, u32 gen, int result),
	TP_ARGS(queue_id, slot, gen, result),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, slot)
		__field(u32, gen)
		__field(int, result)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->slot = slot;
		__entry->gen = gen;
		__entry->result = result;
	),
	TP_printk("q=%u slot=%u gen=%u result=%d", __entry->queue_id,
		  __entry->slot, __entry->gen, __entry->result)
);

/*
 * A DONE entry of a tracked queue (outcome: enum dq_done_outcome; result
 * 0 or the entry's -errno).
 */
TRACE_EVENT(dq_done,
	TP_PROTO(u32 queue_id, u32 slot, u32 gen, u32 outcome, int result,
		 u64 now_ns),
	TP_ARGS(queue_id, slot, gen, outcome, result, now_ns),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, slot)
		__field(u32, gen)
		__field(u32, outcome)
		__field(int, result)
		__field(u64, now_ns)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->slot = slot;
		__entry->gen = gen;
		__entry->outcome = outcome;
		__entry->result = result;
		__entry->now_ns = now_ns;
	),
	TP_printk("q=%u slot=%u gen=%u outcome=%u result=%d now=%llu",
		  __entry->queue_id, __entry->slot, __entry->gen,
		  __entry->outcome, __entry->result, __entry->now_ns)
);

/* A message in flight put back for redelivery: its consumer went away. */
TRACE_EVENT(dq_redeliver,
	TP_PROTO(u32 queue_id, u32 slot, u32 gen, u32 redeliveries),
	TP_ARGS(queue_id, slot, gen, redeliveries),
	TP_STRUCT__entry(
		__field(u32, queue_id)
		__field(u32, slot)
		__field(u32, gen)
		__field(u32, redeliveries)
	),
	TP_fast_assign(
		__entry->queue_id = queue_id;
		__entry->slot = slot;
		__entry->gen = gen;
		__entry->redeliveries = redeliveries;
	),
	TP_printk("q=%u slot=%u gen=%u redeliveries=%u", __entry->queue_id,
		  __entry->slot, __entry->gen, __entry->redeliveries)
);

#endif /* _DQ_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE dq_trace
#include <trace/define_trace.h>
