// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl's command line (args.h): options and their values; the messages
 * of dqctl (warnx, usage_err).
 */
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <linux/dq.h>

#include "args.h"
#include "dqctl.h"

/*
 * The exit status of a usage error: 2 once the command is `journal`,
 * whose verify answers 1 for "findings" (as diff and cmp do).
 */
static int usage_status = EXIT_USAGE;

void warnx(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("dqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

_Noreturn void usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs("dqctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'dqctl --help'.\n", stderr);
	exit(usage_status);
}

void usage(FILE *f)
{
	fputs(
"usage: dqctl [--json] [-v] COMMAND [ARGS]\n"
"\n"
"  create NAME --slots N --slot-size BYTES [--submit-entries N]\n"
"         [--ready-entries N] [--node N] [--granularity TIME]\n"
"         [--max-pending N] [--rate MSGS_PER_S] [--burst N] [--high-wm N]\n"
"         [--uid USER] [--gid GROUP] [--mode OCTAL]\n"
"         [--track [--inflight N|none] [--visibility TIME]] [--keys]\n"
"  delete NAME [--force]          refuses while messages are pending\n"
"  list                           every named queue\n"
"  show NAME                      one queue's settings\n"
"  set NAME [--rate R] [--burst N] [--max-pending N] [--high-wm N]\n"
"         [--inflight N|none]\n"
"  stats [NAME | --node N]        counters of one queue, of every queue,\n"
"                                 or of one node's release engine\n"
"  monitor [--count N] [--timeout TIME]\n"
"                                 print queue events until interrupted\n"
"  journal verify DIR             check a durable queue's journal (read only)\n"
"  journal inspect DIR [--records]\n"
"                                 its segments, records and live messages\n"
"  journal stats DIR              a named durable queue's journal as its\n"
"                                 processes share it now (DIR/STATE)\n"
"\n"
"  A queue may be named by --id N instead of NAME (show, stats, set, delete).\n"
"  TIME takes a unit: 50us, 2ms, 1.5s, 5m (ns, us, ms, s, m, h); counts are\n"
"  plain integers; --rate 0 means unpaced.  --track: a released message\n"
"  stays in flight until its consumer says it is done; --inflight caps the\n"
"  messages in flight (1 or more; none: no cap); --visibility puts a\n"
"  message in flight that long without done back for redelivery (1ms or\n"
"  more).  --keys: a message may carry an application key (its user_data),\n"
"  unique among the queue's messages; a keyed submit may replace the\n"
"  message holding its key.  --json prints JSON (one object per line for\n"
"  monitor).\n"
"\n"
"Exit status: 0 ok, 1 usage error, 2 the kernel refused or failed;\n"
"journal: 0 clean, 1 findings, 2 usage or I/O error.\n",
	      f);
}


uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
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

uint32_t parse_u32(const char *opt, const char *s)
{
	return (uint32_t)parse_u64(opt, s, UINT32_MAX);
}

int32_t parse_node(const char *opt, const char *s)
{
	if (!strcmp(s, "-1") || !strcmp(s, "any"))
		return -1;
	return (int32_t)parse_u64(opt, s, INT32_MAX);
}

/* A time with a unit (ns, us, ms, s, m, h; a fraction is fine), in ns. */
uint64_t parse_time(const char *opt, const char *s, const char *bare)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 },
		{ "s", 1000000000 }, { "sec", 1000000000 },
		{ "m", 60000000000 }, { "h", 3600000000000 },
	};
	uint64_t ip = 0, fp = 0, fscale = 1, mult = 0, frac;
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
			usage_err("%s: '%s' needs a unit: ns, us, ms, s, m or h", opt,
				  s);
		}
		p = bare;
	}
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(p, units[i].unit))
			mult = units[i].ns;
	if (!mult)
		usage_err("%s: '%s': unknown unit (use ns, us, ms, s, m or h)", opt, s);
	/*
	 * fp < fscale <= 10^9: fp * mult fits while mult < 10^10 (ns .. s);
	 * m and h are whole multiples of any fscale.
	 */
	frac = mult % fscale ? fp * mult / fscale : fp * (mult / fscale);
	if (ip > (UINT64_MAX - frac) / mult)
		usage_err("%s: '%s' is too large", opt, s);
	return ip * mult + frac;
}

uint32_t parse_mode(const char *opt, const char *s)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 8);
	if (!*s || *end || errno || v > 0777 || *s == '-')
		usage_err("%s: '%s' is not an octal mode (e.g. 0660)", opt, s);
	return (uint32_t)v;
}

static int64_t uid_of(const char *name)
{
	struct passwd *pw = getpwnam(name);

	return pw ? (int64_t)pw->pw_uid : -1;
}

static int64_t gid_of(const char *name)
{
	struct group *gr = getgrnam(name);

	return gr ? (int64_t)gr->gr_gid : -1;
}

/* A number, or the name of a @what that @lookup finds. */
static uint32_t parse_id(const char *opt, const char *s, const char *what,
			 int64_t (*lookup)(const char *name))
{
	int64_t id;

	if (*s >= '0' && *s <= '9')
		return parse_u32(opt, s);
	id = lookup(s);
	if (id < 0)
		usage_err("%s: no %s '%s'", opt, what, s);
	return (uint32_t)id;
}

uint32_t parse_uid(const char *opt, const char *s)
{
	return parse_id(opt, s, "user", uid_of);
}

uint32_t parse_gid(const char *opt, const char *s)
{
	return parse_id(opt, s, "group", gid_of);
}

uint32_t parse_inflight(const char *opt, const char *s)
{
	uint32_t v;

	if (!strcmp(s, "none"))
		return DQ_MAX_SLOTS;
	v = parse_u32(opt, s);
	if (!v)
		usage_err("%s: a cap of 0 would stop every release (none: no cap)",
			  opt);
	return v;
}

/* Every long option; which command takes which: only_opts(). */
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
	{ "track", O_TRACK, false },
	{ "inflight", O_INFLIGHT, true },
	{ "keys", O_KEYS, false },
	{ "visibility", O_VISIBILITY, true },
	{ "records", O_RECORDS, false },
};


static const char *optname(enum opt_id id)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(optdefs); i++)
		if (optdefs[i].id == id)
			return optdefs[i].name;
	return "?";
}

void parse_args(int argc, char **argv, struct args *a)
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
			if (!a->cmd) {
				a->cmd = s;
				if (!strcmp(s, "journal"))
					usage_status = EXIT_KERNEL;
			}
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
			a->json = true;
			continue;
		}
		if (!strcmp(s, "-v") || !strcmp(s, "--verbose")) {
			a->verbose = true;
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
void only_opts(const struct args *a, const enum opt_id *allowed)
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

void check_name(const char *name)
{
	if (!name[0])
		return;	/* the kernel says why an empty name is wrong */
	if (strlen(name) >= DQ_NAME_MAX)
		usage_err("queue name '%s' is too long (at most %d bytes)",
			  name, DQ_NAME_MAX - 1);
}

