// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * tap.h - the TAP (version 13) test harness of every dq user-space C test:
 * the kernel-ABI selftests (selftests/dq_*.c), the host model of the wheel
 * (selftests/host/), libdqshim's tests (user/tests/) and dq_stress.
 *
 * A test program is a set of TEST(name) { ... } bodies (TEST(name, secs)
 * or TEST_TIMEOUT(name, secs) for a timeout other than 60 s), and/or
 * cases added at run time with tap_add().  tap_main() runs each in a
 * forked child, in its own process group, with a timeout (scaled by
 * $DQ_TIMEOUT_SCALE): a hang or a crash fails that one test and not the
 * program, and whatever the test forked is killed with it.  Output:
 *
 *	TAP version 13
 *	1..N
 *	# diagnostics
 *	ok 1 - name
 *	not ok 2 - name
 *	ok 3 - name # SKIP reason
 *	X passed, Y failed, Z skipped
 *
 * The closing line always carries all three counts (scripts/check.sh and
 * selftests/run-vm-tests.sh add them up); exit status 1 when a test failed.
 *
 * EXPECT_*() and CHECK() record a failure and go on; ASSERT_*() and
 * REQUIRE() end the test; SKIP() ends it as skipped (a test that already
 * failed stays failed).
 */
#ifndef DQ_SELFTEST_TAP_H
#define DQ_SELFTEST_TAP_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct tap_case {
	const char *name;
	void (*fn)(void);
	unsigned int timeout_s;
	int line;
	struct tap_case *next;
	/* Cases added with tap_add(): fn_arg(arg) instead of fn(). */
	void (*fn_arg)(void *arg);
	void *arg;
	unsigned int order;	/* registration order, among equal lines */
};

#define TAP_DEFAULT_TIMEOUT_S	60

void tap_register(struct tap_case *tc);
/*
 * Add a case at run time (before tap_main()), e.g. one per parameter set:
 * @name is copied; @fn(@arg) is the body.  Cases run in source-line order
 * of their registration (TEST()'s line, or @line here), then in the order
 * they were added.
 */
void tap_add_at(int line, const char *name, void (*fn)(void *arg), void *arg,
		unsigned int timeout_s);
#define tap_add(name, fn, arg, timeout_s) \
	tap_add_at(__LINE__, name, fn, arg, timeout_s)
/*
 * Run the selected cases; argv: [-l] [-t NAME]... [NAME]...  A program
 * with options of its own parses them first and passes argc 1.
 */
int tap_main(int argc, char **argv);

void tap_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tap_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
_Noreturn void tap_abort(void);
_Noreturn void tap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int tap_has_failed(void);
/* Seconds scaled by $DQ_TIMEOUT_SCALE (for slow machines), for deadlines. */
double tap_timeout_scale(void);

void tap_cmp_fail(const char *file, int line, const char *what,
		  const char *astr, const char *bstr,
		  int a_signed, unsigned long long a,
		  int b_signed, unsigned long long b);
void tap_errno_fail(const char *file, int line, const char *expr,
		    long long ret, int err, int want_err);

/* TEST(name) { body }, TEST(name, secs) or TEST_TIMEOUT(name, secs) */
#define TEST_TIMEOUT(tname, secs)					\
	static void tap_fn_##tname(void);				\
	static struct tap_case tap_case_##tname = {			\
		.name = #tname, .fn = tap_fn_##tname,			\
		.timeout_s = (secs), .line = __LINE__,			\
	};								\
	__attribute__((constructor)) static void tap_reg_##tname(void)	\
	{								\
		tap_register(&tap_case_##tname);			\
	}								\
	static void tap_fn_##tname(void)

#define TAP_TEST_DEFAULT(tname) TEST_TIMEOUT(tname, TAP_DEFAULT_TIMEOUT_S)
#define TAP_TEST_PICK(_1, _2, which, ...) which
#define TEST(...) \
	TAP_TEST_PICK(__VA_ARGS__, TEST_TIMEOUT, TAP_TEST_DEFAULT, _)(__VA_ARGS__)

/* Signedness of an integer expression's type, without evaluating it. */
#define TAP_IS_SIGNED(x) ((__typeof__(x))-1 < (__typeof__(x))1)
#define TAP_AS_I128(v, s) ((s) ? (__int128)(long long)(v)		\
			       : (__int128)(unsigned long long)(v))

#define TAP_CMP(a, op, b, astr, bstr, fatal) do {					\
	__typeof__(a) tap_a_ = (a);					\
	__typeof__(b) tap_b_ = (b);					\
	int tap_as_ = TAP_IS_SIGNED(a), tap_bs_ = TAP_IS_SIGNED(b);	\
	if (!(TAP_AS_I128(tap_a_, tap_as_) op				\
	      TAP_AS_I128(tap_b_, tap_bs_))) {				\
		tap_cmp_fail(__FILE__, __LINE__, #op, astr, bstr,		\
			     tap_as_, (unsigned long long)tap_a_,	\
			     tap_bs_, (unsigned long long)tap_b_);	\
		if (fatal)						\
			tap_abort();					\
	}								\
} while (0)

#define EXPECT_EQ(a, b) TAP_CMP(a, ==, b, #a, #b, 0)
#define EXPECT_NE(a, b) TAP_CMP(a, !=, b, #a, #b, 0)
#define EXPECT_LT(a, b) TAP_CMP(a, <, b, #a, #b, 0)
#define EXPECT_LE(a, b) TAP_CMP(a, <=, b, #a, #b, 0)
#define EXPECT_GT(a, b) TAP_CMP(a, >, b, #a, #b, 0)
#define EXPECT_GE(a, b) TAP_CMP(a, >=, b, #a, #b, 0)
#define ASSERT_EQ(a, b) TAP_CMP(a, ==, b, #a, #b, 1)
#define ASSERT_NE(a, b) TAP_CMP(a, !=, b, #a, #b, 1)
#define ASSERT_LT(a, b) TAP_CMP(a, <, b, #a, #b, 1)
#define ASSERT_LE(a, b) TAP_CMP(a, <=, b, #a, #b, 1)
#define ASSERT_GT(a, b) TAP_CMP(a, >, b, #a, #b, 1)
#define ASSERT_GE(a, b) TAP_CMP(a, >=, b, #a, #b, 1)

#define TAP_TRUE(c, cstr, fatal) do {					\
	if (!(c)) {							\
		tap_fail_at(__FILE__, __LINE__, "expected: %s", cstr);	\
		if (fatal)						\
			tap_abort();					\
	}								\
} while (0)
#define EXPECT_TRUE(c)	TAP_TRUE(c, #c, 0)
#define ASSERT_TRUE(c)	TAP_TRUE(c, #c, 1)
#define EXPECT_FALSE(c)	TAP_TRUE(!(c), "!(" #c ")", 0)
#define ASSERT_FALSE(c)	TAP_TRUE(!(c), "!(" #c ")", 1)

/* A system call that must fail with -1 and errno == e. */
#define TAP_SYSERR(call, e, cstr, fatal) do {					\
	errno = 0;							\
	long long tap_r_ = (long long)(call);				\
	int tap_e_ = errno;						\
	if (tap_r_ != -1 || tap_e_ != (e)) {				\
		tap_errno_fail(__FILE__, __LINE__, cstr, tap_r_,	\
			       tap_e_, (e));				\
		if (fatal)						\
			tap_abort();					\
	}								\
} while (0)
#define EXPECT_SYSERR(call, e) TAP_SYSERR(call, e, #call, 0)
#define ASSERT_SYSERR(call, e) TAP_SYSERR(call, e, #call, 1)

/* A system call that must succeed (not return -1). */
#define TAP_SYSOK(call, cstr, fatal) do {					\
	errno = 0;							\
	long long tap_r_ = (long long)(call);				\
	if (tap_r_ == -1) {						\
		tap_fail_at(__FILE__, __LINE__, "%s failed: %s",	\
			    cstr, strerror(errno));			\
		if (fatal)						\
			tap_abort();					\
	}								\
} while (0)
#define EXPECT_SYSOK(call) TAP_SYSOK(call, #call, 0)
#define ASSERT_SYSOK(call) TAP_SYSOK(call, #call, 1)

/* A helper returning 0 or -errno must return 0. */
#define TAP_OK(call, cstr, fatal) do {					\
	long long tap_r_ = (long long)(call);				\
	if (tap_r_ < 0) {						\
		tap_fail_at(__FILE__, __LINE__, "%s = %lld (%s)",	\
			    cstr, tap_r_, strerror((int)-tap_r_));	\
		if (fatal)						\
			tap_abort();					\
	}								\
} while (0)
#define EXPECT_OK(call) TAP_OK(call, #call, 0)
#define ASSERT_OK(call) TAP_OK(call, #call, 1)

/*
 * CHECK(cond[, "fmt", args...]) and REQUIRE(cond[, "fmt", args...]): a
 * condition with an optional message (a string literal first).
 */
#define CHECK(cond, ...) do {						\
	if (!(cond))							\
		tap_fail_at(__FILE__, __LINE__, "check failed: " #cond	\
			    " " __VA_ARGS__);				\
} while (0)
#define REQUIRE(cond, ...) do {						\
	if (!(cond)) {							\
		tap_fail_at(__FILE__, __LINE__, "required: " #cond	\
			    " " __VA_ARGS__);				\
		tap_abort();						\
	}								\
} while (0)
#define CHECK_EQ(a, b)		EXPECT_EQ(a, b)
#define REQUIRE_EQ(a, b)	ASSERT_EQ(a, b)

#define FAIL(...) tap_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define DIAG(...) tap_diag(__VA_ARGS__)
#define SKIP(...) tap_skip(__VA_ARGS__)

#define TAP_MAIN() int main(int argc, char **argv) { return tap_main(argc, argv); }

#endif /* DQ_SELFTEST_TAP_H */
