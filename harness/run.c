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

#include "fi.h"
#include "peer.h"
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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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
	struct wc_shm *shm;
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
	char *script;         /* the script, written from the poll loop */
	size_t script_len, script_off;
	uint64_t lines;       /* lines the subject wrote on its event pipe */
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

/* A "sync POINT w0 w1 ..." line: the peer's actions at that point, then go. */
static int on_sync(struct run *r, char *args)
{
	char *save = NULL, *point = strtok_r(args, " ", &save);
	uint64_t *written = calloc((size_t)r->sc->connections, sizeof(uint64_t));

	if (!point || !written) {
		free(written);
		return fail(r, "bad sync line from the subject");
	}
	for (int i = 0; i < r->sc->connections; i++) {
		char *w = strtok_r(NULL, " ", &save);

		written[i] = w ? strtoull(w, NULL, 10) : 0;
	}
	if (wc_peer_at_point(&r->peer, point, written) != 0) {
		free(written);
		return 0; /* the deadline passed; the main loop reports it */
	}
	free(written);
	(void)wc_write_all(r->ctl_fd, "go\n", 3);
	return 0;
}

/* Whether pid is the harness's child or a child of it: the subject itself
 * when a wrapper (strace -f) is the child. */
static int is_subject(const struct run *r, pid_t pid)
{
	char path[64], buf[512], *close;
	int ppid = -1;
	FILE *f;

	if (pid == r->pid)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	/* "PID (COMM) STATE PPID ...": COMM may hold spaces and ')'. */
	if (fgets(buf, sizeof(buf), f) && (close = strrchr(buf, ')')))
		(void)sscanf(close + 1, " %*c %d", &ppid);
	fclose(f);
	return ppid == r->pid;
}

/* A "kill SIG [PID]" line: sends SIG to the subject (PID, when it is the
 * subject or a child of the harness's child, as under strace), then go. */
static void on_kill(struct run *r, const char *args)
{
	int sig = 0, pid = 0;
	pid_t target = r->pid;

	if (sscanf(args, "%d %d", &sig, &pid) == 2 && pid > 0 && is_subject(r, pid))
		target = pid;
	(void)kill(target, sig);
	(void)wc_write_all(r->ctl_fd, "go\n", 3);
}

static int on_line(struct run *r, char *line)
{
	r->lines++;
	if (strncmp(line, "ev ", 3) == 0) {
		char *save = NULL, *t = strtok_r(line + 3, " ", &save);
		char *c = strtok_r(NULL, " ", &save);
		char *text = strtok_r(NULL, "", &save);
		char buf[1024];

		snprintf(buf, sizeof(buf), "t%s c%s %s", t ? t : "?", c ? c : "?",
			 text ? text : "");
		json_array_append_new(r->events, json_string(buf));
		return 0;
	}
	if (strncmp(line, "sync ", 5) == 0)
		return on_sync(r, line + 5);
	if (strncmp(line, "kill ", 5) == 0) {
		on_kill(r, line + 5);
		return 0;
	}
	if (strncmp(line, "listening ", 10) == 0)
		return wc_peer_connect(&r->peer, atoi(line + 10));
	if (strncmp(line, "stats ", 6) == 0) {
		unsigned long long moved = 0, allocs = 0, copied = 0;

		if (sscanf(line + 6, "bytes_moved=%llu allocations=%llu bytes_copied=%llu",
			   &moved, &allocs, &copied) == 3) {
			json_decref(r->queue);
			r->queue = json_pack("{s:I,s:I,s:I}", "bytes_moved", (json_int_t)moved,
					     "allocations", (json_int_t)allocs,
					     "bytes_copied", (json_int_t)copied);
		}
		return 0;
	}
	if (strncmp(line, "fatal ", 6) == 0) {
		free(r->subject_error);
		r->subject_error = strdup(line + 6);
		return 0;
	}
	return 0; /* "note" lines and anything newer: not part of the trace */
}

/* Reads what the event pipe has and handles its complete lines. Returns 1
 * when it read bytes, 0 when there were none (EAGAIN) or the pipe ended
 * (r->ev_eof), -1 on an error (r->err). */
static int read_events(struct run *r)
{
	ssize_t n;
	char *start, *nl;

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
	r->evbuf[r->evlen] = '\0';
	start = r->evbuf;
	while ((nl = strchr(start, '\n'))) {
		*nl = '\0';
		if (on_line(r, start) < 0)
			return -1;
		start = nl + 1;
	}
	r->evlen -= (size_t)(start - r->evbuf);
	memmove(r->evbuf, start, r->evlen);
	if (r->evlen == sizeof(r->evbuf) - 1)
		return fail(r, "an event line longer than %zu bytes", sizeof(r->evbuf));
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
		return 0; /* then the pipe's end of file decides, as before */
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
	 * too, rather than run on as an orphan: one that spins would hold a
	 * CPU until someone noticed (one did, for 94 minutes). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
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
	(void)unsetenv("WIRECHECK_FAULTS");
	/* The harness ignores SIGPIPE, and an ignored signal stays ignored
	 * across execve: the subject starts with every signal at its default
	 * and none blocked, as a program started from a shell would. */
	{
		sigset_t none;

		(void)signal(SIGPIPE, SIG_DFL);
		(void)sigemptyset(&none);
		(void)sigprocmask(SIG_SETMASK, &none, NULL);
	}
	/* No core files: whether a crash dumps core would then depend on the
	 * machine's ulimit, and the trace's exit.core must not. */
	{
		struct rlimit nocore = { 0, 0 };

		(void)setrlimit(RLIMIT_CORE, &nocore);
	}
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

static int spawn(struct run *r)
{
	int ctl[2], ev[2], errp[2], shm, rc;
	char address[160], *script;
	pid_t parent;

	shm = memfd_create("wirecheck-counters", MFD_CLOEXEC);
	if (shm < 0 || ftruncate(shm, sizeof(struct wc_shm)) < 0)
		return fail(r, "memfd: %s", strerror(errno));
	r->shm = mmap(NULL, sizeof(struct wc_shm), PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
	if (r->shm == MAP_FAILED) {
		r->shm = NULL;
		close(shm);
		return fail(r, "mmap: %s", strerror(errno));
	}
	if (pipe2(ctl, O_CLOEXEC) < 0 || pipe2(ev, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		close(shm);
		return fail(r, "pipe: %s", strerror(errno));
	}
	wc_peer_address_line(&r->peer, address, sizeof(address));
	script = wc_script_build(r->sc, address);
	if (!script) {
		close(shm);
		return fail(r, "out of memory");
	}
	parent = getpid();
	r->pid = fork();
	if (r->pid < 0) {
		free(script);
		return fail(r, "fork: %s", strerror(errno));
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
	r->pid_fd = (int)syscall(SYS_pidfd_open, r->pid, 0);
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
	pid_t p;

	if (r->exited)
		return;
	do {
		p = waitpid(r->pid, &status, flags);
	} while (p < 0 && errno == EINTR);
	if (p == r->pid) {
		r->exited = 1;
		r->status = status;
		/* After the subject, nobody will ask for reads at points:
		 * the peer takes whatever is left. */
		wc_peer_subject_exited(&r->peer);
	}
}

static void on_timeout(struct run *r)
{
	r->timed_out = 1;
	/* Once reaped, the pid may belong to another process. */
	if (!r->exited)
		(void)kill(r->pid, SIGKILL);
	reap(r, 0);
	/* What the peer had by then, without waiting for more. */
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

static json_t *build_trace(struct run *r)
{
	struct wc_outcome o = { .exited = r->exited, .status = r->status,
				.timed_out = r->timed_out,
				.valgrind = r->opts->valgrind,
				.error = r->subject_error };

	return wc_trace_build(r->sc, &o, wc_peer_json(&r->peer), r->events,
			      r->queue, &r->shm->counters);
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
	if (!r->events)
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
		(void)kill(r->pid, SIGKILL);
		reap(r, 0);
	}
	if (r->opts->valgrind)
		dump_valgrind_log(r);
	wc_peer_free(&r->peer);
	free(r->script);
	free(r->subject_error);
	json_decref(r->events);
	json_decref(r->queue);
	if (r->shm)
		munmap(r->shm, sizeof(struct wc_shm));
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
	if (rc == 0)
		*trace = build_trace(&r);
	/* A program that does not speak the subject protocol (/bin/true, a
	 * server of one's own given as --subject) ends with no event and no
	 * error: its trace, and a golden made from it, would hold nothing. */
	if (rc == 0 && r.lines == 0 && r.exited && !r.timed_out)
		fprintf(stderr, "wirecheck run: warning: the subject %s wrote nothing on its event "
			"pipe (fd 4) before it ended: does it speak the subject protocol? "
			"(docs/subject-protocol.md; a program of one's own runs under "
			"`wirecheck exec`)\n", opts->subject);
	teardown(&r);
	return rc;
}
