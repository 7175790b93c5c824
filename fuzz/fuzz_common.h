/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * fuzz/: helpers shared by the libFuzzer targets.  The input is consumed
 * front to back like libFuzzer's FuzzedDataProvider: a read past the end
 * yields zeros, so every input is a complete program.
 */
#ifndef DQ_FUZZ_COMMON_H
#define DQ_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fz {
	const uint8_t *p;
	size_t n;
};

static inline size_t fz_left(const struct fz *f)
{
	return f->n;
}

static inline void fz_bytes(struct fz *f, void *out, size_t len)
{
	size_t k = len < f->n ? len : f->n;

	memcpy(out, f->p, k);
	memset((uint8_t *)out + k, 0, len - k);
	f->p += k;
	f->n -= k;
}

static inline uint8_t fz_u8(struct fz *f)
{
	uint8_t v;

	fz_bytes(f, &v, 1);
	return v;
}

static inline uint16_t fz_u16(struct fz *f)
{
	uint16_t v;

	fz_bytes(f, &v, 2);
	return v;
}

static inline uint32_t fz_u32(struct fz *f)
{
	uint32_t v;

	fz_bytes(f, &v, 4);
	return v;
}

static inline uint64_t fz_u64(struct fz *f)
{
	uint64_t v;

	fz_bytes(f, &v, 8);
	return v;
}

/*
 * An invariant broke: say which and abort, so that libFuzzer keeps the
 * input as a crash (fuzz/crashes/).
 */
#define FZ_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "INVARIANT %s:%d: %s: ",	\
				__FILE__, __LINE__, #cond);		\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			abort();					\
		}							\
	} while (0)

#endif /* DQ_FUZZ_COMMON_H */
