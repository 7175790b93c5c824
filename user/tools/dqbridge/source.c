// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqbridge: the table of sources (source.h).  A source built only when
 * its library is there (Kafka) is listed under its HAVE_ macro, which
 * dqbridge.mk defines.
 */
#include <stdlib.h>
#include <string.h>

#include "source.h"

extern const struct source_ops redis_source_ops;
#ifdef HAVE_KAFKA
extern const struct source_ops kafka_source_ops;
#endif

static const struct source_ops *const sources[] = {
	&redis_source_ops,
#ifdef HAVE_KAFKA
	&kafka_source_ops,
#endif
};

const struct source_ops *source_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (!strcmp(sources[i]->name, name))
			return sources[i];
	return NULL;
}

void src_msg_free(struct src_msg *m)
{
	free(m->id);
	free(m->body);
	m->id = NULL;
	m->body = NULL;
	m->len = 0;
}
