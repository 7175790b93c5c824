/* How long dq_reap(timeout) on an empty dq.ko queue takes: tmo [TIMEOUT_NS [GRANULARITY_NS]]. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "dqshim.h"
static unsigned long long now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec*1000000000ULL+t.tv_nsec;}
static int cmp(const void *a, const void *b){unsigned long long x=*(const unsigned long long*)a,y=*(const unsigned long long*)b; return x<y?-1:x>y;}
int main(int argc, char **argv)
{
	int n = 2000, i; long long tmo = argc > 1 ? atoll(argv[1]) : 1000000;
	struct dq_params p; struct dqshim_queue *q; struct dq_reaped r[4];
	unsigned long long *d = calloc(n, sizeof(*d));
	dq_params_init(&p); p.backend = DQ_BACKEND_KERNEL; p.slot_count = 16; p.granularity_ns = argc > 2 ? atoi(argv[2]) : 0;
	if (dq_queue_open(&p, &q)) return 1;
	for (i = 0; i < n; i++) {
		unsigned long long t0 = now();
		int rc = dq_reap(q, r, 4, tmo);
		d[i] = now() - t0;
		if (rc != -62) { printf("rc %d\n", rc); return 1; }
	}
	qsort(d, n, sizeof(*d), cmp);
	printf("timeout %lld us: took p50 %.0f p90 %.0f p99 %.0f max %.0f us (over: p50 %.0f)\n", tmo/1000,
	       d[n/2]/1e3, d[n*9/10]/1e3, d[n*99/100]/1e3, d[n-1]/1e3, (d[n/2]-tmo)/1e3);
	dq_queue_close(q);
	return 0;
}
