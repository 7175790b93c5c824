// SPDX-License-Identifier: LGPL-2.1 OR MIT
/* dqctl: values as people read them (fmt.h). */
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>

#include "dqctl.h"
#include "fmt.h"

/* 50000 -> "50us", 1500000 -> "1.5ms", 0 -> "0". */
const char *fmt_ns(char *buf, size_t len, uint64_t ns)
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

const char *fmt_bytes(char *buf, size_t len, uint64_t b)
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

/* A user's or group's name, or its number when it has none. */
static const char *fmt_id(char *buf, size_t len, const char *name, uint32_t id)
{
	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%" PRIu32, id);
	return buf;
}

const char *fmt_user(char *buf, size_t len, uint32_t uid)
{
	struct passwd *pw = getpwuid(uid);

	return fmt_id(buf, len, pw ? pw->pw_name : NULL, uid);
}

const char *fmt_group(char *buf, size_t len, uint32_t gid)
{
	struct group *gr = getgrgid(gid);

	return fmt_id(buf, len, gr ? gr->gr_name : NULL, gid);
}

/* A queue name fit for a terminal: control characters become '?'. */
const char *safe_name(char *buf, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}
