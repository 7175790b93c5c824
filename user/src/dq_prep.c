// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdqshim: SQE preparation for applications that drive dq commands from
 * an io_uring of their own.
 *
 * A dq command is IORING_OP_URING_CMD on the queue's /dev/dq file:
 * sqe->cmd_op selects it, its 16-byte argument sits in sqe->cmd (the
 * addr3 / __pad2 area of a plain 64-byte SQE), everything else is zero.
 */
#include <errno.h>
#include <liburing.h>
#include <stddef.h>
#include <string.h>

#include "dq_internal.h"

#define DQ_SQE_CMD_OFF		offsetof(struct io_uring_sqe, addr3)
#define DQ_SQE_CMD_LEN		16U

_Static_assert(sizeof(struct io_uring_sqe) == 64, "io_uring SQE is 64 bytes");
_Static_assert(DQ_SQE_CMD_OFF == 48, "sqe->cmd at byte 48");
_Static_assert(sizeof(struct dq_uring_submit) <= DQ_SQE_CMD_LEN, "payload");
_Static_assert(sizeof(struct dq_wait) <= DQ_SQE_CMD_LEN, "payload");
_Static_assert(sizeof(struct dq_cancel) <= DQ_SQE_CMD_LEN, "payload");

DQ_API int dq_prep_cmd(struct io_uring_sqe *sqe, int fd, uint32_t cmd_op,
		       const void *payload, size_t len)
{
	uint64_t user_data;

	if (len > DQ_SQE_CMD_LEN || (len && !payload))
		return -EINVAL;
	user_data = sqe->user_data;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = cmd_op;
	sqe->user_data = user_data;
	if (len)
		memcpy((char *)sqe + DQ_SQE_CMD_OFF, payload, len);
	return 0;
}

DQ_API int dq_prep_submit(struct io_uring_sqe *sqe, struct dqshim_queue *q,
			  struct dq_submit *s)
{
	struct dq_uring_submit u;
	int ret;

	if (q->backend != DQ_BACKEND_KERNEL)
		return -EOPNOTSUPP;
	/* Durable: the batch's journal records first (dq_flush() order). */
	if (q->journal) {
		ret = dq_publish_durable(q);
		if (ret)
			return ret;
	}
	s->flags = 0;
	s->resv = 0;
	memset(&u, 0, sizeof(u));
	u.args = (uint64_t)(uintptr_t)s;
	return dq_prep_cmd(sqe, q->fd, DQ_URING_CMD_SUBMIT, &u, sizeof(u));
}

DQ_API int dq_prep_wait(struct io_uring_sqe *sqe, struct dqshim_queue *q,
			uint32_t min_ready, int64_t timeout_ns)
{
	struct dq_wait w;

	if (q->backend != DQ_BACKEND_KERNEL)
		return -EOPNOTSUPP;
	memset(&w, 0, sizeof(w));
	w.min_ready = min_ready;
	w.timeout_ns = timeout_ns;
	return dq_prep_cmd(sqe, q->fd, DQ_URING_CMD_WAIT, &w, sizeof(w));
}

DQ_API int dq_prep_cancel(struct io_uring_sqe *sqe, struct dqshim_queue *q,
			  uint64_t handle)
{
	struct dq_cancel c;

	if (q->backend != DQ_BACKEND_KERNEL)
		return -EOPNOTSUPP;
	memset(&c, 0, sizeof(c));
	c.handle = handle;
	return dq_prep_cmd(sqe, q->fd, DQ_URING_CMD_CANCEL, &c, sizeof(c));
}
