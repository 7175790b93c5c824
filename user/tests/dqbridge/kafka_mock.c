// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge_kafka_test.sh's Kafka: librdkafka's mock cluster (Debian has
 * no Kafka broker), which speaks the Kafka protocol on loopback TCP to the
 * real client library, consumer groups and offset commits included.
 *
 *   kafka_mock serve TOPIC PARTITIONS BOOTFILE
 *       start a one-broker mock cluster with TOPIC and TOPIC.dead, write
 *       its bootstrap address to BOOTFILE, run until SIGTERM/SIGINT;
 *       SIGUSR1: refuse every offset commit from then on with "group
 *       rebalance in progress" (what the mock's coordinator answers while
 *       a group rebalances), SIGUSR2: take them again; each prints
 *       "commits refused" / "commits taken" once in effect
 *   kafka_mock produce BOOTSTRAP TOPIC COUNT RATE OUT [FAIL_INDEX]
 *       COUNT random payloads at RATE/s; OUT gets "topic/partition/offset
 *       HEX" per message (the test's own record); message FAIL_INDEX
 *       starts with FAIL500
 *   kafka_mock dump BOOTSTRAP TOPIC
 *       every message of TOPIC: "ID-HEADER REASON ATTEMPTS HEX"
 *   kafka_mock lag BOOTSTRAP GROUP TOPIC PARTITIONS
 *       sum over partitions of end offset - committed offset
 *   kafka_mock watch BOOTSTRAP GROUP TOPIC PARTITIONS INTERVAL_MS
 *       until SIGTERM, every INTERVAL_MS the group's committed offsets:
 *       "UNIX_TIME PARTITION OFFSET" per partition with a commit, the time
 *       taken once the broker answered
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

static volatile sig_atomic_t stop, refuse, take;
static void on_sig(int sig) { (void)sig; stop = 1; }
static void on_usr(int sig) { if (sig == SIGUSR1) refuse = 1; else take = 1; }

/* OffsetCommit's ApiKey in the Kafka protocol. */
#define API_OFFSET_COMMIT 8
/* Refusals pushed at once: more commits than a test run sends. */
#define REFUSALS 200000

static rd_kafka_t *client(rd_kafka_type_t type, const char *boot, const char *group)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char err[256];
	rd_kafka_t *rk;

	if (boot)
		rd_kafka_conf_set(conf, "bootstrap.servers", boot, err, sizeof(err));
	if (group) {
		rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
		rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
		rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof(err));
	}
	rk = rd_kafka_new(type, conf, err, sizeof(err));
	if (!rk) {
		fprintf(stderr, "kafka_mock: %s\n", err);
		exit(2);
	}
	return rk;
}

static void hex(FILE *f, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n--)
		fprintf(f, "%02x", *c++);
}

static int serve(const char *topic, int parts, const char *bootfile)
{
	rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL, NULL);
	rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, 1);
	char dead[256];
	FILE *f;

	if (!mc)
		return 2;
	snprintf(dead, sizeof(dead), "%s.dead", topic);
	rd_kafka_mock_topic_create(mc, topic, parts, 1);
	rd_kafka_mock_topic_create(mc, dead, 1, 1);
	f = fopen(bootfile, "w");
	if (!f)
		return 2;
	fprintf(f, "%s\n", rd_kafka_mock_cluster_bootstraps(mc));
	fclose(f);
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	signal(SIGUSR1, on_usr);
	signal(SIGUSR2, on_usr);
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (!stop) {
		pause();
		if (refuse) {
			static rd_kafka_resp_err_t errs[REFUSALS];
			size_t i;

			refuse = 0;
			for (i = 0; i < REFUSALS; i++)
				errs[i] = RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS;
			rd_kafka_mock_push_request_errors_array(mc, API_OFFSET_COMMIT,
								REFUSALS, errs);
			printf("commits refused\n");
		}
		if (take) {
			take = 0;
			rd_kafka_mock_clear_request_errors(mc, API_OFFSET_COMMIT);
			printf("commits taken\n");
		}
	}
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return 0;
}

struct rec { FILE *out; int failed; };

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct rec *r = opaque;

	(void)rk;
	if (m->err) {
		r->failed++;
		return;
	}
	fprintf(r->out, "%s/%d/%lld ", rd_kafka_topic_name(m->rkt), (int)m->partition,
		(long long)m->offset);
	hex(r->out, m->payload, m->len);
	fputc('\n', r->out);
}

static int produce(const char *boot, const char *topic, int count, double rate,
		   const char *out, int fail)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	struct rec r = { fopen(out, "w"), 0 };
	struct timespec t0, now;
	unsigned char body[700];
	char err[256];
	rd_kafka_t *rk;
	int i, n, k;

	if (!r.out)
		return 2;
	setvbuf(r.out, NULL, _IOLBF, 0);
	rd_kafka_conf_set(conf, "bootstrap.servers", boot, err, sizeof(err));
	rd_kafka_conf_set(conf, "linger.ms", "1", err, sizeof(err));
	rd_kafka_conf_set_dr_msg_cb(conf, on_dr);
	rd_kafka_conf_set_opaque(conf, &r);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
	if (!rk)
		return 2;
	srand(17);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < count; i++) {
		double due = i / rate, el;

		for (;;) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			el = (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
			if (el >= due)
				break;
			rd_kafka_poll(rk, (int)((due - el) * 1000) + 1);
		}
		n = 16 + rand() % 585;
		for (k = 0; k < n; k++)
			body[k] = (unsigned char)rand();
		if (i == fail)
			memcpy(body, "FAIL500 ", 8);
		while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
					 RD_KAFKA_V_VALUE(body, (size_t)n),
					 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
					 RD_KAFKA_V_END))
			rd_kafka_poll(rk, 10);
		rd_kafka_poll(rk, 0);
	}
	rd_kafka_flush(rk, 10000);
	rd_kafka_destroy(rk);
	fclose(r.out);
	return r.failed ? 1 : 0;
}

static int dump(const char *boot, const char *topic)
{
	rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, boot, "kafka-mock-dump");
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
	int idle = 0;

	rd_kafka_topic_partition_list_add(l, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_assign(rk, l);
	rd_kafka_topic_partition_list_destroy(l);
	while (idle < 30) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		rd_kafka_headers_t *h = NULL;
		const void *v;
		size_t vl;
		const char *names[] = { "id", "reason", "attempts" };
		int i;

		if (!m) {
			idle++;
			continue;
		}
		if (m->err) {
			rd_kafka_message_destroy(m);
			if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
				break;
			continue;
		}
		rd_kafka_message_headers(m, &h);
		for (i = 0; i < 3; i++) {
			if (h && !rd_kafka_header_get_last(h, names[i], &v, &vl))
				printf("%.*s ", (int)vl, (const char *)v);
			else
				printf("- ");
		}
		hex(stdout, m->payload, m->len);
		putchar('\n');
		rd_kafka_message_destroy(m);
	}
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return 0;
}

static int lag(const char *boot, const char *group, const char *topic, int parts)
{
	rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, boot, group);
	rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(parts);
	long long total = 0;
	int i;

	for (i = 0; i < parts; i++)
		rd_kafka_topic_partition_list_add(l, topic, i);
	if (rd_kafka_committed(rk, l, 10000))
		return 2;
	for (i = 0; i < parts; i++) {
		int64_t lo, hi, c = l->elems[i].offset;

		if (rd_kafka_query_watermark_offsets(rk, topic, i, &lo, &hi, 10000))
			return 2;
		total += hi - (c < 0 ? lo : c);
	}
	printf("%lld\n", total);
	rd_kafka_topic_partition_list_destroy(l);
	rd_kafka_destroy(rk);
	return 0;
}

static int watch(const char *boot, const char *group, const char *topic, int parts,
		 int interval_ms)
{
	rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, boot, group);
	struct timespec now;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	while (!stop) {
		rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(parts);

		for (i = 0; i < parts; i++)
			rd_kafka_topic_partition_list_add(l, topic, i);
		if (!rd_kafka_committed(rk, l, 5000)) {
			clock_gettime(CLOCK_REALTIME, &now);
			for (i = 0; i < parts; i++)
				if (l->elems[i].offset >= 0)
					printf("%lld.%06ld %d %lld\n", (long long)now.tv_sec,
					       now.tv_nsec / 1000, i,
					       (long long)l->elems[i].offset);
		}
		rd_kafka_topic_partition_list_destroy(l);
		usleep(interval_ms * 1000);
	}
	rd_kafka_destroy(rk);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "serve"))
		return serve(argv[2], atoi(argv[3]), argv[4]);
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "produce"))
		return produce(argv[2], argv[3], atoi(argv[4]), atof(argv[5]), argv[6],
			       argc == 8 ? atoi(argv[7]) : -1);
	if (argc == 4 && !strcmp(argv[1], "dump"))
		return dump(argv[2], argv[3]);
	if (argc == 7 && !strcmp(argv[1], "watch"))
		return watch(argv[2], argv[3], argv[4], atoi(argv[5]), atoi(argv[6]));
	if (argc == 6 && !strcmp(argv[1], "lag"))
		return lag(argv[2], argv[3], argv[4], atoi(argv[5]));
	fprintf(stderr, "usage: see kafka_mock.c\n");
	return 2;
}
