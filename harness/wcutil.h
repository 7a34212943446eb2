/*
 * wcutil.h: two helpers every file of the harness's run uses: the clock of
 * the run's deadline, and a write that finishes.
 */
#ifndef WIRECHECK_WCUTIL_H
#define WIRECHECK_WCUTIL_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* Milliseconds on the monotonic clock. */
static inline int64_t wc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds until deadline_ms, from 0 to 1,000,000 (a poll() timeout). */
static inline int wc_ms_left(int64_t deadline_ms)
{
	int64_t left = deadline_ms - wc_now_ms();

	return left < 0 ? 0 : (int)(left > 1000000 ? 1000000 : left);
}

/* Writes all of buf to fd, again after EINTR. Returns 0 or -errno (EPIPE
 * when the reader is gone: the caller ignores SIGPIPE). */
static inline int wc_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

#endif
