/*
 * subject_pipe.c: a subject's side of the two pipes (subject_pipe.h).
 */
#include "subject_pipe.h"

#include "protocol.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LINE 1048576

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(70); /* the harness is gone: nothing to report to */
		buf += n;
		len -= (size_t)n;
	}
}

static void vline(const char *prefix, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void vline(const char *prefix, const char *fmt, va_list ap)
{
	char buf[1024];
	size_t off = (size_t)snprintf(buf, sizeof(buf), "%s", prefix);
	int n;

	if (off > sizeof(buf) - 2)
		off = sizeof(buf) - 2;
	n = vsnprintf(buf + off, sizeof(buf) - 1 - off, fmt, ap);
	if (n < 0)
		return;
	off += (size_t)n;
	if (off > sizeof(buf) - 2)
		off = sizeof(buf) - 2;
	buf[off++] = '\n';
	write_all(WC_FD_EVENTS, buf, off);
}

void sp_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap);
	va_end(ap);
}

void sp_fatal(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("fatal ", fmt, ap);
	va_end(ap);
	exit(2);
}

void sp_event(uint64_t loop_task, int conn, const char *fmt, ...)
{
	static uint64_t last_loop_task, visible_task;
	char prefix[64];
	va_list ap;

	if (loop_task != last_loop_task || loop_task == 0) {
		visible_task++;
		last_loop_task = loop_task;
	}
	snprintf(prefix, sizeof(prefix), "ev %llu %d ",
		 (unsigned long long)visible_task, conn);
	va_start(ap, fmt);
	vline(prefix, fmt, ap);
	va_end(ap);
}

void sp_wait_go(void)
{
	char buf[3];
	size_t got = 0;

	while (got < sizeof(buf)) {
		ssize_t n = read(WC_FD_CTL, buf + got, sizeof(buf) - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(70);
		got += (size_t)n;
	}
	if (memcmp(buf, "go\n", 3) != 0)
		_exit(71);
}

void sp_sync(const char *point, const uint64_t *written, int n)
{
	/* 21 digits and a space per connection, for the most connections a
	 * scenario can have (1024), and the point. */
	static char buf[1024 * 22 + 64];
	size_t off = (size_t)snprintf(buf, sizeof(buf), "sync %s", point);

	if (off > sizeof(buf) - 32)
		off = sizeof(buf) - 32;
	for (int i = 0; i < n && off < sizeof(buf) - 32; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, " %llu",
					(unsigned long long)written[i]);
	buf[off++] = '\n';
	write_all(WC_FD_EVENTS, buf, off);
	sp_wait_go();
}

/* The control pipe's bytes, read in blocks: the harness writes nothing
 * after "run" until the subject's first sync, so nothing read here belongs
 * to a later "go". */
static struct {
	char buf[65536];
	size_t start, end;
} in;

static char *read_line(void)
{
	static char line[MAX_LINE];
	size_t len = 0;

	for (;;) {
		char *nl;
		size_t take;

		if (in.start == in.end) {
			ssize_t n = read(WC_FD_CTL, in.buf, sizeof(in.buf));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return NULL;
			in.start = 0;
			in.end = (size_t)n;
		}
		nl = memchr(in.buf + in.start, '\n', in.end - in.start);
		take = (nl ? (size_t)(nl - in.buf) : in.end) - in.start;
		if (len + take + 1 > sizeof(line))
			sp_fatal("a script line longer than %d bytes", MAX_LINE);
		memcpy(line + len, in.buf + in.start, take);
		len += take;
		in.start += take + (nl != NULL);
		if (nl)
			break;
	}
	line[len] = '\0';
	return line;
}

void sp_read_script(struct sr_script *sc)
{
	char err[512];
	char *line;
	int rc = 0;

	sr_init(sc);
	while ((line = read_line()) && (rc = sr_feed_line(sc, line, err, sizeof(err))) == 0)
		;
	if (rc < 0)
		sp_fatal("%s", err);
	if (!line)
		sp_fatal("the script ended before 'run'");
	if (in.start != in.end)
		sp_fatal("bytes after 'run' in the script");
	if (sr_finish(sc, err, sizeof(err)) < 0)
		sp_fatal("%s", err);
}
