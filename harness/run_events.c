/*
 * run_events.c: the subject's event pipe, as a run reads it (run_int.h):
 * each line parsed (protocol/event_line.c) and acted on: events into the
 * trace, sync points to the peer, kill requests, the listening port, the
 * stack's stats, a fatal error; a line that breaks the protocol ends the
 * run.
 */
#include "run_int.h"

#include "event_line.h"
#include "fi.h"
#include "proc.h"
#include "protocol.h"
#include "script.h"
#include "trace.h"
#include "wcutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Lines that break the subject protocol (docs/subject-protocol.md, "Lines
 * from the subject") end the run: the first one is kept as the trace's
 * exit.error, "protocol: line N `LINE`: PROBLEM", the line shown with
 * bytes other than printable ASCII as \xHH and cut after LINE_SHOWN bytes.
 * The line handlers return 0, 1 after such an error (the caller reads no
 * more lines) or -1 when the harness failed (r->err).
 */
#define LINE_SHOWN 80

static int protocol_error(struct run *r, const char *line, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int protocol_error(struct run *r, const char *line, size_t len, const char *fmt, ...)
{
	char shown[LINE_SHOWN * 4 + 1], problem[256], *msg;
	size_t o = 0, need;
	va_list ap;

	if (r->protocol_error)
		return 1;
	for (size_t k = 0; k < len && k < LINE_SHOWN; k++) {
		unsigned char c = (unsigned char)line[k];

		if (c >= 0x20 && c < 0x7f)
			shown[o++] = (char)c;
		else
			o += (size_t)snprintf(shown + o, sizeof(shown) - o, "\\x%02x", c);
	}
	shown[o] = '\0';
	va_start(ap, fmt);
	vsnprintf(problem, sizeof(problem), fmt, ap);
	va_end(ap);
	need = strlen(shown) + strlen(problem) + 96;
	msg = malloc(need);
	if (!msg)
		return run__fail(r, "out of memory");
	if (len >= sizeof(r->evbuf) - 1) /* the start of an over-long line */
		snprintf(msg, need, "protocol: line %llu `%s...`: %s",
			 (unsigned long long)r->lines, shown, problem);
	else if (len > LINE_SHOWN)
		snprintf(msg, need, "protocol: line %llu `%s...` (%zu bytes): %s",
			 (unsigned long long)r->lines, shown, len, problem);
	else
		snprintf(msg, need, "protocol: line %llu `%s`: %s", (unsigned long long)r->lines,
			 shown, problem);
	r->protocol_error = msg;
	return 1;
}

/* Whether s is UTF-8 (what a JSON string of the trace can hold). */
static int is_utf8(const char *s)
{
	json_t *j = json_string(s);

	json_decref(j);
	return j != NULL;
}

/* An event, "tTASK cCONN TEXT" in the trace. */
static int on_ev(struct run *r, const char *line, size_t len, const struct el_line *l)
{
	json_t *ev;
	char *buf;
	size_t n = strlen(l->text) + 48;

	if (!(buf = malloc(n)))
		return run__fail(r, "out of memory");
	snprintf(buf, n, "t%llu c%llu %s", (unsigned long long)l->task,
		 (unsigned long long)l->conn, l->text);
	ev = json_string(buf);
	free(buf);
	if (!ev)
		return protocol_error(r, line, len, "TEXT is not UTF-8");
	if (json_array_append_new(r->events, ev) < 0)
		return run__fail(r, "out of memory");
	return 0;
}

/* A sync point: the peer's actions at that point, then go. */
static int on_sync(struct run *r, const struct el_line *l)
{
	if (wc_peer_at_point(&r->peer, l->point, r->written) != 0)
		return 0; /* the deadline passed; the main loop reports it */
	(void)wc_write_all(r->ctl_fd, "go\n", 3);
	return 0;
}

/* Whether pid is the harness's child or a child of it: the subject itself
 * when a wrapper (strace -f) is the child. */
static int is_subject(const struct run *r, pid_t pid)
{
	long ppid, pgrp;

	if (pid == r->pid)
		return 1;
	return wc_proc_parent(pid, &ppid, &pgrp) == 0 && ppid == (long)r->pid;
}

/* A kill line: sends SIG to the subject (PID, when it is the subject or a
 * child of the harness's child, as under strace), then go. */
static int on_kill(struct run *r, const struct el_line *l)
{
	pid_t target = r->pid;

	if (l->pid > 0 && is_subject(r, (pid_t)l->pid))
		target = (pid_t)l->pid;
	(void)kill(target, (int)l->sig);
	(void)wc_write_all(r->ctl_fd, "go\n", 3);
	return 0;
}

/* A listening line: a server subject is ready; the peer connects. */
static int on_listening(struct run *r, const char *line, size_t len, const struct el_line *l)
{
	char why[256];
	int rc;

	r->listened = 1;
	rc = wc_peer_connect(&r->peer, l->port);
	if (rc != -2)
		return rc;
	snprintf(why, sizeof(why), "nothing listens there (%s)", r->err);
	r->err[0] = '\0';
	return protocol_error(r, line, len, "%s", why);
}

/* The queue's figures of a stats line. */
static int on_stats(struct run *r, const struct el_line *l)
{
	json_decref(r->queue);
	r->queue = json_pack("{s:I,s:I,s:I}", "bytes_moved", (json_int_t)l->stats[0],
			     "allocations", (json_int_t)l->stats[1], "bytes_copied",
			     (json_int_t)l->stats[2]);
	return r->queue ? 0 : run__fail(r, "out of memory");
}

/* The MESSAGE of a "fatal MESSAGE" line, as the subject's error (the
 * last one wins). Returns 0, or -1 without memory (r->err). */
static int take_fatal(struct run *r, const char *message)
{
	free(r->subject_error);
	r->subject_error = strdup(message);
	return r->subject_error ? 0 : run__fail(r, "out of memory");
}

/* One line, without its newline, NUL-terminated at len: read by the
 * protocol's grammar (event_line.h), acted on here. */
static int on_line(struct run *r, char *line, size_t len)
{
	struct el_context cx = { .nconns = r->sc->connections,
				 .unix_transport = r->sc->transport == SC_UNIX,
				 .written = r->written };
	struct el_line l;
	char problem[256];
	int rc = el_parse(line, len, &cx, &l, problem, sizeof(problem));

	r->lines++;
	/* A listening line is judged by the scenario before its PORT. */
	if (l.kind == EL_LISTENING && r->sc->role != SC_ROLE_SERVER &&
	    r->opts->handoff == WC_HANDOFF_NONE)
		return protocol_error(r, line, len, "the subject is the client in this scenario: "
				      "it connects, and listens on nothing");
	if (l.kind == EL_LISTENING && r->listened)
		return protocol_error(r, line, len, "a second listening line");
	if (rc < 0)
		return protocol_error(r, line, len, "%s", problem);
	switch (l.kind) {
	case EL_EV:
		return on_ev(r, line, len, &l);
	case EL_SYNC:
		return on_sync(r, &l);
	case EL_KILL:
		return on_kill(r, &l);
	case EL_LISTENING:
		return on_listening(r, line, len, &l);
	case EL_STATS:
		return on_stats(r, &l);
	case EL_FATAL:
		if (!is_utf8(l.text))
			return protocol_error(r, line, len, "MESSAGE is not UTF-8 (fatal MESSAGE)");
		return take_fatal(r, l.text);
	case EL_NOTE:
	case EL_BROKEN:
		break;
	}
	return 0;
}

/* Reads what the event pipe has and handles its complete lines, split by
 * length (a NUL inside one is the line's error, not its end). Returns 1
 * when it read bytes, 0 when there were none (EAGAIN), the pipe ended
 * (r->ev_eof) or a line broke the protocol (r->protocol_error: no more
 * lines are read), -1 on an error (r->err). */
int run__read_events(struct run *r)
{
	size_t start = 0;
	char *nl;
	ssize_t n;
	int rc = 0;

	if (r->protocol_error)
		return 0;
	do {
		n = read(r->ev_fd, r->evbuf + r->evlen, sizeof(r->evbuf) - r->evlen - 1);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : run__fail(r, "event pipe: %s", strerror(errno));
	if (n == 0) {
		r->ev_eof = 1;
		return 0;
	}
	r->evlen += (size_t)n;
	while (rc == 0 && (nl = memchr(r->evbuf + start, '\n', r->evlen - start))) {
		size_t len = (size_t)(nl - (r->evbuf + start));

		*nl = '\0';
		rc = on_line(r, r->evbuf + start, len);
		start += len + 1;
	}
	if (rc < 0)
		return -1;
	/* After a line that broke the protocol, only a fatal line already
	 * read is still taken: the subject's own account of what went wrong. */
	while (rc > 0 && (nl = memchr(r->evbuf + start, '\n', r->evlen - start))) {
		size_t len = (size_t)(nl - (r->evbuf + start));

		*nl = '\0';
		if (len > 6 && memcmp(r->evbuf + start, "fatal ", 6) == 0 && !r->subject_error &&
		    !memchr(r->evbuf + start, '\0', len) && is_utf8(r->evbuf + start + 6) &&
		    take_fatal(r, r->evbuf + start + 6) < 0)
			return -1;
		start += len + 1;
	}
	if (rc > 0)
		return 0;
	r->evlen -= start;
	memmove(r->evbuf, r->evbuf + start, r->evlen);
	if (r->evlen == sizeof(r->evbuf) - 1) {
		r->lines++;
		return protocol_error(r, r->evbuf, r->evlen, "a line longer than %zu bytes, "
				      "the most a line may have", sizeof(r->evbuf) - 2) < 0 ? -1 : 0;
	}
	return 1;
}

/*
 * The subject has exited: every line it wrote is in the pipe already (its
 * writes block while the pipe is full, so it cannot have exited with one
 * unwritten). Takes them and ends the pipe, without waiting for its end of
 * file, which a child the subject left behind holding fd 4 (a wrapper
 * script's background process) would put off until the timeout. Returns
 * 0, or -1 on an error (r->err).
 */
int run__drain_events(struct run *r)
{
	int fl = fcntl(r->ev_fd, F_GETFL);
	int rc;

	if (fl < 0 || fcntl(r->ev_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return 0; /* then the pipe's end of file decides */
	while ((rc = run__read_events(r)) > 0)
		;
	if (rc < 0)
		return -1;
	r->ev_eof = 1;
	return 0;
}

int run__events_end(struct run *r)
{
	/* The subject ended in the middle of a line: the pipe's last bytes
	 * are not a line of the protocol. */
	if (r->protocol_error || r->evlen == 0 || r->timed_out)
		return 0;
	r->lines++;
	return protocol_error(r, r->evbuf, r->evlen, "the subject ended without the line's "
			      "newline") < 0 ? -1 : 0;
}
