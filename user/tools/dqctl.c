// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl - the control plane of dq.ko over its generic netlink family "dq"
 * (uapi/linux/dq.h): create, delete, list, show and tune named queues, read
 * their statistics and follow the events multicast group.
 *
 * Exit status: 0 success, 1 usage error, 2 the kernel refused or failed.
 * See docs/dqctl.md.
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include <linux/dq.h>

#define DQCTL_VERSION	"0.1.0"

#define EXIT_USAGE	1
#define EXIT_KERNEL	2

#ifndef MNL_SOCKET_DUMP_SIZE
#define MNL_SOCKET_DUMP_SIZE	32768
#endif
#define RX_BUF_SIZE	MNL_SOCKET_DUMP_SIZE
#define TX_BUF_SIZE	4096

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* Global options and messages                                         */
/* ------------------------------------------------------------------ */

static bool opt_json;
static bool opt_verbose;

static void __attribute__((format(printf, 1, 2))) warnx(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("dqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static _Noreturn void __attribute__((format(printf, 1, 2)))
usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("dqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'dqctl --help'.\n", stderr);
	exit(EXIT_USAGE);
}

static void usage(FILE *f)
{
	fputs(
"usage: dqctl [--json] [-v] COMMAND [ARGS]\n"
"\n"
"  create NAME --slots N --slot-size BYTES [--submit-entries N]\n"
"         [--ready-entries N] [--node N] [--granularity TIME]\n"
"         [--max-pending N] [--rate MSGS_PER_S] [--burst N] [--high-wm N]\n"
"         [--uid USER] [--gid GROUP] [--mode OCTAL]\n"
"  delete NAME [--force]          refuses while messages are pending\n"
"  list                           every named queue\n"
"  show NAME                      one queue's settings\n"
"  set NAME [--rate R] [--burst N] [--max-pending N] [--high-wm N]\n"
"  stats [NAME | --node N]        counters of one queue, of every queue,\n"
"                                 or of one node's release engine\n"
"  monitor [--count N] [--timeout TIME]\n"
"                                 print queue events until interrupted\n"
"\n"
"  A queue may be named by --id N instead of NAME (show, stats, set, delete).\n"
"  TIME takes a unit: 50us, 2ms, 1.5s (ns, us, ms, s); counts are plain\n"
"  integers; --rate 0 means unpaced.  --json prints JSON (one object per\n"
"  line for monitor).\n"
"\n"
"Exit status: 0 ok, 1 usage error, 2 the kernel refused or failed.\n",
	      f);
}

/* ------------------------------------------------------------------ */
/* Parsing numbers                                                     */
/* ------------------------------------------------------------------ */

static uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		usage_err("%s: '%s' is not a whole number", opt, s);
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		usage_err("%s: '%s' is not a whole number", opt, s);
	if (errno == ERANGE || v > max)
		usage_err("%s: %s is too large (at most %" PRIu64 ")", opt, s,
			  max);
	return v;
}

static uint32_t parse_u32(const char *opt, const char *s)
{
	return (uint32_t)parse_u64(opt, s, UINT32_MAX);
}

static int32_t parse_node(const char *opt, const char *s)
{
	if (!strcmp(s, "-1") || !strcmp(s, "any"))
		return -1;
	return (int32_t)parse_u64(opt, s, INT32_MAX);
}

/* A time with a unit (ns, us, ms, s; a fraction is fine), in ns. */
static uint64_t parse_time(const char *opt, const char *s, const char *bare)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000 }, { "sec", 1000000000 },
	};
	uint64_t ip = 0, fp = 0, fscale = 1, mult = 0, v;
	const char *p = s;
	size_t i;
	bool digits = false;

	for (; *p >= '0' && *p <= '9'; p++, digits = true) {
		if (ip > (UINT64_MAX - 9) / 10)
			usage_err("%s: '%s' is too large", opt, s);
		ip = ip * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++, digits = true) {
			if (fscale < 1000000000ULL) {
				fp = fp * 10 + (uint64_t)(*p - '0');
				fscale *= 10;
			}
		}
	}
	if (!digits)
		usage_err("%s: '%s' is not a time (e.g. 50us, 2ms, 1s)", opt, s);
	if (!*p) {
		if (!bare) {
			if (ip == 0 && fp == 0)
				return 0;
			usage_err("%s: '%s' needs a unit: ns, us, ms or s", opt,
				  s);
		}
		p = bare;
	}
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(p, units[i].unit))
			mult = units[i].ns;
	if (!mult)
		usage_err("%s: '%s': unknown unit (use ns, us, ms or s)", opt, s);
	if (ip > UINT64_MAX / mult)
		usage_err("%s: '%s' is too large", opt, s);
	v = ip * mult + fp * mult / fscale;
	return v;
}

static uint32_t parse_mode(const char *opt, const char *s)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (!*s || *end || errno || v > 0777 || *s == '-')
		usage_err("%s: '%s' is not an octal mode (e.g. 0660)", opt, s);
	return (uint32_t)v;
}

static uint32_t parse_uid(const char *opt, const char *s)
{
	struct passwd *pw;

	if (*s >= '0' && *s <= '9')
		return parse_u32(opt, s);
	pw = getpwnam(s);
	if (!pw)
		usage_err("%s: no user '%s'", opt, s);
	return pw->pw_uid;
}

static uint32_t parse_gid(const char *opt, const char *s)
{
	struct group *gr;

	if (*s >= '0' && *s <= '9')
		return parse_u32(opt, s);
	gr = getgrnam(s);
	if (!gr)
		usage_err("%s: no group '%s'", opt, s);
	return gr->gr_gid;
}

/* ------------------------------------------------------------------ */
/* Formatting                                                          */
/* ------------------------------------------------------------------ */

/* 50000 -> "50us", 1500000 -> "1.5ms", 0 -> "0". */
static const char *fmt_ns(char *buf, size_t len, uint64_t ns)
{
	static const struct { const char *unit; uint64_t ns; } u[] = {
		{ "s", 1000000000 }, { "ms", 1000000 }, { "us", 1000 },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(u); i++) {
		if (ns < u[i].ns)
			continue;
		if (ns % u[i].ns == 0)
			snprintf(buf, len, "%" PRIu64 "%s", ns / u[i].ns,
				 u[i].unit);
		else
			snprintf(buf, len, "%.3g%s", (double)ns / u[i].ns,
				 u[i].unit);
		return buf;
	}
	snprintf(buf, len, "%" PRIu64 "%s", ns, ns ? "ns" : "");
	return buf;
}

static const char *fmt_bytes(char *buf, size_t len, uint64_t b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	size_t i = 0;

	while (v >= 1024 && i + 1 < ARRAY_SIZE(unit)) {
		v /= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%" PRIu64 " B", b);
	else
		snprintf(buf, len, "%.4g %s", v, unit[i]);
	return buf;
}

static const char *fmt_user(char *buf, size_t len, uint32_t uid)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(buf, len, "%s", pw->pw_name);
	else
		snprintf(buf, len, "%" PRIu32, uid);
	return buf;
}

static const char *fmt_group(char *buf, size_t len, uint32_t gid)
{
	struct group *gr = getgrgid(gid);

	if (gr)
		snprintf(buf, len, "%s", gr->gr_name);
	else
		snprintf(buf, len, "%" PRIu32, gid);
	return buf;
}

/* A queue name fit for a terminal: control characters become '?'. */
static const char *safe_name(char *buf, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

/* ---- JSON writer --------------------------------------------------- */

#define JSON_MAX_DEPTH	8

static struct {
	int depth;
	bool first[JSON_MAX_DEPTH];
	bool array[JSON_MAX_DEPTH];
} jw;

static void json_str_raw(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	for (; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", stdout); break;
		case '\\': fputs("\\\\", stdout); break;
		case '\n': fputs("\\n", stdout); break;
		case '\t': fputs("\\t", stdout); break;
		case '\r': fputs("\\r", stdout); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				printf("\\u%04x", *p);
			else
				putchar(*p);
		}
	}
	putchar('"');
}

/* Comma, line break for elements of a top-level array, then the key. */
static void json_key(const char *key)
{
	if (jw.depth > 0) {
		if (!jw.first[jw.depth])
			putchar(',');
		if (jw.depth == 1 && jw.array[1])
			putchar('\n');
		jw.first[jw.depth] = false;
	}
	if (key && jw.depth > 0 && !jw.array[jw.depth]) {
		json_str_raw(key);
		putchar(':');
	}
}

static void json_open(const char *key, bool array)
{
	json_key(key);
	putchar(array ? '[' : '{');
	if (jw.depth + 1 < JSON_MAX_DEPTH)
		jw.depth++;
	jw.first[jw.depth] = true;
	jw.array[jw.depth] = array;
}

static void json_close(void)
{
	bool array = jw.array[jw.depth];

	if (array && jw.depth == 1 && !jw.first[1])
		putchar('\n');
	putchar(array ? ']' : '}');
	if (jw.depth > 0)
		jw.depth--;
	if (jw.depth == 0)
		putchar('\n');
}

static void json_u64(const char *key, uint64_t v)
{
	json_key(key);
	printf("%" PRIu64, v);
}

static void json_s64(const char *key, int64_t v)
{
	json_key(key);
	printf("%" PRId64, v);
}

static void json_str(const char *key, const char *s)
{
	json_key(key);
	json_str_raw(s);
}

/*
 * ---- one field, for text and JSON at once ----------------------------
 * Every printer below emits each field once, with both renderings: in
 * JSON mode the pair KEY: value (none when KEY is NULL: a text-only
 * piece), in text mode printf(FMT, value) (nothing when FMT is NULL: a
 * JSON-only field).  So the two outputs cannot drift apart, and they
 * list the fields in the same order.
 */
static void out_u64(const char *key, const char *fmt, uint64_t v)
{
	if (opt_json) {
		if (key)
			json_u64(key, v);
	} else if (fmt) {
		printf(fmt, v);
	}
}

static void out_s64(const char *key, const char *fmt, int64_t v)
{
	if (opt_json) {
		if (key)
			json_s64(key, v);
	} else if (fmt) {
		printf(fmt, v);
	}
}

/* A number in JSON whose text is a string (a unit, "off", a user name). */
static void out_u64_as(const char *key, uint64_t v, const char *fmt,
		       const char *text)
{
	if (opt_json)
		json_u64(key, v);
	else
		printf(fmt, text);
}

static void out_str(const char *key, const char *fmt, const char *s)
{
	if (opt_json) {
		if (key)
			json_str(key, s);
	} else if (fmt) {
		printf(fmt, s);
	}
}

/* ---- tables -------------------------------------------------------- */

#define TABLE_MAX_COLS	16

struct table {
	int ncols;
	char *head[TABLE_MAX_COLS];
	bool left[TABLE_MAX_COLS];
	size_t width[TABLE_MAX_COLS];
	char **cells;		/* row-major, ncols per row */
	size_t n, cap;
};

/* @spec: "<NAME >COUNT ...": '<' left aligned column, '>' right aligned. */
static void table_init(struct table *t, const char *spec)
{
	const char *p = spec;

	memset(t, 0, sizeof(*t));
	while (*p && t->ncols < TABLE_MAX_COLS) {
		size_t len = strcspn(p + 1, " ");

		t->left[t->ncols] = *p == '<';
		t->head[t->ncols] = strndup(p + 1, len);
		if (!t->head[t->ncols])
			exit(EXIT_KERNEL);
		t->width[t->ncols] = len;
		t->ncols++;
		p += 1 + len;
		p += strspn(p, " ");
	}
}

static void __attribute__((format(printf, 2, 3)))
table_cell(struct table *t, const char *fmt, ...)
{
	size_t col = t->n % (size_t)t->ncols;
	va_list ap;
	char *s;

	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **c = realloc(t->cells, cap * sizeof(*c));

		if (!c)
			exit(EXIT_KERNEL);
		t->cells = c;
		t->cap = cap;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		exit(EXIT_KERNEL);
	va_end(ap);
	t->cells[t->n++] = s;
	if (strlen(s) > t->width[col])
		t->width[col] = strlen(s);
}

static void table_row(const struct table *t, char *const *cells)
{
	int c;

	for (c = 0; c < t->ncols; c++) {
		int w = (int)t->width[c];

		if (c)
			fputs("  ", stdout);
		if (!t->left[c])
			printf("%*s", w, cells[c]);
		else if (c + 1 < t->ncols)
			printf("%-*s", w, cells[c]);
		else
			fputs(cells[c], stdout);
	}
	putchar('\n');
}

static void table_print(struct table *t)
{
	size_t i;
	int c;

	table_row(t, t->head);
	for (i = 0; i + (size_t)t->ncols <= t->n; i += (size_t)t->ncols)
		table_row(t, t->cells + i);
	for (i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	for (c = 0; c < t->ncols; c++)
		free(t->head[c]);
}

/* ------------------------------------------------------------------ */
/* Attribute names                                                     */
/* ------------------------------------------------------------------ */

enum attr_kind { K_NONE, K_U32, K_S32, K_U64, K_STR, K_FLAG, K_NEST };

static const struct {
	const char *name;	/* as dqctl's option, without "--" */
	enum attr_kind kind;
} attr_info[DQ_A_MAX + 1] = {
	[DQ_A_ID]		= { "id", K_U32 },
	[DQ_A_NAME]		= { "name", K_STR },
	[DQ_A_SLOTS]		= { "slots", K_U32 },
	[DQ_A_SLOT_SIZE]	= { "slot-size", K_U32 },
	[DQ_A_SUBMIT_ENTRIES]	= { "submit-entries", K_U32 },
	[DQ_A_READY_ENTRIES]	= { "ready-entries", K_U32 },
	[DQ_A_NODE]		= { "node", K_S32 },
	[DQ_A_GRANULARITY_NS]	= { "granularity", K_U32 },
	[DQ_A_MAX_PENDING]	= { "max-pending", K_U32 },
	[DQ_A_RATE]		= { "rate", K_U64 },
	[DQ_A_BURST]		= { "burst", K_U32 },
	[DQ_A_HIGH_WM]		= { "high-wm", K_U32 },
	[DQ_A_UID]		= { "uid", K_U32 },
	[DQ_A_GID]		= { "gid", K_U32 },
	[DQ_A_MODE]		= { "mode", K_U32 },
	[DQ_A_FORCE]		= { "force", K_FLAG },
	[DQ_A_PAD]		= { "pad", K_NONE },
	[DQ_A_STATS]		= { "stats", K_NEST },
	[DQ_A_EVENT_KIND]	= { "event-kind", K_U32 },
	[DQ_A_USERS]		= { "users", K_U32 },
};

static const char *attr_name(unsigned int type)
{
	if (type <= DQ_A_MAX && attr_info[type].name)
		return attr_info[type].name;
	return NULL;
}

static const char *const stats_names[DQ_STATS_MAX + 1] = {
	[DQ_STATS_PENDING]	= "pending",
	[DQ_STATS_PACED]	= "paced",
	[DQ_STATS_READY_BACKLOG] = "ready_backlog",
	[DQ_STATS_SUBMITTED]	= "submitted",
	[DQ_STATS_RELEASED]	= "released",
	[DQ_STATS_CANCELLED]	= "cancelled",
	[DQ_STATS_REJECTED]	= "rejected",
	[DQ_STATS_RING_ERRORS]	= "ring_errors",
	[DQ_STATS_LATE_EWMA_NS]	= "late_ewma_ns",
	[DQ_STATS_LATE_MAX_NS]	= "late_max_ns",
	[DQ_STATS_TIMER_FIRES]	= "timer_fires",
	[DQ_STATS_THROTTLED]	= "throttled",
	[DQ_STATS_PAD]		= "pad",
};

static const char *const reject_names[DQ_REJ_MAX] = {
	[DQ_REJ_SLOT]	= "slot",
	[DQ_REJ_LEN]	= "len",
	[DQ_REJ_FLAGS]	= "flags",
	[DQ_REJ_RESV]	= "resv",
	[DQ_REJ_TIME]	= "time",
	[DQ_REJ_BUSY]	= "busy",
	[DQ_REJ_FULL]	= "full",
	[7]		= "reason7",
};

static const char *const event_names[] = {
	[DQ_EVENT_HIGH_WM]	= "high_wm",
	[DQ_EVENT_FULL]		= "full",
	[DQ_EVENT_DELETED]	= "deleted",
};

/* ------------------------------------------------------------------ */
/* Netlink                                                             */
/* ------------------------------------------------------------------ */

struct nl_err {
	int error;		/* positive errno, 0: none */
	char msg[256];		/* NLMSGERR_ATTR_MSG */
	bool has_offs;
	uint32_t offs;		/* NLMSGERR_ATTR_OFFS */
	uint32_t miss_type;	/* NLMSGERR_ATTR_MISS_TYPE, 0: none */
	bool has_policy;
	uint32_t policy_type;	/* NL_ATTR_TYPE_*, 0: unknown */
	bool has_range_u, has_range_s, has_len;
	uint64_t min_u, max_u;
	int64_t min_s, max_s;
	uint32_t min_len, max_len;
};

struct nl {
	struct mnl_socket *sk;
	uint32_t portid;
	uint32_t seq;
	uint16_t family;
	uint32_t family_version;
	uint32_t mcgrp_events;	/* 0: the family has no such group */
	/* the last request, to name the attribute an error points at */
	char req[TX_BUF_SIZE];
	size_t req_len;
	struct nl_err err;
	char rx[RX_BUF_SIZE];
};

static int parse_policy_cb(const struct nlattr *a, void *data)
{
	struct nl_err *e = data;

	switch (mnl_attr_get_type(a)) {
	case NL_POLICY_TYPE_ATTR_TYPE:
		if (mnl_attr_get_payload_len(a) == 4)
			e->policy_type = mnl_attr_get_u32(a);
		break;
	case NL_POLICY_TYPE_ATTR_MIN_VALUE_U:
		if (mnl_attr_get_payload_len(a) == 8) {
			e->min_u = mnl_attr_get_u64(a);
			e->has_range_u = true;
		}
		break;
	case NL_POLICY_TYPE_ATTR_MAX_VALUE_U:
		if (mnl_attr_get_payload_len(a) == 8) {
			e->max_u = mnl_attr_get_u64(a);
			e->has_range_u = true;
		}
		break;
	case NL_POLICY_TYPE_ATTR_MIN_VALUE_S:
		if (mnl_attr_get_payload_len(a) == 8) {
			e->min_s = (int64_t)mnl_attr_get_u64(a);
			e->has_range_s = true;
		}
		break;
	case NL_POLICY_TYPE_ATTR_MAX_VALUE_S:
		if (mnl_attr_get_payload_len(a) == 8) {
			e->max_s = (int64_t)mnl_attr_get_u64(a);
			e->has_range_s = true;
		}
		break;
	case NL_POLICY_TYPE_ATTR_MIN_LENGTH:
		if (mnl_attr_get_payload_len(a) == 4) {
			e->min_len = mnl_attr_get_u32(a);
			e->has_len = true;
		}
		break;
	case NL_POLICY_TYPE_ATTR_MAX_LENGTH:
		if (mnl_attr_get_payload_len(a) == 4) {
			e->max_len = mnl_attr_get_u32(a);
			e->has_len = true;
		}
		break;
	}
	return MNL_CB_OK;
}

static int parse_extack_cb(const struct nlattr *a, void *data)
{
	struct nl_err *e = data;
	const char *s;
	size_t len;

	switch (mnl_attr_get_type(a)) {
	case NLMSGERR_ATTR_MSG:
		s = mnl_attr_get_payload(a);
		len = strnlen(s, mnl_attr_get_payload_len(a));
		if (len >= sizeof(e->msg))
			len = sizeof(e->msg) - 1;
		memcpy(e->msg, s, len);
		e->msg[len] = '\0';
		/* drop a trailing newline some kernel messages carry */
		while (len && (e->msg[len - 1] == '\n' || e->msg[len - 1] == ' '))
			e->msg[--len] = '\0';
		break;
	case NLMSGERR_ATTR_OFFS:
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0) {
			e->offs = mnl_attr_get_u32(a);
			e->has_offs = true;
		}
		break;
	case NLMSGERR_ATTR_MISS_TYPE:
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
			e->miss_type = mnl_attr_get_u32(a);
		break;
	case NLMSGERR_ATTR_POLICY:
		e->has_policy = true;
		mnl_attr_parse_nested(a, parse_policy_cb, e);
		break;
	}
	return MNL_CB_OK;
}

/* Extended ack TLVs start at @off bytes into the message's payload. */
static void parse_extack(const struct nlmsghdr *nlh, size_t off,
			 struct nl_err *e)
{
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (mnl_nlmsg_get_payload_len(nlh) < off)
		return;
	mnl_attr_parse(nlh, (unsigned int)off, parse_extack_cb, e);
}

static int cb_error(const struct nlmsghdr *nlh, void *data)
{
	struct nl *nl = data;
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	size_t off;

	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*err)) {
		errno = EBADMSG;
		return MNL_CB_ERROR;
	}
	if (err->error == 0)
		return MNL_CB_STOP;	/* the ack */
	nl->err.error = -err->error;
	off = sizeof(*err);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += err->msg.nlmsg_len - sizeof(struct nlmsghdr);
	parse_extack(nlh, off, &nl->err);
	errno = nl->err.error;
	return MNL_CB_ERROR;
}

static int cb_done(const struct nlmsghdr *nlh, void *data)
{
	struct nl *nl = data;
	int error = 0;

	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int))
		memcpy(&error, mnl_nlmsg_get_payload(nlh), sizeof(int));
	if (error == 0)
		return MNL_CB_STOP;
	nl->err.error = -error;
	parse_extack(nlh, sizeof(int), &nl->err);
	errno = nl->err.error;
	return MNL_CB_ERROR;
}

static int cb_noop(const struct nlmsghdr *nlh, void *data)
{
	(void)nlh;
	(void)data;
	return MNL_CB_OK;
}

static int cb_overrun(const struct nlmsghdr *nlh, void *data)
{
	struct nl *nl = data;

	(void)nlh;
	nl->err.error = ENOBUFS;
	errno = ENOBUFS;
	return MNL_CB_ERROR;
}

/* Start a generic netlink request in @buf. */
static struct nlmsghdr *genl_req(void *buf, uint16_t type, uint16_t flags,
				 uint8_t cmd, uint8_t version)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));
	g->cmd = cmd;
	g->version = version;
	return nlh;
}

/*
 * A request of the dq family in nl->req: a doit with an ack, or a dump.
 * Its type, the family id, is filled in when it is sent: options are
 * checked before dqctl talks to the kernel at all.
 */
static struct nlmsghdr *dq_req(struct nl *nl, uint8_t cmd, bool dump)
{
	return genl_req(nl->req, 0, dump ? NLM_F_DUMP : NLM_F_ACK, cmd,
			DQ_GENL_VERSION);
}

/*
 * mnl_cb_run2 hands the same data pointer to data and control callbacks.
 * Every data callback here takes a struct reply whose first member is the
 * struct nl *, so the control callbacks can find it.
 */
struct reply {
	struct nl *nl;		/* must be first */
};

static int cb_error_r(const struct nlmsghdr *nlh, void *data)
{
	return cb_error(nlh, ((struct reply *)data)->nl);
}

static int cb_done_r(const struct nlmsghdr *nlh, void *data)
{
	return cb_done(nlh, ((struct reply *)data)->nl);
}

static int cb_overrun_r(const struct nlmsghdr *nlh, void *data)
{
	return cb_overrun(nlh, ((struct reply *)data)->nl);
}

static mnl_cb_t ctl_cbs_r[NLMSG_MIN_TYPE] = {
	[NLMSG_NOOP] = cb_noop,
	[NLMSG_ERROR] = cb_error_r,
	[NLMSG_DONE] = cb_done_r,
	[NLMSG_OVERRUN] = cb_overrun_r,
};

/*
 * Send @nlh and run @cb (data: @r, a struct reply or a struct beginning
 * with one) on every reply until the ack, the end of a dump or an error.
 * 0, or -1 with nl->err filled in.
 */
static int nl_exchange(struct nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb,
		       struct reply *r)
{
	int ret;

	r->nl = nl;
	memset(&nl->err, 0, sizeof(nl->err));
	nlh->nlmsg_seq = ++nl->seq;
	if (mnl_socket_sendto(nl->sk, nlh, nlh->nlmsg_len) < 0) {
		nl->err.error = errno;
		return -1;
	}
	for (;;) {
		ssize_t n = mnl_socket_recvfrom(nl->sk, nl->rx, sizeof(nl->rx));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			nl->err.error = errno;
			return -1;
		}
		errno = 0;
		ret = mnl_cb_run2(nl->rx, (size_t)n, nlh->nlmsg_seq, nl->portid,
				  cb, r, ctl_cbs_r, NLMSG_MIN_TYPE);
		if (ret == MNL_CB_STOP)
			return 0;
		if (ret < 0) {
			if (!nl->err.error)
				nl->err.error = errno ? errno : EPROTO;
			return -1;
		}
	}
}

static int nl_open(struct nl *nl);

/* Send the dq request in nl->req (opening the socket first if need be). */
static int nl_talk_r(struct nl *nl, mnl_cb_t cb, struct reply *r)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)nl->req;
	int ret;

	if (!nl->sk) {
		ret = nl_open(nl);
		if (ret)
			exit(ret);
	}
	nlh->nlmsg_type = nl->family;
	nl->req_len = nlh->nlmsg_len;
	return nl_exchange(nl, nlh, cb, r);
}

/* The attribute of the last request at byte offset @offs, or 0. */
static unsigned int req_attr_at(const struct nl *nl, uint32_t offs)
{
	const struct nlmsghdr *nlh = (const struct nlmsghdr *)nl->req;
	const struct nlattr *a;

	if (offs >= nl->req_len)
		return 0;
	mnl_attr_for_each(a, nlh, sizeof(struct genlmsghdr)) {
		if ((const char *)a - (const char *)nlh == (ptrdiff_t)offs)
			return mnl_attr_get_type(a);
	}
	return 0;
}

/* Describe the attribute an error points at: "--slot-size" or "attribute 42". */
static void attr_label(char *buf, size_t len, unsigned int type)
{
	const char *n = attr_name(type);

	if (n)
		snprintf(buf, len, "%s", n);
	else
		snprintf(buf, len, "attribute type %u", type);
}

/*
 * Print what went wrong with @what ("create q"): the kernel's extack
 * message when there is one, the attribute it points at and the valid
 * range when the policy says, else strerror.  Returns EXIT_KERNEL.
 */
static int nl_fail(struct nl *nl, const char *what, const char *perm_action)
{
	struct nl_err *e = &nl->err;
	char detail[160] = "", label[48];
	const char *msg = e->msg[0] ? e->msg : strerror(e->error);
	unsigned int bad = e->has_offs ? req_attr_at(nl, e->offs) : 0;

	if (e->error == EPERM && perm_action && !e->msg[0]) {
		warnx("permission denied: %s needs CAP_NET_ADMIN", perm_action);
		return EXIT_KERNEL;
	}
	if (e->miss_type && !e->msg[0]) {
		attr_label(label, sizeof(label), e->miss_type);
		warnx("%s: missing required attribute %s", what, label);
		return EXIT_KERNEL;
	}
	if (bad && (e->has_policy || !attr_name(bad))) {
		static const char *const types[] = {
			[NL_ATTR_TYPE_FLAG] = "a flag",
			[NL_ATTR_TYPE_U8] = "u8", [NL_ATTR_TYPE_U16] = "u16",
			[NL_ATTR_TYPE_U32] = "u32", [NL_ATTR_TYPE_U64] = "u64",
			[NL_ATTR_TYPE_S8] = "s8", [NL_ATTR_TYPE_S16] = "s16",
			[NL_ATTR_TYPE_S32] = "s32", [NL_ATTR_TYPE_S64] = "s64",
			[NL_ATTR_TYPE_BINARY] = "binary",
			[NL_ATTR_TYPE_STRING] = "a string",
			[NL_ATTR_TYPE_NUL_STRING] = "a NUL-terminated string",
			[NL_ATTR_TYPE_NESTED] = "nested",
		};
		const char *tn = e->policy_type < ARRAY_SIZE(types) ?
				 types[e->policy_type] : NULL;
		size_t l;

		attr_label(label, sizeof(label), bad);
		l = (size_t)snprintf(detail, sizeof(detail), " (%s", label);
		if (tn && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      ": %s", tn);
		if (e->has_range_u && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      "%s valid range %" PRIu64 "..%" PRIu64,
					      tn ? "," : ":", e->min_u, e->max_u);
		else if (e->has_range_s && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      "%s valid range %" PRId64 "..%" PRId64,
					      tn ? "," : ":", e->min_s, e->max_s);
		else if (e->has_len && e->max_len && l < sizeof(detail))
			l += (size_t)snprintf(detail + l, sizeof(detail) - l,
					      "%s at most %" PRIu32 " bytes",
					      tn ? "," : ":", e->max_len);
		if (l < sizeof(detail))
			snprintf(detail + l, sizeof(detail) - l, ")");
	}
	if (e->miss_type && e->msg[0]) {
		attr_label(label, sizeof(label), e->miss_type);
		snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail),
			 " (missing %s)", label);
	}
	warnx("%s: %s%s", what, msg, detail);
	if (opt_verbose)
		warnx("(errno %d: %s)", e->error, strerror(e->error));
	return EXIT_KERNEL;
}

/* ---- family resolution -------------------------------------------- */

struct family_reply {
	struct reply r;
	uint16_t id;
	uint32_t version;
	uint32_t mcgrp;
};

static int family_grp_cb(const struct nlattr *a, void *data)
{
	struct family_reply *f = data;
	const struct nlattr *x;
	const char *name = NULL;
	uint32_t id = 0;

	mnl_attr_for_each_nested(x, a) {
		switch (mnl_attr_get_type(x)) {
		case CTRL_ATTR_MCAST_GRP_NAME:
			if (mnl_attr_validate(x, MNL_TYPE_NUL_STRING) >= 0)
				name = mnl_attr_get_str(x);
			break;
		case CTRL_ATTR_MCAST_GRP_ID:
			if (mnl_attr_validate(x, MNL_TYPE_U32) >= 0)
				id = mnl_attr_get_u32(x);
			break;
		}
	}
	if (name && !strcmp(name, DQ_GENL_MCGRP_EVENTS))
		f->mcgrp = id;
	return MNL_CB_OK;
}

static int family_attr_cb(const struct nlattr *a, void *data)
{
	struct family_reply *f = data;

	switch (mnl_attr_get_type(a)) {
	case CTRL_ATTR_FAMILY_ID:
		if (mnl_attr_validate(a, MNL_TYPE_U16) >= 0)
			f->id = mnl_attr_get_u16(a);
		break;
	case CTRL_ATTR_VERSION:
		if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
			f->version = mnl_attr_get_u32(a);
		break;
	case CTRL_ATTR_MCAST_GROUPS:
		mnl_attr_parse_nested(a, family_grp_cb, f);
		break;
	}
	return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	mnl_attr_parse(nlh, sizeof(struct genlmsghdr), family_attr_cb, data);
	return MNL_CB_OK;
}

static int nl_open(struct nl *nl)
{
	struct family_reply f = { .id = 0 };
	char buf[256];
	struct nlmsghdr *nlh;
	int one = 1;

	nl->sk = mnl_socket_open(NETLINK_GENERIC);
	if (!nl->sk) {
		warnx("cannot open a generic netlink socket: %s",
		      strerror(errno));
		return EXIT_KERNEL;
	}
	/* Error messages from the kernel, without our request echoed back. */
	mnl_socket_setsockopt(nl->sk, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sk, NETLINK_CAP_ACK, &one, sizeof(one));
	if (mnl_socket_bind(nl->sk, 0, MNL_SOCKET_AUTOPID) < 0) {
		warnx("cannot bind a generic netlink socket: %s",
		      strerror(errno));
		return EXIT_KERNEL;
	}
	nl->portid = mnl_socket_get_portid(nl->sk);
	nl->seq = (uint32_t)time(NULL);

	nlh = genl_req(buf, GENL_ID_CTRL, NLM_F_ACK, CTRL_CMD_GETFAMILY, 1);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, DQ_GENL_NAME);
	nl->req_len = 0;
	if (nl_exchange(nl, nlh, family_cb, &f.r) < 0) {
		if (nl->err.error == ENOENT) {
			warnx("module dq not loaded (no generic netlink family '%s')",
			      DQ_GENL_NAME);
			return EXIT_KERNEL;
		}
		return nl_fail(nl, "looking up the generic netlink family 'dq'",
			       NULL);
	}
	if (!f.id) {
		warnx("module dq not loaded (no generic netlink family '%s')",
		      DQ_GENL_NAME);
		return EXIT_KERNEL;
	}
	nl->family = f.id;
	nl->family_version = f.version;
	nl->mcgrp_events = f.mcgrp;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Queue replies                                                       */
/* ------------------------------------------------------------------ */

struct qinfo {
	bool has[DQ_A_MAX + 1];
	uint64_t v[DQ_A_MAX + 1];	/* integer attributes */
	char name[DQ_NAME_MAX];
	char disp[DQ_NAME_MAX];		/* name, safe to print */
	bool has_stats;
	bool st_has[DQ_STATS_MAX + 1];
	uint64_t st[DQ_STATS_MAX + 1];
	bool has_rej;
	uint64_t rej[DQ_REJ_MAX];
	bool has_node_in_stats;		/* see parse_stats_cb */
	int32_t node_in_stats;
};

static int parse_rej_cb(const struct nlattr *a, void *data)
{
	struct qinfo *q = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t >= 1 && t <= DQ_REJ_MAX &&
	    mnl_attr_validate(a, MNL_TYPE_U64) >= 0)
		q->rej[t - 1] = mnl_attr_get_u64(a);
	return MNL_CB_OK;
}

static int parse_stats_cb(const struct nlattr *a, void *data)
{
	struct qinfo *q = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t == DQ_STATS_REJECTED) {
		/*
		 * dq.ko's per-node STATS reply puts DQ_A_NODE (an s32 whose
		 * number is DQ_STATS_REJECTED's) inside the stats nest; tell
		 * the two apart by the nest flag.
		 */
		if (!(a->nla_type & NLA_F_NESTED) &&
		    mnl_attr_get_payload_len(a) == 4) {
			q->has_node_in_stats = true;
			q->node_in_stats = (int32_t)mnl_attr_get_u32(a);
			return MNL_CB_OK;
		}
		q->has_rej = true;
		mnl_attr_parse_nested(a, parse_rej_cb, q);
		return MNL_CB_OK;
	}
	if (t <= DQ_STATS_MAX && t != DQ_STATS_PAD &&
	    mnl_attr_validate(a, MNL_TYPE_U64) >= 0) {
		q->st[t] = mnl_attr_get_u64(a);
		q->st_has[t] = true;
	}
	return MNL_CB_OK;
}

static int parse_queue_cb(const struct nlattr *a, void *data)
{
	struct qinfo *q = data;
	unsigned int t = mnl_attr_get_type(a);

	if (t > DQ_A_MAX)
		return MNL_CB_OK;	/* from a newer module */
	switch (attr_info[t].kind) {
	case K_U32:
	case K_S32:
		if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
			return MNL_CB_OK;
		q->v[t] = attr_info[t].kind == K_S32 ?
			  (uint64_t)(int64_t)(int32_t)mnl_attr_get_u32(a) :
			  mnl_attr_get_u32(a);
		break;
	case K_U64:
		if (mnl_attr_validate(a, MNL_TYPE_U64) < 0)
			return MNL_CB_OK;
		q->v[t] = mnl_attr_get_u64(a);
		break;
	case K_STR:
		if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
			return MNL_CB_OK;
		snprintf(q->name, sizeof(q->name), "%s", mnl_attr_get_str(a));
		safe_name(q->disp, sizeof(q->disp), q->name);
		break;
	case K_FLAG:
		break;
	case K_NEST:
		q->has_stats = true;
		mnl_attr_parse_nested(a, parse_stats_cb, q);
		break;
	case K_NONE:
		return MNL_CB_OK;
	}
	q->has[t] = true;
	return MNL_CB_OK;
}

struct queue_list {
	struct reply r;
	struct qinfo *q;
	size_t n, cap;
	uint8_t cmd;		/* genl cmd of the replies, 0: any */
};

static int queue_list_cb(const struct nlmsghdr *nlh, void *data)
{
	struct queue_list *l = data;
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	struct qinfo *q;

	if (nlh->nlmsg_type != l->r.nl->family ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*g))
		return MNL_CB_OK;
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 8;
		struct qinfo *p = realloc(l->q, cap * sizeof(*p));

		if (!p) {
			errno = ENOMEM;
			return MNL_CB_ERROR;
		}
		l->q = p;
		l->cap = cap;
	}
	q = &l->q[l->n++];
	memset(q, 0, sizeof(*q));
	mnl_attr_parse(nlh, sizeof(*g), parse_queue_cb, q);
	return MNL_CB_OK;
}

/* ---- printing queues ----------------------------------------------- */

/* JSON: only the attributes the reply carried; text: every one. */
#define HAS(q, a)	(!opt_json || (q)->has[a])

/*
 * A queue's attributes: five lines of text, or the members of a JSON
 * object (the caller opens and closes it).
 */
static void print_queue_fields(const struct qinfo *q)
{
	char b1[32], b2[32], mode[8];
	uint64_t rate = q->v[DQ_A_RATE];

	out_str("name", "%s", opt_json ? (q->has[DQ_A_NAME] ? q->name : "") :
		q->has[DQ_A_NAME] ? q->disp : "-");
	if (HAS(q, DQ_A_ID))
		out_u64("id", "  id %" PRIu64, q->v[DQ_A_ID]);
	if (HAS(q, DQ_A_NODE))
		out_s64("node", "  node %" PRId64, (int64_t)q->v[DQ_A_NODE]);
	if (HAS(q, DQ_A_USERS))
		out_u64("users", "  users %" PRIu64 "\n", q->v[DQ_A_USERS]);
	if (HAS(q, DQ_A_SLOTS))
		out_u64("slots", "  slots %" PRIu64, q->v[DQ_A_SLOTS]);
	if (HAS(q, DQ_A_SLOT_SIZE))
		out_u64("slot_size", " x %" PRIu64 " B", q->v[DQ_A_SLOT_SIZE]);
	out_str(NULL, " (arena %s)",
		fmt_bytes(b1, sizeof(b1), q->v[DQ_A_SLOTS] * q->v[DQ_A_SLOT_SIZE]));
	if (HAS(q, DQ_A_SUBMIT_ENTRIES))
		out_u64("submit_entries", "  rings: submit %" PRIu64,
			q->v[DQ_A_SUBMIT_ENTRIES]);
	if (HAS(q, DQ_A_READY_ENTRIES))
		out_u64("ready_entries", ", ready %" PRIu64 "\n",
			q->v[DQ_A_READY_ENTRIES]);
	if (HAS(q, DQ_A_GRANULARITY_NS))
		out_u64_as("granularity_ns", q->v[DQ_A_GRANULARITY_NS],
			   "  granularity %s",
			   fmt_ns(b1, sizeof(b1), q->v[DQ_A_GRANULARITY_NS]));
	if (HAS(q, DQ_A_MAX_PENDING))
		out_u64("max_pending", "  max pending %" PRIu64,
			q->v[DQ_A_MAX_PENDING]);
	if (HAS(q, DQ_A_HIGH_WM)) {
		snprintf(b2, sizeof(b2), "%" PRIu64, q->v[DQ_A_HIGH_WM]);
		out_u64_as("high_wm", q->v[DQ_A_HIGH_WM],
			   "  high watermark %s\n",
			   q->v[DQ_A_HIGH_WM] ? b2 : "off");
	}
	if (HAS(q, DQ_A_RATE)) {
		snprintf(b1, sizeof(b1), "%" PRIu64 "/s", rate);
		out_u64_as("rate", rate, "  pacing %s", rate ? b1 : "off\n");
	}
	if (HAS(q, DQ_A_BURST)) {
		/* Text shows the burst only with a rate, as 1 when unset. */
		snprintf(b1, sizeof(b1), "  burst %" PRIu64 "\n",
			 q->v[DQ_A_BURST] ? q->v[DQ_A_BURST] : 1);
		out_u64_as("burst", q->v[DQ_A_BURST], "%s", rate ? b1 : "");
	}
	if (HAS(q, DQ_A_UID))
		out_u64_as("uid", q->v[DQ_A_UID], "  owner %s",
			   fmt_user(b1, sizeof(b1), (uint32_t)q->v[DQ_A_UID]));
	if (HAS(q, DQ_A_GID))
		out_u64_as("gid", q->v[DQ_A_GID], ":%s",
			   fmt_group(b2, sizeof(b2), (uint32_t)q->v[DQ_A_GID]));
	if (HAS(q, DQ_A_MODE)) {
		snprintf(mode, sizeof(mode), "%04" PRIo64, q->v[DQ_A_MODE]);
		out_str("mode", "  mode %s\n", mode);
	}
}

static uint64_t rej_total(const struct qinfo *q)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < DQ_REJ_MAX; i++)
		sum += q->rej[i];
	return sum;
}

/* JSON: only the counters the reply carried; text: every one. */
#define HAS_ST(q, s)	(!opt_json || (q)->st_has[s])

static void out_stat(const struct qinfo *q, unsigned int st, const char *fmt)
{
	if (HAS_ST(q, st))
		out_u64(stats_names[st], fmt, q->st[st]);
}

static void out_stat_ns(const struct qinfo *q, unsigned int st,
			const char *fmt)
{
	char b[32];

	if (HAS_ST(q, st))
		out_u64_as(stats_names[st], q->st[st], fmt,
			   fmt_ns(b, sizeof(b), q->st[st]));
}

/*
 * A queue's counters: a header and four lines of text, or the JSON
 * member "stats" (the caller prints the queue's own members first).
 */
static void print_stats_fields(const struct qinfo *q)
{
	bool any = false;
	int i;

	if (opt_json)
		json_open("stats", false);
	else
		printf("%s  id %" PRIu64 "  node %" PRId64 "\n",
		       q->has[DQ_A_NAME] ? q->disp : "-", q->v[DQ_A_ID],
		       (int64_t)q->v[DQ_A_NODE]);
	out_stat(q, DQ_STATS_PENDING, "  pending %" PRIu64);
	out_stat(q, DQ_STATS_PACED, "  paced %" PRIu64);
	out_stat(q, DQ_STATS_READY_BACKLOG, "  ready backlog %" PRIu64 "\n");
	out_stat(q, DQ_STATS_SUBMITTED, "  submitted %" PRIu64);
	out_stat(q, DQ_STATS_RELEASED, "  released %" PRIu64);
	out_stat(q, DQ_STATS_CANCELLED, "  cancelled %" PRIu64);
	out_stat(q, DQ_STATS_THROTTLED, "  throttled %" PRIu64 "\n");
	if (!opt_json || q->has_rej) {
		out_u64("rejected_total", "  rejected %" PRIu64, rej_total(q));
		if (opt_json)
			json_open("rejected", false);
		for (i = 0; i < DQ_REJ_NR; i++) {
			if (opt_json) {
				json_u64(reject_names[i], q->rej[i]);
			} else if (q->rej[i]) {
				printf("%s%s %" PRIu64, any ? ", " : " (",
				       reject_names[i], q->rej[i]);
				any = true;
			}
		}
		if (opt_json)
			json_close();
		else if (any)
			putchar(')');
	}
	out_stat(q, DQ_STATS_RING_ERRORS, "  ring errors %" PRIu64 "\n");
	out_stat_ns(q, DQ_STATS_LATE_EWMA_NS, "  lateness ewma %s");
	out_stat_ns(q, DQ_STATS_LATE_MAX_NS, "  max %s");
	out_stat(q, DQ_STATS_TIMER_FIRES, "  timer fires %" PRIu64 "\n");
	if (opt_json)
		json_close();
}

/* ------------------------------------------------------------------ */
/* Command-line options                                                */
/* ------------------------------------------------------------------ */

enum opt_id {
	O_SLOTS = 1, O_SLOT_SIZE, O_SUBMIT_ENTRIES, O_READY_ENTRIES, O_NODE,
	O_GRANULARITY, O_MAX_PENDING, O_RATE, O_BURST, O_HIGH_WM, O_UID,
	O_GID, O_MODE, O_FORCE, O_ID, O_COUNT, O_TIMEOUT, O_DUMP,
	O_NR,
};

static const struct optdef {
	const char *name;
	enum opt_id id;
	bool arg;
} optdefs[] = {
	{ "slots", O_SLOTS, true },
	{ "slot-size", O_SLOT_SIZE, true },
	{ "submit-entries", O_SUBMIT_ENTRIES, true },
	{ "ready-entries", O_READY_ENTRIES, true },
	{ "node", O_NODE, true },
	{ "granularity", O_GRANULARITY, true },
	{ "max-pending", O_MAX_PENDING, true },
	{ "rate", O_RATE, true },
	{ "burst", O_BURST, true },
	{ "high-wm", O_HIGH_WM, true },
	{ "uid", O_UID, true },
	{ "gid", O_GID, true },
	{ "mode", O_MODE, true },
	{ "force", O_FORCE, false },
	{ "id", O_ID, true },
	{ "count", O_COUNT, true },
	{ "timeout", O_TIMEOUT, true },
	{ "dump", O_DUMP, false },
};

struct args {
	const char *cmd;
	const char *pos[64];
	int npos;
	const char *val[O_NR];	/* NULL: not given; "" for a flag */
};

static const char *optname(enum opt_id id)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(optdefs); i++)
		if (optdefs[i].id == id)
			return optdefs[i].name;
	return "?";
}

static void parse_args(int argc, char **argv, struct args *a)
{
	bool dashdash = false;
	int i;

	memset(a, 0, sizeof(*a));
	for (i = 1; i < argc; i++) {
		const char *s = argv[i];
		const char *eq;
		size_t j, len;

		if (dashdash || s[0] != '-' || !s[1] ||
		    (s[1] >= '0' && s[1] <= '9')) {
			if (!a->cmd)
				a->cmd = s;
			else if (a->npos < (int)ARRAY_SIZE(a->pos))
				a->pos[a->npos++] = s;
			else
				usage_err("too many arguments");
			continue;
		}
		if (!strcmp(s, "--")) {
			dashdash = true;
			continue;
		}
		if (!strcmp(s, "-j") || !strcmp(s, "--json")) {
			opt_json = true;
			continue;
		}
		if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) {
			opt_verbose = true;
			continue;
		}
		if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
			usage(stdout);
			exit(0);
		}
		if (!strcmp(s, "-V") || !strcmp(s, "--version")) {
			printf("dqctl %s (dq ABI %d, genl version %d)\n",
			       DQCTL_VERSION, DQ_ABI_VERSION, DQ_GENL_VERSION);
			exit(0);
		}
		if (s[1] != '-')
			usage_err("unknown option '%s'", s);
		s += 2;
		eq = strchr(s, '=');
		len = eq ? (size_t)(eq - s) : strlen(s);
		for (j = 0; j < ARRAY_SIZE(optdefs); j++)
			if (strlen(optdefs[j].name) == len &&
			    !strncmp(optdefs[j].name, s, len))
				break;
		if (j == ARRAY_SIZE(optdefs))
			usage_err("unknown option '--%.*s'", (int)len, s);
		if (!optdefs[j].arg) {
			if (eq)
				usage_err("--%s takes no value", optdefs[j].name);
			a->val[optdefs[j].id] = "";
			continue;
		}
		if (eq) {
			a->val[optdefs[j].id] = eq + 1;
		} else {
			if (i + 1 >= argc)
				usage_err("--%s needs a value", optdefs[j].name);
			a->val[optdefs[j].id] = argv[++i];
		}
	}
}

/* Refuse options @cmd does not take: @allowed is a 0-terminated list. */
static void only_opts(const struct args *a, const enum opt_id *allowed)
{
	int id;

	for (id = 1; id < O_NR; id++) {
		const enum opt_id *p;

		if (!a->val[id])
			continue;
		for (p = allowed; *p; p++)
			if ((int)*p == id)
				break;
		if (!*p)
			usage_err("%s does not take --%s", a->cmd,
				  optname((enum opt_id)id));
	}
}

static void check_name(const char *name)
{
	if (!name[0])
		return;	/* the kernel says why an empty name is wrong */
	if (strlen(name) >= DQ_NAME_MAX)
		usage_err("queue name '%s' is too long (at most %d bytes)",
			  name, DQ_NAME_MAX - 1);
}

/*
 * The queue a command names: NAME or --id.  Fills @what ("show q") and
 * puts the attribute on @nlh.
 */
static void put_queue_ref(const struct args *a, struct nlmsghdr *nlh,
			  char *what, size_t len, const char *verb)
{
	if (a->val[O_ID] && a->npos)
		usage_err("%s: give NAME or --id, not both", a->cmd);
	if (a->val[O_ID]) {
		uint32_t id = parse_u32("--id", a->val[O_ID]);

		mnl_attr_put_u32(nlh, DQ_A_ID, id);
		snprintf(what, len, "%s queue id %" PRIu32, verb, id);
		return;
	}
	if (a->npos != 1)
		usage_err("%s needs one queue NAME (or --id N)", a->cmd);
	check_name(a->pos[0]);
	mnl_attr_put_strz(nlh, DQ_A_NAME, a->pos[0]);
	snprintf(what, len, "%s %s", verb, a->pos[0]);
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */

static int print_one_queue(struct nl *nl, struct queue_list *l, bool stats)
{
	(void)nl;
	if (!l->n)
		return 0;
	if (opt_json)
		json_open(NULL, false);
	if (opt_json || !stats)
		print_queue_fields(&l->q[0]);
	if (stats && (l->q[0].has_stats || !opt_json))
		print_stats_fields(&l->q[0]);
	if (opt_json)
		json_close();
	return 0;
}

static int cmd_create(struct nl *nl, const struct args *a)
{
	static const enum opt_id allowed[] = {
		O_SLOTS, O_SLOT_SIZE, O_SUBMIT_ENTRIES, O_READY_ENTRIES,
		O_NODE, O_GRANULARITY, O_MAX_PENDING, O_RATE, O_BURST,
		O_HIGH_WM, O_UID, O_GID, O_MODE, 0,
	};
	struct queue_list l = { .q = NULL };
	struct nlmsghdr *nlh;
	char what[64];
	int ret;

	only_opts(a, allowed);
	if (a->npos != 1)
		usage_err("create needs one queue NAME");
	if (!a->val[O_SLOTS] || !a->val[O_SLOT_SIZE])
		usage_err("create needs --slots N and --slot-size BYTES");
	check_name(a->pos[0]);
	snprintf(what, sizeof(what), "create %s", a->pos[0]);

	nlh = dq_req(nl, DQ_CMD_QUEUE_NEW, false);
	mnl_attr_put_strz(nlh, DQ_A_NAME, a->pos[0]);
	mnl_attr_put_u32(nlh, DQ_A_SLOTS, parse_u32("--slots", a->val[O_SLOTS]));
	mnl_attr_put_u32(nlh, DQ_A_SLOT_SIZE,
			 parse_u32("--slot-size", a->val[O_SLOT_SIZE]));
	if (a->val[O_SUBMIT_ENTRIES])
		mnl_attr_put_u32(nlh, DQ_A_SUBMIT_ENTRIES,
				 parse_u32("--submit-entries",
					   a->val[O_SUBMIT_ENTRIES]));
	if (a->val[O_READY_ENTRIES])
		mnl_attr_put_u32(nlh, DQ_A_READY_ENTRIES,
				 parse_u32("--ready-entries",
					   a->val[O_READY_ENTRIES]));
	if (a->val[O_NODE])
		mnl_attr_put_u32(nlh, DQ_A_NODE,
				 (uint32_t)parse_node("--node", a->val[O_NODE]));
	if (a->val[O_GRANULARITY]) {
		uint64_t g = parse_time("--granularity", a->val[O_GRANULARITY],
					NULL);

		if (g > UINT32_MAX)
			usage_err("--granularity: %s is too large",
				  a->val[O_GRANULARITY]);
		mnl_attr_put_u32(nlh, DQ_A_GRANULARITY_NS, (uint32_t)g);
	}
	if (a->val[O_MAX_PENDING])
		mnl_attr_put_u32(nlh, DQ_A_MAX_PENDING,
				 parse_u32("--max-pending",
					   a->val[O_MAX_PENDING]));
	/*
	 * The module applies BURST only together with RATE: a burst given
	 * alone goes with rate 0 (unpaced) so it is kept for a later rate.
	 */
	if (a->val[O_RATE] || a->val[O_BURST])
		mnl_attr_put_u64(nlh, DQ_A_RATE,
				 a->val[O_RATE] ?
				 parse_u64("--rate", a->val[O_RATE], UINT64_MAX) :
				 0);
	if (a->val[O_BURST])
		mnl_attr_put_u32(nlh, DQ_A_BURST,
				 parse_u32("--burst", a->val[O_BURST]));
	if (a->val[O_HIGH_WM])
		mnl_attr_put_u32(nlh, DQ_A_HIGH_WM,
				 parse_u32("--high-wm", a->val[O_HIGH_WM]));
	if (a->val[O_UID])
		mnl_attr_put_u32(nlh, DQ_A_UID, parse_uid("--uid", a->val[O_UID]));
	if (a->val[O_GID])
		mnl_attr_put_u32(nlh, DQ_A_GID, parse_gid("--gid", a->val[O_GID]));
	if (a->val[O_MODE])
		mnl_attr_put_u32(nlh, DQ_A_MODE,
				 parse_mode("--mode", a->val[O_MODE]));

	ret = nl_talk_r(nl, queue_list_cb, &l.r);
	if (ret < 0)
		ret = nl_fail(nl, what, "creating queues");
	else
		ret = print_one_queue(nl, &l, false);
	free(l.q);
	return ret;
}

static int cmd_delete(struct nl *nl, const struct args *a)
{
	static const enum opt_id allowed[] = { O_FORCE, O_ID, 0 };
	struct queue_list l = { .q = NULL };
	struct nlmsghdr *nlh;
	char what[80];
	int ret;

	only_opts(a, allowed);
	nlh = dq_req(nl, DQ_CMD_QUEUE_DEL, false);
	put_queue_ref(a, nlh, what, sizeof(what), "delete");
	if (a->val[O_FORCE])
		mnl_attr_put(nlh, DQ_A_FORCE, 0, NULL);
	ret = nl_talk_r(nl, queue_list_cb, &l.r);
	free(l.q);
	if (ret < 0) {
		ret = nl_fail(nl, what, "deleting queues");
		if (nl->err.error == EBUSY && !a->val[O_FORCE])
			fprintf(stderr,
				"dqctl: (delete --force drops the pending messages)\n");
		return ret;
	}
	return 0;
}

static int cmd_show(struct nl *nl, const struct args *a, bool stats)
{
	static const enum opt_id allowed[] = { O_ID, 0 };
	struct queue_list l = { .q = NULL };
	struct nlmsghdr *nlh;
	char what[80];
	int ret;

	only_opts(a, allowed);
	nlh = dq_req(nl, stats ? DQ_CMD_STATS : DQ_CMD_QUEUE_GET, false);
	put_queue_ref(a, nlh, what, sizeof(what), stats ? "stats" : "show");
	ret = nl_talk_r(nl, queue_list_cb, &l.r);
	if (ret < 0)
		ret = nl_fail(nl, what, NULL);
	else
		ret = print_one_queue(nl, &l, stats);
	free(l.q);
	return ret;
}

static int qinfo_cmp(const void *x, const void *y)
{
	const struct qinfo *a = x, *b = y;

	return a->v[DQ_A_ID] < b->v[DQ_A_ID] ? -1 : a->v[DQ_A_ID] > b->v[DQ_A_ID];
}

/*
 * A dump of every queue: the JSON array of objects, or a table with one
 * row per queue, sorted by id.  list and stats differ only in this.
 */
struct queue_view {
	const char *what;	/* the command, for its errors */
	uint8_t cmd;		/* DQ_CMD_QUEUE_GET or DQ_CMD_STATS */
	bool stats;		/* JSON: with the stats object */
	const char *columns;	/* table_init()'s spec */
	void (*row)(struct table *t, const struct qinfo *q);
};

static void print_queues(const struct queue_view *v, const struct qinfo *qs,
			 size_t n)
{
	struct table t;
	size_t i;

	if (opt_json) {
		json_open(NULL, true);
		for (i = 0; i < n; i++) {
			json_open(NULL, false);
			print_queue_fields(&qs[i]);
			if (v->stats)
				print_stats_fields(&qs[i]);
			json_close();
		}
		json_close();
		return;
	}
	table_init(&t, v->columns);
	for (i = 0; i < n; i++)
		v->row(&t, &qs[i]);
	table_print(&t);
}

static int dump_queues(struct nl *nl, const struct queue_view *v)
{
	struct queue_list l = { .q = NULL };
	int ret;

	dq_req(nl, v->cmd, true);
	ret = nl_talk_r(nl, queue_list_cb, &l.r);
	if (ret < 0) {
		ret = nl_fail(nl, v->what, NULL);
		free(l.q);
		return ret;
	}
	qsort(l.q, l.n, sizeof(*l.q), qinfo_cmp);
	print_queues(v, l.q, l.n);
	free(l.q);
	return 0;
}

/* The ID, NAME and NODE columns every queue table starts with. */
static void row_queue_ref(struct table *t, const struct qinfo *q)
{
	table_cell(t, "%" PRIu64, q->v[DQ_A_ID]);
	table_cell(t, "%s", q->has[DQ_A_NAME] ? q->disp : "-");
	table_cell(t, "%" PRId64, (int64_t)q->v[DQ_A_NODE]);
}

static void list_row(struct table *t, const struct qinfo *q)
{
	char u[32], g[32];

	row_queue_ref(t, q);
	table_cell(t, "%" PRIu64, q->v[DQ_A_SLOTS]);
	table_cell(t, "%" PRIu64, q->v[DQ_A_SLOT_SIZE]);
	if (q->v[DQ_A_RATE])
		table_cell(t, "%" PRIu64 "/s", q->v[DQ_A_RATE]);
	else
		table_cell(t, "off");
	table_cell(t, "%" PRIu64, q->v[DQ_A_BURST]);
	table_cell(t, "%" PRIu64, q->v[DQ_A_MAX_PENDING]);
	if (q->v[DQ_A_HIGH_WM])
		table_cell(t, "%" PRIu64, q->v[DQ_A_HIGH_WM]);
	else
		table_cell(t, "off");
	table_cell(t, "%s:%s", fmt_user(u, sizeof(u), (uint32_t)q->v[DQ_A_UID]),
		   fmt_group(g, sizeof(g), (uint32_t)q->v[DQ_A_GID]));
	table_cell(t, "%04" PRIo64, q->v[DQ_A_MODE]);
	table_cell(t, "%" PRIu64, q->v[DQ_A_USERS]);
}

static const struct queue_view list_view = {
	.what = "list",
	.cmd = DQ_CMD_QUEUE_GET,
	.columns = ">ID <NAME >NODE >SLOTS >SLOT_SIZE >RATE >BURST "
		   ">MAX_PENDING >HIGH_WM <OWNER >MODE >USERS",
	.row = list_row,
};

static int cmd_list(struct nl *nl, const struct args *a)
{
	static const enum opt_id allowed[] = { 0 };

	only_opts(a, allowed);
	if (a->npos)
		usage_err("list takes no arguments");
	return dump_queues(nl, &list_view);
}

static int cmd_set(struct nl *nl, const struct args *a)
{
	static const enum opt_id allowed[] = {
		O_RATE, O_BURST, O_MAX_PENDING, O_HIGH_WM, O_ID, 0,
	};
	struct queue_list l = { .q = NULL };
	struct nlmsghdr *nlh;
	char what[80];
	int ret;

	only_opts(a, allowed);
	if (!a->val[O_RATE] && !a->val[O_BURST] && !a->val[O_MAX_PENDING] &&
	    !a->val[O_HIGH_WM])
		usage_err("set needs one of --rate, --burst, --max-pending, --high-wm");
	nlh = dq_req(nl, DQ_CMD_QUEUE_SET, false);
	put_queue_ref(a, nlh, what, sizeof(what), "set");
	if (a->val[O_RATE])
		mnl_attr_put_u64(nlh, DQ_A_RATE,
				 parse_u64("--rate", a->val[O_RATE], UINT64_MAX));
	if (a->val[O_BURST])
		mnl_attr_put_u32(nlh, DQ_A_BURST,
				 parse_u32("--burst", a->val[O_BURST]));
	if (a->val[O_MAX_PENDING])
		mnl_attr_put_u32(nlh, DQ_A_MAX_PENDING,
				 parse_u32("--max-pending", a->val[O_MAX_PENDING]));
	if (a->val[O_HIGH_WM])
		mnl_attr_put_u32(nlh, DQ_A_HIGH_WM,
				 parse_u32("--high-wm", a->val[O_HIGH_WM]));
	ret = nl_talk_r(nl, queue_list_cb, &l.r);
	if (ret < 0)
		ret = nl_fail(nl, what, "changing queues");
	else
		ret = print_one_queue(nl, &l, false);
	free(l.q);
	return ret;
}

static int cmd_node_stats(struct nl *nl, const struct args *a)
{
	struct queue_list l = { .q = NULL };
	struct nlmsghdr *nlh;
	int32_t node = parse_node("--node", a->val[O_NODE]);
	char what[48];
	int ret;

	if (a->npos || a->val[O_ID])
		usage_err("stats: give NAME, --id or --node, one of them");
	snprintf(what, sizeof(what), "stats of node %" PRId32, node);
	nlh = dq_req(nl, DQ_CMD_STATS, false);
	mnl_attr_put_u32(nlh, DQ_A_NODE, (uint32_t)node);
	ret = nl_talk_r(nl, queue_list_cb, &l.r);
	if (ret < 0) {
		ret = nl_fail(nl, what, NULL);
	} else if (l.n) {
		const struct qinfo *q = &l.q[0];

		if (opt_json)
			json_open(NULL, false);
		out_s64("node", "node %" PRId64, node);
		out_u64("pending", "  pending %" PRIu64, q->st[DQ_STATS_PENDING]);
		out_u64("released", "  released %" PRIu64,
			q->st[DQ_STATS_RELEASED]);
		out_u64("timer_fires", "  timer fires %" PRIu64 "\n",
			q->st[DQ_STATS_TIMER_FIRES]);
		if (opt_json)
			json_close();
	}
	free(l.q);
	return ret;
}

static void stats_row(struct table *t, const struct qinfo *q)
{
	char b1[32], b2[32];

	row_queue_ref(t, q);
	table_cell(t, "%" PRIu64, q->st[DQ_STATS_PENDING]);
	table_cell(t, "%" PRIu64, q->st[DQ_STATS_PACED]);
	table_cell(t, "%" PRIu64, q->st[DQ_STATS_READY_BACKLOG]);
	table_cell(t, "%" PRIu64, q->st[DQ_STATS_SUBMITTED]);
	table_cell(t, "%" PRIu64, q->st[DQ_STATS_RELEASED]);
	table_cell(t, "%" PRIu64, q->st[DQ_STATS_CANCELLED]);
	table_cell(t, "%" PRIu64, rej_total(q));
	table_cell(t, "%s", fmt_ns(b1, sizeof(b1), q->st[DQ_STATS_LATE_EWMA_NS]));
	table_cell(t, "%s", fmt_ns(b2, sizeof(b2), q->st[DQ_STATS_LATE_MAX_NS]));
	table_cell(t, "%" PRIu64, q->st[DQ_STATS_TIMER_FIRES]);
}

static const struct queue_view stats_view = {
	.what = "stats",
	.cmd = DQ_CMD_STATS,
	.stats = true,
	.columns = ">ID <NAME >NODE >PENDING >PACED >BACKLOG >SUBMITTED "
		   ">RELEASED >CANCELLED >REJECTED >LATE_EWMA >LATE_MAX "
		   ">TIMER_FIRES",
	.row = stats_row,
};

static int cmd_stats(struct nl *nl, const struct args *a)
{
	static const enum opt_id allowed[] = { O_ID, O_NODE, 0 };

	only_opts(a, allowed);
	if (a->val[O_NODE])
		return cmd_node_stats(nl, a);
	if (a->npos || a->val[O_ID])
		return cmd_show(nl, a, true);
	return dump_queues(nl, &stats_view);
}

/* ---- monitor --------------------------------------------------------- */

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct monitor {
	struct reply r;
	uint64_t seen;
};

static int monitor_cb(const struct nlmsghdr *nlh, void *data)
{
	struct monitor *m = data;
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);
	struct qinfo q;
	const char *kind = "unknown";
	uint32_t k;
	struct timespec ts;
	struct tm tm;
	char tbuf[32];

	if (nlh->nlmsg_type != m->r.nl->family ||
	    mnl_nlmsg_get_payload_len(nlh) < sizeof(*g) ||
	    g->cmd != DQ_CMD_EVENT)
		return MNL_CB_OK;
	memset(&q, 0, sizeof(q));
	mnl_attr_parse(nlh, sizeof(*g), parse_queue_cb, &q);
	k = (uint32_t)q.v[DQ_A_EVENT_KIND];
	if (k < ARRAY_SIZE(event_names) && event_names[k])
		kind = event_names[k];
	clock_gettime(CLOCK_REALTIME, &ts);

	if (opt_json) {
		json_open(NULL, false);
		json_str("event", kind);
		if (!strcmp(kind, "unknown"))
			json_u64("kind", k);
		print_queue_fields(&q);
		json_key("time");
		printf("%lld.%06ld", (long long)ts.tv_sec, ts.tv_nsec / 1000);
		json_close();
	} else {
		localtime_r(&ts.tv_sec, &tm);
		strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
		printf("%s.%03ld  %-8s %s (id %" PRIu64 ")", tbuf,
		       ts.tv_nsec / 1000000, kind,
		       q.has[DQ_A_NAME] ? q.disp : "-", q.v[DQ_A_ID]);
		switch (k) {
		case DQ_EVENT_HIGH_WM:
			printf("  pending reached the high watermark %" PRIu64,
			       q.v[DQ_A_HIGH_WM]);
			break;
		case DQ_EVENT_FULL:
			printf("  a submit hit max pending %" PRIu64,
			       q.v[DQ_A_MAX_PENDING]);
			break;
		case DQ_EVENT_DELETED:
			printf("  deleted");
			break;
		default:
			printf("  kind %" PRIu32, k);
		}
		putchar('\n');
	}
	fflush(stdout);
	m->seen++;
	return MNL_CB_OK;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmd_monitor(struct nl *nl, const struct args *a)
{
	static const enum opt_id allowed[] = { O_COUNT, O_TIMEOUT, 0 };
	struct monitor m = { .r.nl = nl };
	struct sigaction sa;
	uint64_t count = 0, deadline = 0;
	uint32_t grp;
	int ret;

	only_opts(a, allowed);
	if (a->npos)
		usage_err("monitor takes no arguments");
	if (a->val[O_COUNT])
		count = parse_u64("--count", a->val[O_COUNT], UINT64_MAX);
	if (a->val[O_TIMEOUT])
		deadline = mono_ns() + parse_time("--timeout", a->val[O_TIMEOUT],
						  "s");
	ret = nl_open(nl);
	if (ret)
		return ret;
	grp = nl->mcgrp_events;
	if (!grp) {
		warnx("monitor: the dq family has no '%s' multicast group",
		      DQ_GENL_MCGRP_EVENTS);
		return EXIT_KERNEL;
	}
	if (mnl_socket_setsockopt(nl->sk, NETLINK_ADD_MEMBERSHIP, &grp,
				  sizeof(grp)) < 0) {
		warnx("monitor: cannot join the '%s' group: %s",
		      DQ_GENL_MCGRP_EVENTS, strerror(errno));
		return EXIT_KERNEL;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: poll returns EINTR */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	if (opt_verbose)
		warnx("monitoring dq events (group %s, id %" PRIu32 ")",
		      DQ_GENL_MCGRP_EVENTS, grp);

	while (!stop_signal && (!count || m.seen < count)) {
		struct pollfd pfd = { .fd = mnl_socket_get_fd(nl->sk),
				      .events = POLLIN };
		int timeout = -1, r;
		ssize_t n;

		if (deadline) {
			uint64_t now = mono_ns();

			if (now >= deadline)
				break;
			timeout = (int)((deadline - now + 999999) / 1000000);
		}
		r = poll(&pfd, 1, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			warnx("monitor: poll: %s", strerror(errno));
			return EXIT_KERNEL;
		}
		if (r == 0)
			continue;
		n = mnl_socket_recvfrom(nl->sk, nl->rx, sizeof(nl->rx));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ENOBUFS) {
				warnx("monitor: events were lost (socket buffer overrun)");
				continue;
			}
			warnx("monitor: %s", strerror(errno));
			return EXIT_KERNEL;
		}
		/* count may stop us halfway through a batch: fine. */
		if (mnl_cb_run2(nl->rx, (size_t)n, 0, 0, monitor_cb, &m,
				ctl_cbs_r, NLMSG_MIN_TYPE) < 0 &&
		    nl->err.error) {
			return nl_fail(nl, "monitor", NULL);
		}
	}
	return 0;
}

/* ---- raw: a debugging aid that sends any request ---------------------- */

static int raw_print_attrs(const struct nlattr *nest, const void *buf,
			   size_t len, int depth);

static void raw_print_one(const struct nlattr *a, int depth, bool top)
{
	unsigned int t = mnl_attr_get_type(a);
	uint16_t plen = mnl_attr_get_payload_len(a);
	const unsigned char *p = mnl_attr_get_payload(a);
	const char *n = NULL;
	uint16_t i;

	if (top)
		n = attr_name(t);
	else if (depth == 1 && t <= DQ_STATS_MAX)
		n = stats_names[t];
	printf("%*s%u%s%s%s len %u:", depth * 2, "", t, n ? " (" : "",
	       n ? n : "", n ? ")" : "", plen);
	if (a->nla_type & NLA_F_NESTED) {
		printf(" nested\n");
		raw_print_attrs(a, NULL, 0, depth + 1);
		return;
	}
	if (plen == 4)
		printf(" u32 %" PRIu32, mnl_attr_get_u32(a));
	else if (plen == 8)
		printf(" u64 %" PRIu64, mnl_attr_get_u64(a));
	if (plen && p[plen - 1] == '\0' && plen > 1) {
		bool text = true;

		for (i = 0; i + 1 < plen; i++)
			if (p[i] < 0x20 || p[i] > 0x7e)
				text = false;
		if (text)
			printf(" str \"%s\"", (const char *)p);
	}
	printf(" [");
	for (i = 0; i < plen && i < 32; i++)
		printf("%s%02x", i ? " " : "", p[i]);
	printf("%s]\n", plen > 32 ? " ..." : "");
}

static int raw_print_attrs(const struct nlattr *nest, const void *buf,
			   size_t len, int depth)
{
	const struct nlattr *attr;

	if (nest) {
		mnl_attr_for_each_nested(attr, nest)
			raw_print_one(attr, depth, false);
	} else {
		mnl_attr_for_each_payload(buf, len)
			raw_print_one(attr, depth, true);
	}
	return 0;
}

static int raw_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct genlmsghdr *g = mnl_nlmsg_get_payload(nlh);

	(void)data;
	if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*g))
		return MNL_CB_OK;
	printf("reply cmd %u version %u\n", g->cmd, g->version);
	raw_print_attrs(NULL, (const char *)g + sizeof(*g),
			mnl_nlmsg_get_payload_len(nlh) - sizeof(*g), 1);
	return MNL_CB_OK;
}

static int raw_cmd(const char *s)
{
	static const struct { const char *n; int c; } cmds[] = {
		{ "new", DQ_CMD_QUEUE_NEW }, { "del", DQ_CMD_QUEUE_DEL },
		{ "get", DQ_CMD_QUEUE_GET }, { "set", DQ_CMD_QUEUE_SET },
		{ "stats", DQ_CMD_STATS }, { "event", DQ_CMD_EVENT },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		if (!strcmp(s, cmds[i].n))
			return cmds[i].c;
	return (int)parse_u64("raw: command", s, 255);
}

static unsigned int raw_attr_type(const char *s, size_t len)
{
	unsigned int t;

	for (t = 1; t <= DQ_A_MAX; t++) {
		const char *n = attr_name(t);
		size_t j;

		if (!n || strlen(n) != len)
			continue;
		for (j = 0; j < len; j++)
			if (n[j] != s[j] && !(n[j] == '-' && s[j] == '_'))
				break;
		if (j == len)
			return t;
	}
	if (len && s[0] >= '0' && s[0] <= '9') {
		char tmp[16];

		snprintf(tmp, sizeof(tmp), "%.*s", (int)len, s);
		return (unsigned int)parse_u64("raw: attribute", tmp, 0x3fff);
	}
	usage_err("raw: unknown attribute '%.*s'", (int)len, s);
}

/*
 * dqctl raw [--dump] CMD [ATTR[:TYPE]=VALUE | ATTR:flag]...
 * TYPE: u8 u16 u32 s32 u64 str (NUL-terminated) bytes (no NUL) hex flag;
 * the default is the attribute's own type.
 */
static int cmd_raw(struct nl *nl, const struct args *a)
{
	static const enum opt_id allowed[] = { O_DUMP, 0 };
	struct reply r;
	struct nlmsghdr *nlh;
	int i, cmd;

	only_opts(a, allowed);
	if (!a->npos)
		usage_err("raw needs a command: new del get set stats or a number");
	cmd = raw_cmd(a->pos[0]);
	nlh = genl_req(nl->req, 0, a->val[O_DUMP] ? NLM_F_DUMP : NLM_F_ACK,
		       (uint8_t)cmd, DQ_GENL_VERSION);
	for (i = 1; i < a->npos; i++) {
		const char *s = a->pos[i], *eq = strchr(s, '='), *colon;
		const char *type = NULL, *val = eq ? eq + 1 : "";
		size_t nlen;
		unsigned int t;
		char tbuf[16] = "";

		colon = strchr(s, ':');
		if (colon && eq && colon > eq)
			colon = NULL;
		nlen = colon ? (size_t)(colon - s) : eq ? (size_t)(eq - s) : strlen(s);
		t = raw_attr_type(s, nlen);
		if (colon) {
			size_t tl = eq ? (size_t)(eq - colon - 1) : strlen(colon + 1);

			snprintf(tbuf, sizeof(tbuf), "%.*s", (int)tl, colon + 1);
			type = tbuf;
		} else if (t <= DQ_A_MAX) {
			static const char *const kinds[] = {
				[K_NONE] = "bytes", [K_U32] = "u32",
				[K_S32] = "s32", [K_U64] = "u64",
				[K_STR] = "str", [K_FLAG] = "flag",
				[K_NEST] = "bytes",
			};
			type = kinds[attr_info[t].kind];
		} else {
			type = "u32";
		}
		if (!strcmp(type, "u8")) {
			mnl_attr_put_u8(nlh, (uint16_t)t,
					(uint8_t)parse_u64("raw", val, UINT8_MAX));
		} else if (!strcmp(type, "u16")) {
			mnl_attr_put_u16(nlh, (uint16_t)t,
					 (uint16_t)parse_u64("raw", val, UINT16_MAX));
		} else if (!strcmp(type, "u32")) {
			mnl_attr_put_u32(nlh, (uint16_t)t, parse_u32("raw", val));
		} else if (!strcmp(type, "s32")) {
			char *end;
			long v = strtol(val, &end, 0);

			if (!*val || *end || v < INT32_MIN || v > INT32_MAX)
				usage_err("raw: '%s' is not an s32", val);
			mnl_attr_put_u32(nlh, (uint16_t)t, (uint32_t)(int32_t)v);
		} else if (!strcmp(type, "u64")) {
			mnl_attr_put_u64(nlh, (uint16_t)t,
					 parse_u64("raw", val, UINT64_MAX));
		} else if (!strcmp(type, "str")) {
			mnl_attr_put_strz(nlh, (uint16_t)t, val);
		} else if (!strcmp(type, "bytes")) {
			mnl_attr_put(nlh, (uint16_t)t, strlen(val), val);
		} else if (!strcmp(type, "flag")) {
			mnl_attr_put(nlh, (uint16_t)t, 0, NULL);
		} else if (!strcmp(type, "hex")) {
			unsigned char b[256];
			size_t n = 0;

			while (val[0] && val[1] && n < sizeof(b)) {
				unsigned int x;

				if (sscanf(val, "%2x", &x) != 1)
					usage_err("raw: bad hex '%s'", val);
				b[n++] = (unsigned char)x;
				val += 2;
			}
			mnl_attr_put(nlh, (uint16_t)t, n, b);
		} else {
			usage_err("raw: unknown type '%s' (u8 u16 u32 s32 u64 str bytes hex flag)",
				  type);
		}
	}
	if (nl_talk_r(nl, raw_cb, &r) < 0)
		return nl_fail(nl, "raw", NULL);
	return 0;
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	struct nl *nl;
	struct args a;
	int ret;

	parse_args(argc, argv, &a);
	if (!a.cmd) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(a.cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (strcmp(a.cmd, "create") && strcmp(a.cmd, "delete") &&
	    strcmp(a.cmd, "list") && strcmp(a.cmd, "show") &&
	    strcmp(a.cmd, "set") && strcmp(a.cmd, "stats") &&
	    strcmp(a.cmd, "monitor") && strcmp(a.cmd, "raw"))
		usage_err("unknown command '%s'", a.cmd);

	nl = calloc(1, sizeof(*nl));
	if (!nl) {
		warnx("out of memory");
		return EXIT_KERNEL;
	}
	if (!strcmp(a.cmd, "create"))
		ret = cmd_create(nl, &a);
	else if (!strcmp(a.cmd, "delete"))
		ret = cmd_delete(nl, &a);
	else if (!strcmp(a.cmd, "list"))
		ret = cmd_list(nl, &a);
	else if (!strcmp(a.cmd, "show"))
		ret = cmd_show(nl, &a, false);
	else if (!strcmp(a.cmd, "set"))
		ret = cmd_set(nl, &a);
	else if (!strcmp(a.cmd, "stats"))
		ret = cmd_stats(nl, &a);
	else if (!strcmp(a.cmd, "monitor"))
		ret = cmd_monitor(nl, &a);
	else
		ret = cmd_raw(nl, &a);
	if (fflush(stdout) || ferror(stdout)) {
		if (!ret && errno != EPIPE) {
			warnx("writing the output: %s", strerror(errno));
			ret = EXIT_KERNEL;
		}
	}
	if (nl->sk)
		mnl_socket_close(nl->sk);
	free(nl);
	return ret;
}
