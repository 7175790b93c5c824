/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * contract.h - libdqshim's contract as one set of test cases, run on every
 * backend: lib_test runs them on the user engine, kernel_backend_test on
 * dq.ko over io_uring commands and over the ioctls.  What a backend may
 * do differently (the kernel's park bound, its ioctl path) is the
 * backend's own test file's business; what the API promises is here, once.
 *
 * Every case judges dq against what the case itself chose and recorded
 * (due times on its own clock, submission order, payload bytes), never
 * against values dq reports back.  Time bounds are loose enough for an
 * emulated (TCG) VM; on-time release is asserted by the kernel-ABI
 * selftests (dq_timing), against the timer floor measured in the same boot.
 */
#ifndef DQ_TEST_CONTRACT_H
#define DQ_TEST_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dqshim.h"

#define MS	1000000ULL

struct contract_backend {
	const char *suffix;	/* appended to every case's name ("" none) */
	enum dq_backend backend;
	enum dq_path path;	/* the kernel's: DQ_PATH_URING or _IOCTL */
	unsigned int per_producer;	/* messages of each of 4 threads */
};

/*
 * A queue on @b: SKIPs the case when the backend is not there (no
 * /dev/dq, or a kernel without dq uring commands for DQ_PATH_URING).
 */
/*
 * Open a queue with @p (backend and the ioctl flag set here from @backend
 * and @path) and check it runs where asked; SKIP when the backend is not
 * there, abort the program when it cannot be opened.
 */
struct dqshim_queue *contract_open_params(enum dq_backend backend,
					  enum dq_path path,
					  struct dq_params *p);
struct dqshim_queue *contract_open(const struct contract_backend *b,
				   uint32_t slots, uint32_t size,
				   uint32_t submit_entries, dq_reject_fn fn,
				   void *arg);
/* Commit message @id (its first 8 payload bytes) due after @delay_ns. */
uint64_t contract_put(struct dqshim_queue *q, uint64_t id, uint64_t delay_ns);
/* The test's own clock (CLOCK_MONOTONIC, read directly). */
uint64_t contract_now(void);
/* Add every case for @b, named "<case><suffix>" (before tap_main()). */
void contract_register(const struct contract_backend *b);

/*
 * The backend matrix of the feature tests (track_test, keys_test,
 * durable_test): each case runs once per target, named
 * "<case><suffix>", with the target as its argument.
 */
struct tb {
	const char *suffix;
	enum dq_backend backend;
	enum dq_path path;
};

struct tcase {
	const char *name;
	void (*fn)(void *arg);
	unsigned int timeout_s;
	bool kernel_only;	/* dq.ko's only (named queues) */
};

/* Register @n cases for the user engine, dq.ko's uring and ioctl paths. */
void contract_add_matrix(const struct tcase *cases, size_t n);

#endif /* DQ_TEST_CONTRACT_H */
