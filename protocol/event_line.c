/*
 * event_line.c: the lines of a subject's event pipe (event_line.h).
 */
#include "event_line.h"

#include "say.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A decimal number of at most max, digits only; advances *s past it.
 * Returns 0, or -1 when there is none or it is too large. */
static int parse_num(const char **s, uint64_t max, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');

		if (d > max || x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*s = p;
	*v = x;
	return 0;
}

/* Whether s is a sync point: start, done, task:N or checkpoint:N. */
static int is_point(const char *s, size_t len)
{
	const char *p = s;
	uint64_t n;

	if ((len == 5 && memcmp(s, "start", 5) == 0) || (len == 4 && memcmp(s, "done", 4) == 0))
		return 1;
	if (len > 5 && memcmp(s, "task:", 5) == 0)
		p = s + 5;
	else if (len > 11 && memcmp(s, "checkpoint:", 11) == 0)
		p = s + 11;
	else
		return 0;
	return parse_num(&p, UINT64_MAX, &n) == 0 && p == s + len;
}

/* "ev TASK CONN TEXT". */
static int parse_ev(const char *line, const struct el_context *cx,
		    struct el_line *l, char *problem, size_t plen)
{
	const char *p = line + 3;

	if (parse_num(&p, UINT64_MAX, &l->task) < 0 || *p++ != ' ')
		return wc_say(problem, plen, "TASK is not a number (ev TASK CONN TEXT)");
	if (parse_num(&p, (uint64_t)cx->nconns - 1, &l->conn) < 0 ||
	    (*p != ' ' && *p != '\0'))
		return wc_say(problem, plen, "CONN is not a connection of the scenario "
				  "(0 to %d; ev TASK CONN TEXT)", cx->nconns - 1);
	if (*p == '\0' || *++p == '\0')
		return wc_say(problem, plen, "an event without a TEXT (ev TASK CONN TEXT)");
	l->text = p;
	return 0;
}

/* "sync POINT W0 W1 ...": one W per connection. */
static int parse_sync(const char *line, const struct el_context *cx,
		      struct el_line *l, char *problem, size_t plen)
{
	const char *point = line + 5;
	size_t len = strcspn(point, " ");
	const char *p = point + len;
	int n = cx->nconns, i;

	if (!is_point(point, len) || len >= sizeof(l->point))
		return wc_say(problem, plen, "POINT is not start, done, task:N or "
				  "checkpoint:N (sync POINT W0 W1 ...)");
	for (i = 0; *p == ' ' && i < n; i++) {
		p++;
		if (parse_num(&p, UINT64_MAX, &cx->written[i]) < 0 ||
		    (*p != ' ' && *p != '\0'))
			return wc_say(problem, plen, "W%d is not a byte count", i);
	}
	if (i < n || *p != '\0')
		return wc_say(problem, plen, "%s byte counts: the scenario has %d "
				  "connection%s (sync POINT W0 W1 ...)",
				  i < n ? "too few" : "too many", n, n == 1 ? "" : "s");
	memcpy(l->point, point, len);
	l->point[len] = '\0';
	return 0;
}

/* "kill SIG [PID]". */
static int parse_kill(const char *line, struct el_line *l, char *problem,
		      size_t plen)
{
	const char *p = line + 5;

	l->pid = 0;
	if (parse_num(&p, INT_MAX, &l->sig) < 0 ||
	    (*p == ' ' && (++p, parse_num(&p, INT_MAX, &l->pid) < 0 || l->pid == 0)) ||
	    *p != '\0')
		return wc_say(problem, plen, "expected kill SIG [PID], numbers");
	return 0;
}

/* "listening PORT": 0 over unix, a TCP port otherwise. */
static int parse_listening(const char *line, const struct el_context *cx,
			   struct el_line *l, char *problem, size_t plen)
{
	const char *p = line + 10;
	uint64_t port;

	if (parse_num(&p, 65535, &port) < 0 || *p != '\0' ||
	    (port == 0) != (cx->unix_transport != 0))
		return wc_say(problem, plen, "PORT is not %s (listening PORT)",
				  cx->unix_transport ? "0 (the transport is unix)"
						     : "a TCP port, 1 to 65535");
	l->port = (int)port;
	return 0;
}

/* "stats bytes_moved=N allocations=M bytes_copied=C". */
static int parse_stats(const char *line, struct el_line *l, char *problem,
		       size_t plen)
{
	static const char *keys[3] = { " bytes_moved=", " allocations=", " bytes_copied=" };
	const char *p = line + 5;

	for (int i = 0; i < 3; i++) {
		size_t k = strlen(keys[i]);

		if (strncmp(p, keys[i], k) != 0 ||
		    (p += k, parse_num(&p, INT64_MAX, &l->stats[i]) < 0))
			return wc_say(problem, plen, "expected stats bytes_moved=N "
					  "allocations=M bytes_copied=C");
	}
	if (*p != '\0')
		return wc_say(problem, plen, "expected stats bytes_moved=N "
				  "allocations=M bytes_copied=C, and nothing after");
	return 0;
}

int el_parse(const char *line, size_t len, const struct el_context *cx,
	     struct el_line *out, char *problem, size_t plen)
{
	const char *nul = memchr(line, '\0', len);

	memset(out, 0, sizeof(*out));
	out->kind = EL_BROKEN;
	if (nul)
		return wc_say(problem, plen, "a NUL byte (byte %zu of the line)",
				  (size_t)(nul - line) + 1);
	if (strncmp(line, "ev ", 3) == 0) {
		out->kind = EL_EV;
		return parse_ev(line, cx, out, problem, plen);
	}
	if (strncmp(line, "sync ", 5) == 0) {
		out->kind = EL_SYNC;
		return parse_sync(line, cx, out, problem, plen);
	}
	if (strncmp(line, "kill ", 5) == 0) {
		out->kind = EL_KILL;
		return parse_kill(line, out, problem, plen);
	}
	if (strncmp(line, "listening ", 10) == 0) {
		out->kind = EL_LISTENING;
		return parse_listening(line, cx, out, problem, plen);
	}
	if (strncmp(line, "stats ", 6) == 0) {
		out->kind = EL_STATS;
		return parse_stats(line, out, problem, plen);
	}
	if (strncmp(line, "fatal ", 6) == 0) {
		out->kind = EL_FATAL;
		out->text = line + 6;
		return 0;
	}
	if (strcmp(line, "note") == 0 || strncmp(line, "note ", 5) == 0) {
		out->kind = EL_NOTE;
		return 0;
	}
	return wc_say(problem, plen, "not a line of the protocol (ev, sync, kill, "
			  "listening, stats, fatal or note)");
}
