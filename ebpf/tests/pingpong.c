// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * pingpong - a synthetic workload with known wake-ups and run-queue waits,
 * for dqlat --sched-only.
 *
 * Two threads pass a byte back and forth over two pipes ROUNDS times while
 * HOGS CPU-bound child processes compete for the same CPU; all of them
 * are pinned to CPU (default 0), so every wake-up of a ping-pong thread
 * has to wait for the CPU.  The process waits for one byte on stdin before
 * it starts, so a tracer can attach to its pid first.
 *
 * At the end it prints one JSON line: rounds, and the run_delay (ns spent
 * runnable, waiting for a CPU) the kernel's schedstat accounted to each of
 * its threads over their whole life: /proc/thread-self/schedstat.
 *
 * Usage: pingpong [-n ROUNDS] [-c CPU] [-H HOGS]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static int rounds = 2000;
static int cpu;
static int p1[2], p2[2];

struct acct {
	unsigned long long run_delay_ns;
	unsigned long long nvcsw;	/* voluntary: the thread slept */
	unsigned long long nivcsw;	/* involuntary: preempted */
};

static void account(struct acct *a)
{
	unsigned long long run;
	char line[256];
	FILE *f;

	f = fopen("/proc/thread-self/schedstat", "r");
	if (f) {
		if (fscanf(f, "%llu %llu", &run, &a->run_delay_ns) != 2)
			a->run_delay_ns = 0;
		fclose(f);
	}
	f = fopen("/proc/thread-self/status", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		sscanf(line, "voluntary_ctxt_switches: %llu", &a->nvcsw);
		sscanf(line, "nonvoluntary_ctxt_switches: %llu", &a->nivcsw);
	}
	fclose(f);
}

static void pin(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("pingpong: sched_setaffinity");
		exit(1);
	}
}

static void xfer(int rfd, int wfd, int first)
{
	char c = 'x';
	int i;

	for (i = 0; i < rounds; i++) {
		if (first && write(wfd, &c, 1) != 1)
			exit(1);
		if (read(rfd, &c, 1) != 1)
			exit(1);
		if (!first && write(wfd, &c, 1) != 1)
			exit(1);
	}
}

static void *ping(void *arg)
{
	pin();
	xfer(p2[0], p1[1], 1);
	account(arg);
	return NULL;
}

static void *pong(void *arg)
{
	pin();
	xfer(p1[0], p2[1], 0);
	account(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	struct acct t[3] = {};	/* main, ping, pong */
	pid_t hogs[16];
	int nhogs = 1, i, opt;
	pthread_t a, b;
	char go;

	while ((opt = getopt(argc, argv, "n:c:H:")) != -1) {
		switch (opt) {
		case 'n': rounds = atoi(optarg); break;
		case 'c': cpu = atoi(optarg); break;
		case 'H': nhogs = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: pingpong [-n ROUNDS] [-c CPU] [-H HOGS]\n");
			return 2;
		}
	}
	if (rounds < 1 || nhogs < 0 || nhogs > 16)
		return 2;
	if (pipe(p1) || pipe(p2)) {
		perror("pingpong: pipe");
		return 1;
	}
	/* Wait for the tracer. */
	if (read(0, &go, 1) != 1)
		return 1;

	for (i = 0; i < nhogs; i++) {
		hogs[i] = fork();
		if (hogs[i] < 0) {
			perror("pingpong: fork");
			return 1;
		}
		if (!hogs[i]) {
			volatile unsigned long spin = 0;

			pin();
			for (;;)
				spin++;
		}
	}
	pin();
	if (pthread_create(&a, NULL, ping, &t[1]) ||
	    pthread_create(&b, NULL, pong, &t[2])) {
		fprintf(stderr, "pingpong: pthread_create failed\n");
		return 1;
	}
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	for (i = 0; i < nhogs; i++) {
		kill(hogs[i], SIGKILL);
		waitpid(hogs[i], NULL, 0);
	}
	account(&t[0]);
	printf("{\"rounds\":%d,\"hogs\":%d,\"cpu\":%d,\"threads\":[",
	       rounds, nhogs, cpu);
	for (i = 0; i < 3; i++)
		printf("%s{\"run_delay_ns\":%llu,\"nvcsw\":%llu,\"nivcsw\":%llu}",
		       i ? "," : "", t[i].run_delay_ns, t[i].nvcsw, t[i].nivcsw);
	printf("]}\n");
	return 0;
}
