/*
 * scenario_file.c: reading a scenario file (scenario.h, sc_parse_file).
 *
 * The file is read in blocks, at most SC_MAX_FILE bytes, without blocking
 * in open() (a FIFO with no writer) and waiting at most the caller's time
 * for input that is slow to come (a FIFO or a terminal), so that neither
 * `check /dev/zero` nor a FIFO can keep the harness forever.
 */
#include "scenario.h"
#include "scenario_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Reads fd to its end into *text (NUL-terminated, *len bytes). Returns 0,
 * or -1 after a message. */
static int read_all(const char *path, int fd, int wait_ms, char **text, size_t *len,
		    char *err, size_t errlen)
{
	long long deadline = ms_now() + wait_ms;
	size_t cap = 65536;
	char *buf = malloc(cap);

	*len = 0;
	if (!buf)
		return wc_say(err, errlen, "%s: out of memory", path);
	for (;;) {
		ssize_t n;

		if (*len > SC_MAX_FILE) {
			free(buf);
			return wc_say(err, errlen, "%s: larger than %d MiB: a scenario file is at most %d MiB",
				       path, SC_MAX_FILE >> 20, SC_MAX_FILE >> 20);
		}
		if (*len + 1 == cap) {
			/* Room for one byte past the limit, to see a file that
			 * has more than SC_MAX_FILE bytes. */
			size_t want = 2 * cap > SC_MAX_FILE + 2 ? SC_MAX_FILE + 2 : 2 * cap;
			char *bigger = realloc(buf, want);

			if (!bigger) {
				free(buf);
				return wc_say(err, errlen, "%s: out of memory", path);
			}
			buf = bigger;
			cap = want;
		}
		n = read(fd, buf + *len, cap - *len - 1);
		if (n > 0) {
			*len += (size_t)n;
			continue;
		}
		if (n == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			long long left = deadline - ms_now();
			struct pollfd pfd = { .fd = fd, .events = POLLIN };

			if (left > 0 && poll(&pfd, 1, (int)left) != 0)
				continue;
			free(buf);
			return wc_say(err, errlen, "%s: no input within %d s (a FIFO nobody writes?)",
				       path, wait_ms / 1000);
		}
		free(buf);
		return wc_say(err, errlen, "%s: cannot read: %s", path, strerror(errno));
	}
	buf[*len] = '\0';
	*text = buf;
	return 0;
}

/* {dir} for the file at path (fd): the absolute folder of a regular file
 * into *dir (malloc'd); NULL for a FIFO, a pipe, a terminal, or a file
 * named by /dev/stdin, /dev/fd/N or /proc/self/fd/N (stdin redirected from
 * a file), whose folder says nothing of the scenario: sc__parse_in then
 * takes the current directory. Returns 0, or -1 after a message. */
static int folder_of(const char *path, int fd, char **dir, char *err, size_t errlen)
{
	struct stat st;
	const char *slash = strrchr(path, '/');
	char *parent;

	*dir = NULL;
	if (fstat(fd, &st) < 0)
		return wc_say(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return 0;
	/* "a.wcs": "."; "/a.wcs": "/"; "x/y/a.wcs": "x/y". */
	parent = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!parent)
		return wc_say(err, errlen, "%s: out of memory", path);
	*dir = realpath(parent, NULL);
	free(parent);
	if (!*dir)
		return wc_say(err, errlen, "%s: cannot resolve its folder: %s", path, strerror(errno));
	if (strcmp(*dir, "/dev") == 0 || strncmp(*dir, "/dev/", 5) == 0 ||
	    strncmp(*dir, "/proc/", 6) == 0) {
		free(*dir);
		*dir = NULL;
	}
	return 0;
}

/* Nothing would happen: no task, no handler, no peer action, no program. */
static int is_empty(const struct scenario *sc)
{
	return sc->ntasks == 0 && sc->nhandlers == 0 && sc->npeer == 0 && !sc->peer_exec;
}

int sc_parse_file(const char *path, int wait_ms, struct scenario *sc,
		  char *err, size_t errlen)
{
	/* O_NONBLOCK: open() of a FIFO does not wait for a writer. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	char *text = NULL, *dir = NULL;
	size_t len = 0;
	int rc;

	if (fd < 0)
		return wc_say(err, errlen, "%s: cannot open: %s", path, strerror(errno));
	rc = folder_of(path, fd, &dir, err, errlen);
	if (rc == 0)
		rc = read_all(path, fd, wait_ms, &text, &len, err, errlen);
	close(fd);
	if (rc < 0) {
		free(dir);
		return -1;
	}
	if (strlen(text) != len) {
		int line = 1;

		for (const char *c = text; *c; c++)
			line += *c == '\n';
		free(text);
		free(dir);
		return wc_say(err, errlen, "%s:%d: a NUL byte in the file (use \"\\0\" in strings)", path, line);
	}
	rc = sc__parse_in(path, dir, text, sc, err, errlen);
	free(text);
	free(dir);
	if (rc == 0 && is_empty(sc)) {
		sc_free(sc);
		return wc_say(err, errlen, "%s: an empty scenario: no task, no handler, no peer action "
			       "and no peer exec, so nothing would happen until the timeout", path);
	}
	return rc;
}
