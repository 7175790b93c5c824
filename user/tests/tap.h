/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * tap.h - minimal TAP harness for the libdqshim host tests.
 *
 *	TEST(name, timeout_s) { ... }
 *
 * Each test runs in a forked child with an alarm, so a crash or a hang
 * fails that test only.  CHECK() records a failure and goes on, REQUIRE()
 * ends the test, SKIP() ends it as skipped.  Output is TAP 13; the last
 * line is exactly "N passed, M failed" (skipped tests count in neither).
 */
#ifndef DQSHIM_TEST_TAP_H
#define DQSHIM_TEST_TAP_H

#include <stdio.h>

struct tap_test {
	const char *name;
	void (*fn)(void);
	unsigned int timeout_s;
	struct tap_test *next;
};

void tap_register(struct tap_test *t);
int tap_run(int argc, char **argv);
void tap_failed(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
_Noreturn void tap_end_fail(void);
_Noreturn void tap_end_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define TEST(tname, secs)						\
	static void tap_fn_##tname(void);				\
	static struct tap_test tap_t_##tname = {			\
		.name = #tname, .fn = tap_fn_##tname, .timeout_s = secs }; \
	__attribute__((constructor)) static void tap_r_##tname(void)	\
	{ tap_register(&tap_t_##tname); }				\
	static void tap_fn_##tname(void)

#define CHECK(cond, ...) do {						\
	if (!(cond))							\
		tap_failed(__FILE__, __LINE__, "check failed: " #cond	\
			   " " __VA_ARGS__);				\
} while (0)

#define REQUIRE(cond, ...) do {					\
	if (!(cond)) {							\
		tap_failed(__FILE__, __LINE__, "required: " #cond	\
			   " " __VA_ARGS__);				\
		tap_end_fail();						\
	}								\
} while (0)

/* Integer equality with both values printed. */
#define CHECK_EQ(a, b) do {						\
	long long tap_a_ = (long long)(a), tap_b_ = (long long)(b);	\
	if (tap_a_ != tap_b_)						\
		tap_failed(__FILE__, __LINE__, "%s == %s: %lld != %lld",\
			   #a, #b, tap_a_, tap_b_);			\
} while (0)

#define REQUIRE_EQ(a, b) do {						\
	long long tap_a_ = (long long)(a), tap_b_ = (long long)(b);	\
	if (tap_a_ != tap_b_) {						\
		tap_failed(__FILE__, __LINE__, "%s == %s: %lld != %lld",\
			   #a, #b, tap_a_, tap_b_);			\
		tap_end_fail();						\
	}								\
} while (0)

#define SKIP(...) tap_end_skip(__VA_ARGS__)

#endif
