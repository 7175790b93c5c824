// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * dqctl's output layer (print.h): one call per field for text and JSON,
 * JSON through json-c, and column-described tables.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "dqctl.h"
#include "print.h"

#define JSON_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static _Noreturn void pr_oom(void)
{
	warnx("out of memory");
	exit(EXIT_KERNEL);
}

void pr_init(struct pr *pr, FILE *f, bool json)
{
	memset(pr, 0, sizeof(*pr));
	pr->f = f;
	pr->json = json;
}

/*
 * Add @v as member @key of the open object, or as the next element of the
 * open list (@key unused); takes @v's reference.
 */
static void pr_add(struct pr *pr, const char *key, struct json_object *v)
{
	struct json_object *top;

	if (!v)
		pr_oom();
	top = pr->depth ? pr->stack[pr->depth - 1] : NULL;
	if (top && json_object_is_type(top, json_type_array)) {
		if (json_object_array_add(top, v))
			pr_oom();
		return;
	}
	if (!top || !key) {
		json_object_put(v);
		return;
	}
	if (json_object_object_add(top, key, v))
		pr_oom();
}

void pr_open(struct pr *pr, const char *key)
{
	struct json_object *o;

	if (!pr->json)
		return;
	if (pr->depth == PR_MAX_DEPTH) {
		warnx("output nested too deep");
		exit(EXIT_KERNEL);
	}
	o = json_object_new_object();
	if (!o)
		pr_oom();
	if (pr->depth)
		pr_add(pr, key, json_object_get(o));
	pr->stack[pr->depth++] = o;
}

void pr_list_open(struct pr *pr, const char *key)
{
	struct json_object *a;

	if (!pr->json)
		return;
	if (!pr->depth || pr->depth == PR_MAX_DEPTH) {
		warnx("output nested wrong");
		exit(EXIT_KERNEL);
	}
	a = json_object_new_array();
	if (!a)
		pr_oom();
	pr_add(pr, key, json_object_get(a));
	pr->stack[pr->depth++] = a;
}

void pr_close(struct pr *pr)
{
	struct json_object *o;

	if (!pr->json || !pr->depth)
		return;
	o = pr->stack[--pr->depth];
	if (!pr->depth) {
		if (pr->array)
			fputs(pr->nelem++ ? ",\n" : "\n", pr->f);
		fputs(json_object_to_json_string_ext(o, JSON_FLAGS), pr->f);
		if (!pr->array)
			fputc('\n', pr->f);
	}
	json_object_put(o);
}

void pr_array_open(struct pr *pr)
{
	if (!pr->json)
		return;
	fputc('[', pr->f);
	pr->array = true;
	pr->nelem = 0;
}

void pr_array_close(struct pr *pr)
{
	if (!pr->json)
		return;
	fputs(pr->nelem ? "\n]\n" : "]\n", pr->f);
	pr->array = false;
}

void pr_u64(struct pr *pr, const char *key, const char *fmt, uint64_t v)
{
	if (pr->json)
		pr_add(pr, key, json_object_new_uint64(v));
	else if (fmt)
		fprintf(pr->f, fmt, v);
}

void pr_s64(struct pr *pr, const char *key, const char *fmt, int64_t v)
{
	if (pr->json)
		pr_add(pr, key, json_object_new_int64(v));
	else if (fmt)
		fprintf(pr->f, fmt, v);
}

void pr_str(struct pr *pr, const char *key, const char *fmt, const char *s)
{
	pr_str_as(pr, key, s, fmt, s);
}

void pr_bool(struct pr *pr, const char *key, const char *fmt, bool v)
{
	if (pr->json)
		pr_add(pr, key, json_object_new_boolean(v));
	else if (fmt)
		fprintf(pr->f, fmt, v ? "yes" : "no");
}

void pr_u64_as(struct pr *pr, const char *key, uint64_t v, const char *fmt,
	       const char *text)
{
	if (pr->json)
		pr_add(pr, key, json_object_new_uint64(v));
	else if (fmt)
		fprintf(pr->f, fmt, text);
}

void pr_str_as(struct pr *pr, const char *key, const char *json,
	       const char *fmt, const char *text)
{
	if (pr->json)
		pr_add(pr, key, json_object_new_string(json));
	else if (fmt)
		fprintf(pr->f, fmt, text);
}

void pr_num(struct pr *pr, const char *key, const char *num)
{
	if (pr->json)
		pr_add(pr, key, json_object_new_double_s(strtod(num, NULL), num));
}

void pr_text(struct pr *pr, const char *fmt, ...)
{
	va_list ap;

	if (pr->json)
		return;
	va_start(ap, fmt);
	vfprintf(pr->f, fmt, ap);
	va_end(ap);
}

/* One line: cells separated by two spaces, the last one not padded. */
static void pr_row(struct pr *pr, const struct pr_col *const *col, size_t n,
		   const size_t *width, char (*cell)[PR_CELL_MAX])
{
	size_t c;

	for (c = 0; c < n; c++) {
		int w = (int)width[c];

		if (c)
			fputs("  ", pr->f);
		if (!col[c]->left)
			fprintf(pr->f, "%*s", w, cell[c]);
		else if (c + 1 < n)
			fprintf(pr->f, "%-*s", w, cell[c]);
		else
			fputs(cell[c], pr->f);
	}
	fputc('\n', pr->f);
}

void pr_table(struct pr *pr, const struct pr_col *cols, size_t ncols,
	      unsigned int view, const void *rows, size_t nrows, size_t size)
{
	const struct pr_col **col = calloc(ncols, sizeof(*col));
	size_t *width = calloc(ncols, sizeof(*width));
	char (*cell)[PR_CELL_MAX];
	size_t n = 0, r, c;

	if (pr->json)
		goto out;
	if (!col || !width)
		pr_oom();
	for (c = 0; c < ncols; c++)
		if (cols[c].views & view)
			col[n++] = &cols[c];
	cell = calloc((nrows + 1) * (n ? n : 1), sizeof(*cell));
	if (!cell)
		pr_oom();
	for (c = 0; c < n; c++) {
		snprintf(cell[c], sizeof(cell[c]), "%s", col[c]->head);
		width[c] = strlen(cell[c]);
	}
	for (r = 0; r < nrows; r++) {
		const void *row = (const char *)rows + r * size;

		for (c = 0; c < n; c++) {
			char *s = cell[(r + 1) * n + c];

			col[c]->cell(s, PR_CELL_MAX, row, col[c]->arg);
			if (strlen(s) > width[c])
				width[c] = strlen(s);
		}
	}
	for (r = 0; r <= nrows; r++)
		pr_row(pr, col, n, width, cell + r * n);
	free(cell);
out:
	free(col);
	free(width);
}
