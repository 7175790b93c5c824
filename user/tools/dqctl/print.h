/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * dqctl's output layer, iproute2's idea: every field is emitted once, by
 * one call that carries both renderings.  In JSON mode the call adds
 * KEY: value to the open object (nothing when KEY is NULL: a text-only
 * piece); in text mode it prints FMT with the value (nothing when FMT is
 * NULL: a JSON-only field).  So text and JSON cannot drift apart and list
 * the fields in the same order.  JSON documents are built with json-c and
 * written when their outermost object closes.
 *
 * Tables (text only) are described by their columns, struct pr_col.
 */
#ifndef DQCTL_PRINT_H
#define DQCTL_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

#define PR_MAX_DEPTH	8

struct pr {
	bool json;
	FILE *f;
	int depth;				/* open JSON objects */
	struct json_object *stack[PR_MAX_DEPTH];
	bool array;				/* a top-level array is open */
	size_t nelem;				/* its elements so far */
};

void pr_init(struct pr *pr, FILE *f, bool json);

/* A JSON object, as member @key of the open one (NULL: top level). */
void pr_open(struct pr *pr, const char *key);
void pr_close(struct pr *pr);
/*
 * A JSON array as member @key of the open object; pr_open(pr, NULL)
 * inside it adds an element.  pr_close() ends it.
 */
void pr_list_open(struct pr *pr, const char *key);
/* A top-level JSON array: "[", one element per line, "]". */
void pr_array_open(struct pr *pr);
void pr_array_close(struct pr *pr);

void pr_u64(struct pr *pr, const char *key, const char *fmt, uint64_t v);
void pr_s64(struct pr *pr, const char *key, const char *fmt, int64_t v);
void pr_str(struct pr *pr, const char *key, const char *fmt, const char *s);
/* A JSON boolean; in text FMT takes "yes" or "no". */
void pr_bool(struct pr *pr, const char *key, const char *fmt, bool v);
/* A number in JSON, a string in text (a unit, "off", a user name). */
void pr_u64_as(struct pr *pr, const char *key, uint64_t v, const char *fmt,
	       const char *text);
/* A string whose JSON and text spellings differ (a raw and a safe name). */
void pr_str_as(struct pr *pr, const char *key, const char *json,
	       const char *fmt, const char *text);
/* A JSON number written as @num says ("1796223845.678901"). */
void pr_num(struct pr *pr, const char *key, const char *num);
/* Text only. */
void pr_text(struct pr *pr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A table column: its heading, alignment, and how to write the cell of
 * one row (@row: an element of the caller's array; @arg: the column's,
 * e.g. which attribute).  @views: the tables it belongs to (a bit mask
 * the caller defines), so that several tables share one list of columns.
 */
struct pr_col {
	const char *head;
	bool left;
	unsigned int views;
	void (*cell)(char *buf, size_t len, const void *row, unsigned int arg);
	unsigned int arg;
};

#define PR_CELL_MAX	64

/* Text mode: the columns of @view, one row per element of @rows. */
void pr_table(struct pr *pr, const struct pr_col *cols, size_t ncols,
	      unsigned int view, const void *rows, size_t nrows, size_t size);

#endif /* DQCTL_PRINT_H */
