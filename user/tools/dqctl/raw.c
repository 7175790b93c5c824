// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl raw: a debugging aid that sends any request of the dq family and
 * prints the replies attribute by attribute (text only).  The tests use
 * it to build malformed requests.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/genetlink.h>

#include <linux/dq.h>

#include "args.h"
#include "attrs.h"
#include "dqctl.h"
#include "nl.h"

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
int cmd_raw(struct nl *nl, const struct args *a, struct pr *pr)
{
	static const enum opt_id allowed[] = { O_DUMP, 0 };
	struct nlmsghdr *nlh;
	int i, cmd;

	(void)pr;
	only_opts(a, allowed);
	if (!a->npos)
		usage_err("raw needs a command: new del get set stats or a number");
	cmd = raw_cmd(a->pos[0]);
	nlh = nl_req(nl, (uint8_t)cmd, a->val[O_DUMP] != NULL);
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
	if (nl_talk(nl, raw_cb, NULL) < 0)
		return nl_fail(nl, "raw", NULL, a->verbose);
	return 0;
}
