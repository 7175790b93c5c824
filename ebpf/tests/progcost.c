// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * progcost - what each of dqlat's dq programs costs per event, measured by
 * the kernel (BPF_ENABLE_STATS: run_time_ns / run_cnt), without dq.ko.
 *
 * Loads dqlat's programs without attaching them and drives the raw_tp ones
 * with BPF_PROG_TEST_RUN, arguments laid out as their tracepoints pass
 * them, in the pattern of a busy queue: per round, BATCH dq_submit and
 * dq_ready, one dq_release, one dq_wake, then one dq_reap that reaps the
 * round's BATCH messages (the end-to-end drain).  The syscall around each
 * run is not counted, only the program.
 *
 * Usage: progcost [ROUNDS [BATCH]]   (default 20000 rounds of 16)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "dqlat.h"
#include "dqlat.skel.h"

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int run(struct bpf_program *p, __u64 *args, int nargs)
{
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.ctx_in = args,
		.ctx_size_in = nargs * sizeof(__u64),
	);
	int err = bpf_prog_test_run_opts(bpf_program__fd(p), &o);

	if (err) {
		fprintf(stderr, "progcost: test run of %s: %s\n",
			bpf_program__name(p), strerror(errno));
		exit(1);
	}
	return o.retval;
}

static void report(struct bpf_program *p, double per_msg_divisor)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
		return;
	printf("%-14s %10llu runs %9.1f ns/run %9.1f ns/msg\n",
	       bpf_program__name(p), (unsigned long long)info.run_cnt,
	       info.run_cnt ? (double)info.run_time_ns / info.run_cnt : 0.0,
	       (double)info.run_time_ns / per_msg_divisor);
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 20000;
	long batch = argc > 2 ? atol(argv[2]) : 16;
	struct bpf_program *prog;
	struct dqlat_bpf *obj;
	__u64 a[7];
	long r, i;
	int stats;

	if (rounds < 1 || batch < 1 || batch > DQLAT_RING) {
		fprintf(stderr, "usage: progcost [ROUNDS [BATCH]]\n");
		return 2;
	}
	obj = dqlat_bpf__open();
	if (!obj)
		return 1;
	bpf_object__for_each_program(prog, obj->obj)
		bpf_program__set_autoload(prog,
			strncmp(bpf_program__name(prog), "dq_", 3) == 0);
	if (dqlat_bpf__load(obj)) {
		fprintf(stderr, "progcost: load failed\n");
		return 1;
	}
	stats = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (stats < 0) {
		fprintf(stderr, "progcost: BPF_ENABLE_STATS: %s\n", strerror(errno));
		return 1;
	}

	/* A consumer thread parks on queue 7 once: that is this thread. */
	a[0] = 7; a[1] = gettid(); a[2] = 1;
	run(obj->progs.dq_wait_park, a, 3);
	for (r = 0; r < rounds; r++) {
		__u64 t = now_ns();

		for (i = 0; i < batch; i++) {
			a[0] = 7; a[1] = 0; a[2] = i; a[3] = r; a[4] = i;
			a[5] = t + 1000; a[6] = t;
			run(obj->progs.dq_submit, a, 7);
			a[0] = 7; a[1] = i; a[2] = i; a[3] = t; a[4] = t + 500;
			run(obj->progs.dq_ready, a, 5);
		}
		a[0] = 7; a[1] = 0; a[2] = batch; a[3] = t; a[4] = t; a[5] = t + 500;
		run(obj->progs.dq_release, a, 6);
		a[0] = 7; a[1] = gettid(); a[2] = batch;
		run(obj->progs.dq_wake, a, 3);
		a[0] = 7; a[1] = batch; a[2] = now_ns();
		run(obj->progs.dq_reap, a, 3);
		a[0] = 7; a[1] = gettid(); a[2] = 1;
		run(obj->progs.dq_wait_park, a, 3);
	}

	printf("# %ld rounds of %ld messages, one consumer wake-up per round\n",
	       rounds, batch);
	report(obj->progs.dq_submit, (double)rounds * batch);
	report(obj->progs.dq_ready, (double)rounds * batch);
	report(obj->progs.dq_release, (double)rounds * batch);
	report(obj->progs.dq_wake, (double)rounds * batch);
	report(obj->progs.dq_reap, (double)rounds * batch);
	report(obj->progs.dq_wait_park, (double)rounds * batch);
	{
		struct bpf_prog_info info;
		double total = 0, submit = 0;
		__u32 len;

		bpf_object__for_each_program(prog, obj->obj) {
			if (strncmp(bpf_program__name(prog), "dq_", 3))
				continue;
			memset(&info, 0, sizeof(info));
			len = sizeof(info);
			if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
				continue;
			total += info.run_time_ns;
			if (prog == obj->progs.dq_submit)
				submit = info.run_time_ns;
		}
		printf("%-32s %16.1f ns/msg\n", "total, default (no dq_submit)",
		       (total - submit) / rounds / batch);
		printf("%-32s %16.1f ns/msg\n", "total with -p or -n",
		       total / rounds / batch);
	}
	close(stats);
	dqlat_bpf__destroy(obj);
	return 0;
}
