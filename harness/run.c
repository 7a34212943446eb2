/*
 * run.c: one run of a scenario.
 *
 * The harness is single-threaded: one poll() loop over the subject's event
 * pipe, its pidfd, and the peer's listener and connections (peer.c). Time
 * is used for one thing only, the run's deadline: what the peer reads at a
 * point is decided by the subject's own count of bytes the kernel took
 * (the "sync" line), never by how long the peer waited.
 */
#include "run.h"

#include "event_line.h"
#include "fi.h"
#include "peer.h"
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

#define VALGRIND_SLOWDOWN 10  /* the timeout is multiplied by this */
#define PID_POLL_MS 20

struct run {
	const struct scenario *sc;
	const struct run_options *opts;
	char *err;
	size_t errlen;
	char tmpdir[64];
	struct wc_peer peer;
	int ctl_fd;
	int ev_fd;
	int pid_fd;
	pid_t pid;
	struct fi_shm *shm;
	int exited;
	int status;
	int timed_out;
	int64_t deadline_ms;
	char evbuf[65536];
	size_t evlen;
	int ev_eof;
	json_t *events;
	json_t *queue;
	char *subject_error;
	char *protocol_error; /* "protocol: ...": the first line that broke it */
	int listened;         /* a listening line came */
	char *script;         /* the script, written from the poll loop */
	size_t script_len, script_off;
	uint64_t lines;       /* lines the subject wrote on its event pipe */
	uint64_t *written;    /* a sync line's byte counts, one per connection */
};

static int fail(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct run *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static void reap(struct run *r, int flags);

/* ---- the subject's event pipe ------------------------------------------- */

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
		return fail(r, "out of memory");
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
		return fail(r, "out of memory");
	snprintf(buf, n, "t%llu c%llu %s", (unsigned long long)l->task,
		 (unsigned long long)l->conn, l->text);
	ev = json_string(buf);
	free(buf);
	if (!ev)
		return protocol_error(r, line, len, "TEXT is not UTF-8");
	if (json_array_append_new(r->events, ev) < 0)
		return fail(r, "out of memory");
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
	return r->queue ? 0 : fail(r, "out of memory");
}

/* The MESSAGE of a "fatal MESSAGE" line, as the subject's error (the
 * last one wins). Returns 0, or -1 without memory (r->err). */
static int take_fatal(struct run *r, const char *message)
{
	free(r->subject_error);
	r->subject_error = strdup(message);
	return r->subject_error ? 0 : fail(r, "out of memory");
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
static int read_events(struct run *r)
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
		return errno == EAGAIN ? 0 : fail(r, "event pipe: %s", strerror(errno));
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
static int drain_events_after_exit(struct run *r)
{
	int fl = fcntl(r->ev_fd, F_GETFL);
	int rc;

	if (fl < 0 || fcntl(r->ev_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return 0; /* then the pipe's end of file decides */
	while ((rc = read_events(r)) > 0)
		;
	if (rc < 0)
		return -1;
	r->ev_eof = 1;
	return 0;
}

/* ---- spawning ------------------------------------------------------------- */

/* What the child tells the harness on its exec pipe when it fails. */
struct exec_failure {
	int stage;  /* EXEC_SETUP: before exec; EXEC_EXEC: exec itself */
	int err;    /* errno */
};
enum { EXEC_SETUP = 1, EXEC_EXEC = 2 };

/* In the child: reports the failure on the exec pipe and exits. */
static void child_fail(int errfd, int stage, int err)
{
	struct exec_failure f = { stage, err };

	(void)!write(errfd, &f, sizeof(f));
	_exit(127);
}

static void child_exec(struct run *r, int ctl, int ev, int shm, int errfd, pid_t parent)
{
	char vglog[128];
	char *argv[16];
	int i = 0;

	/* If the harness dies (an outer timeout's SIGKILL), the subject goes
	 * too, rather than run on as an orphan. */
	if (wc_proc_die_with_parent(parent) < 0)
		_exit(126);
	/* Move the four fds out of the way, then three of them to 3, 4, 5
	 * (the exec pipe, close-on-exec, stays above them). */
	errfd = fcntl(errfd, F_DUPFD_CLOEXEC, 10);
	if (errfd < 0)
		_exit(126);
	ctl = fcntl(ctl, F_DUPFD_CLOEXEC, 10);
	ev = fcntl(ev, F_DUPFD_CLOEXEC, 10);
	shm = fcntl(shm, F_DUPFD_CLOEXEC, 10);
	if (ctl < 0 || ev < 0 || shm < 0 || dup2(ctl, WC_FD_CTL) < 0 ||
	    dup2(ev, WC_FD_EVENTS) < 0 || dup2(shm, WC_FD_SHM) < 0)
		child_fail(errfd, EXEC_SETUP, errno);
	/* The harness's stdout is the trace: what the subject prints (a
	 * debugging print(), an interpreter's banner) goes to its stderr,
	 * where the subject's own messages go. */
	if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
			child_fail(errfd, EXEC_SETUP, errno);
	}
	/* Signals and limits as from a shell; no core file, so that the
	 * trace's exit.core does not depend on the machine's ulimit. */
	wc_proc_shell_defaults();
	if (r->opts->valgrind) {
		snprintf(vglog, sizeof(vglog), "--log-file=%s/valgrind.log", r->tmpdir);
		argv[i++] = "valgrind";
		argv[i++] = "--quiet";
		argv[i++] = "--error-exitcode=97";
		argv[i++] = "--leak-check=full";
		argv[i++] = "--show-leak-kinds=definite,indirect";
		argv[i++] = "--errors-for-leak-kinds=definite,indirect";
		argv[i++] = vglog;
	}
	if (r->opts->strace) {
		argv[i++] = "strace";
		argv[i++] = "-f";
		argv[i++] = "-c";
		argv[i++] = "-o";
		argv[i++] = (char *)r->opts->strace;
	}
	argv[i++] = (char *)r->opts->subject;
	argv[i] = NULL;
	/* The wrappers are found through PATH; the subject is the file named
	 * (wirecheck.c makes a bare name ./NAME), and one that is neither a
	 * binary nor a #! script fails with ENOEXEC rather than run under
	 * /bin/sh, as execvp would run it. */
	if (i > 1)
		execvp(argv[0], argv);
	else
		execv(argv[0], argv);
	child_fail(errfd, EXEC_EXEC, errno);
}

/* The interpreter a script's "#!" line names, escaped for a message
 * ("\r" for a CR), in out; 0, or -1 when path does not start with "#!". */
static int script_interpreter(const char *path, char *out, size_t outlen)
{
	char head[256];
	size_t n, o = 0;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -1;
	n = fread(head, 1, sizeof(head) - 1, f);
	fclose(f);
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return -1;
	{
		size_t k = 2;

		while (k < n && (head[k] == ' ' || head[k] == '\t'))
			k++;
		for (; k < n && head[k] != '\n' && head[k] != ' ' && head[k] != '\t' &&
		       o + 5 < outlen; k++) {
			unsigned char c = (unsigned char)head[k];

			if (c == '\r')
				o += (size_t)snprintf(out + o, outlen - o, "\\r");
			else if (c < 0x20 || c >= 0x7f)
				o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
			else
				out[o++] = (char)c;
		}
	}
	out[o] = '\0';
	return 0;
}

/*
 * After fork: waits for the child's exec (the exec pipe closes) or its
 * failure (a struct exec_failure). Returns 0 when the program runs, -2
 * when the subject cannot be executed, -1 when the set-up failed (err).
 */
static int exec_result(struct run *r, int errfd)
{
	struct exec_failure f;
	char interp[128];
	ssize_t n;

	do {
		n = read(errfd, &f, sizeof(f));
	} while (n < 0 && errno == EINTR);
	close(errfd);
	if (n != (ssize_t)sizeof(f))
		return 0;
	reap(r, 0);
	if (f.stage == EXEC_SETUP)
		return fail(r, "starting the subject: %s", strerror(f.err));
	if (r->opts->valgrind || r->opts->strace)
		return fail(r, "cannot run %s: %s", r->opts->valgrind ? "valgrind" : "strace",
			    strerror(f.err));
	if (f.err == ENOENT && script_interpreter(r->opts->subject, interp, sizeof(interp)) == 0)
		fail(r, "the subject %s cannot be executed: %s: its #! line names the "
		     "interpreter '%s'%s", r->opts->subject, strerror(f.err), interp,
		     strstr(interp, "\\r") ? ", with a CR (a file with CRLF line ends)"
					    : ", which does not exist");
	else if (f.err == ENOEXEC)
		fail(r, "the subject %s cannot be executed: %s: neither a binary nor a script "
		     "with a #! line", r->opts->subject, strerror(f.err));
	else
		fail(r, "the subject %s cannot be executed: %s", r->opts->subject,
		     strerror(f.err));
	return -2;
}

/* Closes the fds of a spawn that failed before the fork (-1: not open). */
static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static int spawn(struct run *r)
{
	/* shm, ctl[2], ev[2], errp[2]: -1 until opened */
	int fds[7] = { -1, -1, -1, -1, -1, -1, -1 }, rc;
	int *ctl = fds + 1, *ev = fds + 3, *errp = fds + 5, shm;
	char address[160], *script;
	pid_t parent;

	shm = fds[0] = memfd_create("wirecheck-counters", MFD_CLOEXEC);
	if (shm < 0 || ftruncate(shm, sizeof(struct fi_shm)) < 0) {
		rc = fail(r, "memfd: %s", strerror(errno));
		close_fds(fds, 7);
		return rc;
	}
	r->shm = mmap(NULL, sizeof(struct fi_shm), PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
	if (r->shm == MAP_FAILED) {
		r->shm = NULL;
		rc = fail(r, "mmap: %s", strerror(errno));
		close_fds(fds, 7);
		return rc;
	}
	if (pipe2(ctl, O_CLOEXEC) < 0 || pipe2(ev, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = fail(r, "pipe: %s", strerror(errno));
		close_fds(fds, 7);
		return rc;
	}
	wc_peer_address_line(&r->peer, address, sizeof(address));
	script = wc_script_build(r->sc, address);
	if (!script) {
		close_fds(fds, 7);
		return fail(r, "out of memory");
	}
	parent = getpid();
	r->pid = fork();
	if (r->pid < 0) {
		rc = fail(r, "fork: %s", strerror(errno));
		free(script);
		close_fds(fds, 7);
		return rc;
	}
	if (r->pid == 0)
		child_exec(r, ctl[0], ev[1], shm, errp[1], parent);
	close(ctl[0]);
	close(ev[1]);
	close(shm);
	close(errp[1]);
	r->ctl_fd = ctl[1];
	r->ev_fd = ev[0];
	if ((rc = exec_result(r, errp[0])) != 0) {
		free(script);
		return rc;
	}
	/* Without pidfd_open (old kernels, or the harness itself under
	 * valgrind 3.19, which does not know the call), the loop polls
	 * waitpid() every PID_POLL_MS instead. */
	r->pid_fd = wc_proc_pidfd(r->pid);
	/* The poll loop writes the script as the subject reads it, so that
	 * the deadline holds while a long script goes through the pipe. The
	 * "go" lines come after the whole script (the subject asks for them
	 * only once it has read "run"), when the pipe is empty. */
	if (fcntl(r->ctl_fd, F_SETFL, O_NONBLOCK) < 0) {
		free(script);
		return fail(r, "fcntl: %s", strerror(errno));
	}
	r->script = script;
	r->script_len = strlen(script);
	return 0;
}

/* Writes what the pipe takes of the rest of the script. A subject that
 * died (EPIPE) reads no more: the rest is dropped. */
static void write_script(struct run *r)
{
	while (r->script && r->script_off < r->script_len) {
		ssize_t n = write(r->ctl_fd, r->script + r->script_off,
				  r->script_len - r->script_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			break;
		r->script_off += (size_t)n;
	}
	free(r->script);
	r->script = NULL;
}

/* ---- the main loop ------------------------------------------------------- */

static void reap(struct run *r, int flags)
{
	int status;

	if (r->exited)
		return;
	if (wc_proc_reap(r->pid, flags, &status)) {
		r->exited = 1;
		r->status = status;
		/* After the subject, nobody will ask for reads at points:
		 * the peer takes whatever is left. */
		wc_peer_subject_exited(&r->peer);
	}
}

/* Kills the subject, and under a wrapper (strace) what it runs. */
static void kill_subject(struct run *r)
{
	if (r->opts->strace)
		wc_proc_kill_tree(r->pid);
	else
		(void)kill(r->pid, SIGKILL);
}

static void on_timeout(struct run *r)
{
	r->timed_out = 1;
	/* Once reaped, the pid may belong to another process. */
	if (!r->exited)
		kill_subject(r);
	reap(r, 0);
	/* What the peer had by then, without waiting for more. */
	wc_peer_take_rest(&r->peer);
}

/* A line broke the protocol: the run ends here, as at the deadline, the
 * subject killed if it still runs. */
static void stop_on_protocol_error(struct run *r)
{
	free(r->script);
	r->script = NULL;
	if (!r->exited)
		kill_subject(r);
	reap(r, 0);
	r->ev_eof = 1;
	wc_peer_take_rest(&r->peer);
}

static int loop(struct run *r)
{
	struct pollfd *pfd = calloc(3 + (size_t)wc_peer_npollfds(&r->peer), sizeof(*pfd));

	if (!pfd)
		return fail(r, "out of memory");
	while (!(r->exited && r->ev_eof && wc_peer_finished(&r->peer))) {
		int k = 0, rc, left = wc_ms_left(r->deadline_ms);

		pfd[k++] = (struct pollfd){ .fd = r->ev_eof ? -1 : r->ev_fd, .events = POLLIN };
		pfd[k++] = (struct pollfd){ .fd = r->exited ? -1 : r->pid_fd, .events = POLLIN };
		pfd[k++] = (struct pollfd){ .fd = r->script ? r->ctl_fd : -1, .events = POLLOUT };
		k += wc_peer_pollfds(&r->peer, pfd + k);
		rc = poll(pfd, (nfds_t)k, ((r->pid_fd < 0 && !r->exited) || wc_peer_wants_tick(&r->peer)) &&
			  left > PID_POLL_MS ? PID_POLL_MS : left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (r->pid_fd < 0)
			reap(r, WNOHANG);
		wc_peer_tick(&r->peer);
		if (rc == 0 && wc_ms_left(r->deadline_ms) > 0)
			continue;
		if (rc < 0) {
			free(pfd);
			return fail(r, "poll: %s", strerror(errno));
		}
		if (rc == 0) {
			on_timeout(r);
			break;
		}
		if (pfd[0].revents && read_events(r) < 0) {
			free(pfd);
			return -1;
		}
		if (pfd[1].revents)
			reap(r, WNOHANG);
		if (r->exited && !r->ev_eof && drain_events_after_exit(r) < 0) {
			free(pfd);
			return -1;
		}
		if (r->protocol_error) {
			stop_on_protocol_error(r);
			break;
		}
		if (pfd[2].revents)
			write_script(r);
		if (wc_peer_on_poll(&r->peer, pfd + 3) < 0) {
			free(pfd);
			return -1;
		}
	}
	free(pfd);
	return 0;
}

/*
 * Whether the subject's gate attached the counters' memfd (fd 5): the
 * reference subject maps it itself, the preload library (--subject-preload)
 * in its constructor; either writes FI_SHM_MAGIC. A stack run without the
 * preload leaves it as the harness made it, zeros, or with what it wrote
 * to fd 5 ("arm SPEC" lines meant for the preloaded gate). When the gate
 * did not attach, says so on stderr, with what fd 5 held, and returns 0.
 */
static int gate_attached(const struct run *r)
{
	const unsigned char *b = (const unsigned char *)r->shm;
	char held[16 * 4 + 1];
	size_t o = 0;

	if (r->shm->magic == FI_SHM_MAGIC && r->shm->version == FI_SHM_VERSION)
		return 1;
	for (size_t k = 0; k < 16 && b[k]; k++)
		o += (size_t)snprintf(held + o, sizeof(held) - o, b[k] >= 0x20 && b[k] < 0x7f
				      ? "%c" : "\\x%02x", b[k]);
	held[o] = '\0';
	fprintf(stderr, "wirecheck run: warning: the subject %s never attached the gate: its "
		"counters' memfd (fd 5) %s%s%s, so the trace has no syscalls and no fired calls%s. "
		"A stack not built against the gate runs with the gate preloaded: "
		"--subject-preload (docs/subjects.md, \"Faults and counters\")\n",
		r->opts->subject, o ? "holds other bytes (`" : "is still all zeros",
		o ? held : "", o ? "...`: what the subject wrote to fd 5, as `arm SPEC` lines "
				 "for a preloaded gate)" : "",
		r->sc->nfaults ? ", and none of the scenario's faults was applied" : "");
	return 0;
}

/* exit.error: a protocol error (with the subject's own fatal line, when
 * it wrote one), else the fatal line, else, when the gate never attached
 * and the scenario has fault rules, that they were not applied. NULL when
 * none; -1 and r->err without memory. */
static int exit_error(struct run *r, int attached, char **error)
{
	size_t n;

	*error = NULL;
	if (!r->protocol_error && !r->subject_error && !attached && r->sc->nfaults) {
		n = 256;
		if (!(*error = malloc(n)))
			return fail(r, "out of memory");
		snprintf(*error, n, "gate: the subject never attached the gate (fd 5): the "
			 "scenario's %zu fault rule%s not applied (a stack not built against "
			 "the gate runs with --subject-preload)", r->sc->nfaults,
			 r->sc->nfaults == 1 ? " was" : "s were");
		return 0;
	}
	if (!r->protocol_error) {
		*error = r->subject_error ? strdup(r->subject_error) : NULL;
		return r->subject_error && !*error ? fail(r, "out of memory") : 0;
	}
	n = strlen(r->protocol_error) + (r->subject_error ? strlen(r->subject_error) : 0) + 32;
	if (!(*error = malloc(n)))
		return fail(r, "out of memory");
	if (r->subject_error)
		snprintf(*error, n, "%s; its fatal line: %s", r->protocol_error, r->subject_error);
	else
		snprintf(*error, n, "%s", r->protocol_error);
	return 0;
}

static json_t *build_trace(struct run *r)
{
	struct wc_outcome o = { .exited = r->exited, .status = r->status,
				.timed_out = r->timed_out,
				.valgrind = r->opts->valgrind };
	static const struct fi_counters none;
	int attached = gate_attached(r);
	char *error;
	json_t *t;

	if (exit_error(r, attached, &error) < 0)
		return NULL;
	o.error = error;
	/* Counters the gate never wrote are not the subject's: none are
	 * reported (what fd 5 held may be any bytes). */
	t = wc_trace_build(r->sc, &o, wc_peer_json(&r->peer), r->events,
			   r->queue, attached ? &r->shm->counters : &none);
	free(error);
	if (t && !attached) {
		(void)json_object_del(t, "syscalls");
		(void)json_object_del(t, "syscalls_timing");
		(void)json_object_del(t, "fired");
	}
	return t;
}

/* ---- set-up and tear-down ------------------------------------------------ */

static int setup(struct run *r)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(r->tmpdir, sizeof(r->tmpdir), "%s/wirecheck.XXXXXX",
		 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(r->tmpdir)) {
		fail(r, "mkdtemp %s: %s", r->tmpdir, strerror(errno));
		r->tmpdir[0] = '\0';
		return -1;
	}
	r->events = json_array();
	r->written = calloc((size_t)r->sc->connections, sizeof(*r->written));
	if (!r->events || !r->written)
		return fail(r, "out of memory");
	return wc_peer_init(&r->peer, r->sc, r->opts->handoff, r->tmpdir, r->deadline_ms,
			    r->err, r->errlen);
}

static void dump_valgrind_log(const struct run *r)
{
	char path[128], buf[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/valgrind.log", r->tmpdir);
	f = fopen(path, "r");
	if (!f)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		(void)fwrite(buf, 1, n, stderr);
	fclose(f);
	(void)unlink(path);
}

static void teardown(struct run *r)
{
	if (r->pid > 0 && !r->exited) {
		kill_subject(r);
		reap(r, 0);
	}
	if (r->opts->valgrind)
		dump_valgrind_log(r);
	wc_peer_free(&r->peer);
	free(r->script);
	free(r->subject_error);
	free(r->protocol_error);
	free(r->written);
	json_decref(r->events);
	json_decref(r->queue);
	if (r->shm)
		munmap(r->shm, sizeof(struct fi_shm));
	if (r->ctl_fd >= 0)
		close(r->ctl_fd);
	if (r->ev_fd >= 0)
		close(r->ev_fd);
	if (r->pid_fd >= 0)
		close(r->pid_fd);
	if (r->tmpdir[0])
		(void)rmdir(r->tmpdir);
}

int wc_run(const struct scenario *sc, const struct run_options *opts,
	   json_t **trace, char *err, size_t errlen)
{
	struct run r = { .sc = sc, .opts = opts, .err = err, .errlen = errlen,
			 .peer = { .listen_fd = -1 },
			 .ctl_fd = -1, .ev_fd = -1, .pid_fd = -1 };
	int64_t timeout = sc->timeout_ms;
	int rc;

	if (opts->valgrind)
		timeout *= VALGRIND_SLOWDOWN;
	r.deadline_ms = (opts->started_ms ? opts->started_ms : wc_now_ms()) + timeout;
	/* A subject that dies must not take the harness with it through a
	 * write to its pipe. */
	signal(SIGPIPE, SIG_IGN);
	rc = setup(&r);
	if (rc == 0)
		rc = spawn(&r);
	if (rc == 0)
		rc = loop(&r);
	/* The subject ended in the middle of a line: the pipe's last bytes
	 * are not a line of the protocol. */
	if (rc == 0 && !r.protocol_error && r.evlen > 0 && !r.timed_out) {
		r.lines++;
		rc = protocol_error(&r, r.evbuf, r.evlen, "the subject ended without the line's "
				    "newline") < 0 ? -1 : 0;
	}
	if (rc == 0 && !(*trace = build_trace(&r)))
		rc = fail(&r, "out of memory");
	/* A program that does not speak the subject protocol (/bin/true, a
	 * server of one's own given as --subject) ends with no event and no
	 * error: its trace, and a golden made from it, would hold nothing. */
	if (rc == 0 && r.lines == 0 && r.exited && !r.timed_out)
		fprintf(stderr, "wirecheck run: warning: the subject %s wrote nothing on its event "
			"pipe (fd 4) before it ended: does it speak the subject protocol? "
			"(docs/subject-protocol.md; a program of one's own runs under "
			"`wirecheck exec`)\n", opts->subject);
	/* The peer read for bytes a sync line announced and never got: the
	 * run's timeout alone would not say where it stood. */
	if (rc == 0 && r.timed_out && wc_peer_waiting(&r.peer)[0] != '\0')
		fprintf(stderr, "wirecheck run: the run timed out %s (docs/subject-protocol.md, "
			"sync)\n", wc_peer_waiting(&r.peer));
	teardown(&r);
	return rc;
}
