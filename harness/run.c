/*
 * run.c: one run of a scenario.
 *
 * The harness is single-threaded: one poll() loop over the subject's event
 * pipe, its pidfd, the peer's listener and the peer's connections. Time is
 * used for one thing only, the run's deadline: what the peer reads at a
 * point is decided by the subject's own count of bytes the kernel took
 * (the "sync" line), never by how long the peer waited.
 */
#include "run.h"

#include "fi.h"
#include "protocol.h"
#include "rs.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#define HEX_LIMIT 4096        /* streams up to this size get a hex dump */
#define READ_CHUNK 262144
#define VALGRIND_SLOWDOWN 10  /* the timeout is multiplied by this */
#define VALGRIND_ERROR_EXIT 97
#define PID_POLL_MS 20

struct peer {
	int fd;               /* -1 before accept and after close */
	uint64_t received;
	EVP_MD_CTX *sha;
	unsigned char head[HEX_LIMIT];
	int eof;
	int reset;            /* the subject reset the connection */
	json_t *reads;
};

struct run {
	const struct scenario *sc;
	const struct run_options *opts;
	char *err;
	size_t errlen;
	char tmpdir[64];
	char peer_path[100];
	int listen_fd;
	int ctl_fd;
	int ev_fd;
	int pid_fd;
	pid_t pid;
	struct wc_shm *shm;
	struct peer *peers;
	int accepted;
	int continuous;       /* the peer reads whenever bytes arrive */
	int done;             /* the subject's script is over ("sync done") */
	unsigned char *bytes_done; /* [npeer * connections]: "at bytes" acted */
	int eof_acted;        /* the peer acted on the end of every stream */
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
	unsigned char *readbuf;
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

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int time_left(const struct run *r)
{
	int64_t left = r->deadline_ms - now_ms();

	return left < 0 ? 0 : (int)(left > 1000000 ? 1000000 : left);
}

static int write_all(int fd, const void *buf, size_t len)
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

/* ---- the peer ------------------------------------------------------------ */

static int peer_listen(struct run *r)
{
	const struct scenario *sc = r->sc;
	/* Non-blocking: a sync point may have accepted the connection that
	 * made the listener readable in the same poll round. */
	int fd = socket(sc->transport == SC_UNIX ? AF_UNIX : AF_INET,
			SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return fail(r, "peer socket: %s", strerror(errno));
	r->listen_fd = fd;
	if (sc->peer_rcvbuf > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sc->peer_rcvbuf, sizeof(int)) < 0)
		return fail(r, "peer SO_RCVBUF: %s", strerror(errno));
	if (sc->transport == SC_UNIX) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		snprintf(r->peer_path, sizeof(r->peer_path), "%s/peer.sock", r->tmpdir);
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", r->peer_path);
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			return fail(r, "peer bind %s: %s", r->peer_path, strerror(errno));
	} else {
		struct sockaddr_in sin = { .sin_family = AF_INET };

		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
			return fail(r, "peer bind: %s", strerror(errno));
	}
	if (listen(fd, 1024) < 0)
		return fail(r, "peer listen: %s", strerror(errno));
	return 0;
}

static int local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if (getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
		return -1;
	return ntohs(sin.sin_port);
}

static void peer_take(struct peer *p, const unsigned char *buf, size_t n)
{
	if (p->received < HEX_LIMIT) {
		size_t room = HEX_LIMIT - (size_t)p->received;

		memcpy(p->head + p->received, buf, n < room ? n : room);
	}
	p->received += n;
	(void)EVP_DigestUpdate(p->sha, buf, n);
}

/* The stream of p is over. What the peer does about it waits until the
 * script is done and every connection's stream is over (peer_eof_actions):
 * closing one connection while the subject still runs tasks on another
 * would make the order of its events depend on timing. */
static void peer_on_eof(struct run *r, struct peer *p)
{
	(void)r;
	p->eof = 1;
}

static void peer_eof_actions(struct run *r)
{
	if (r->eof_acted || !(r->done || r->exited))
		return;
	for (int i = 0; i < r->sc->connections; i++)
		if (r->peers[i].fd >= 0 && !r->peers[i].eof)
			return;
	r->eof_acted = 1;
	for (int i = 0; i < r->sc->connections; i++) {
		struct peer *p = &r->peers[i];

		if (p->fd < 0)
			continue;
		if (r->sc->peer_on_eof == SC_EOF_CLOSE) {
			close(p->fd);
			p->fd = -1;
		} else if (r->sc->peer_on_eof == SC_EOF_SHUTDOWN) {
			(void)shutdown(p->fd, SHUT_WR);
		}
	}
}

static int peer_act(struct run *r, const struct sc_peer_action *a,
		    struct peer *p, uint64_t written);

/* Peer actions "at bytes N": the peer's own point, once it has read N bytes
 * on a connection (whatever the subject is doing then). */
static void peer_bytes_actions(struct run *r, struct peer *p)
{
	int c = (int)(p - r->peers);

	for (size_t i = 0; i < r->sc->npeer; i++) {
		const struct sc_peer_action *a = &r->sc->peer[i];
		unsigned char *done = &r->bytes_done[i * (size_t)r->sc->connections + (size_t)c];

		if (a->at.kind != SC_AT_BYTES || *done || (a->conn >= 0 && a->conn != c) ||
		    p->received < a->at.bytes)
			continue;
		*done = 1;
		(void)peer_act(r, a, p, 0);
	}
}

/* One read of whatever is there. Returns bytes read, 0 at EOF, -1 when
 * nothing was there. */
static ssize_t peer_read_once(struct run *r, struct peer *p)
{
	ssize_t n = recv(p->fd, r->readbuf, READ_CHUNK, MSG_DONTWAIT);

	if (n > 0) {
		peer_take(p, r->readbuf, (size_t)n);
		peer_bytes_actions(r, p);
		return n;
	}
	if (n == 0) {
		peer_on_eof(r, p);
		return 0;
	}
	if (errno == EAGAIN || errno == EINTR)
		return -1;
	/* ECONNRESET and the like: the stream is over. */
	p->reset = 1;
	peer_on_eof(r, p);
	return 0;
}

static int peer_accept_one(struct run *r)
{
	int fd = accept4(r->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	/* The accepted socket is blocking (SOCK_NONBLOCK is not inherited);
	 * the peer's reads use MSG_DONTWAIT and poll. */

	if (fd < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (r->accepted >= r->sc->connections) {
		close(fd);
		return 0;
	}
	r->peers[r->accepted++].fd = fd;
	return 0;
}

/* Waits for fd to be readable until the deadline. 1 ready, 0 timeout. */
static int wait_readable(struct run *r, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;

	do {
		rc = poll(&pfd, 1, time_left(r));
	} while (rc < 0 && errno == EINTR);
	return rc > 0;
}

static int peer_accept_all(struct run *r)
{
	while (r->accepted < r->sc->connections) {
		if (!wait_readable(r, r->listen_fd))
			return -1;
		if (peer_accept_one(r) < 0)
			return -1;
	}
	return 0;
}

/* Reads until the peer has `until` bytes or the stream ends. */
static int peer_read_until(struct run *r, struct peer *p, uint64_t until)
{
	uint64_t before = p->received;

	while (p->fd >= 0 && !p->eof && p->received < until) {
		if (!wait_readable(r, p->fd))
			return -1;
		(void)peer_read_once(r, p);
	}
	json_array_append_new(p->reads, json_integer((json_int_t)(p->received - before)));
	return 0;
}

static void peer_reset(struct peer *p)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (p->fd < 0)
		return;
	/* SO_LINGER 0: close() sends RST instead of FIN. */
	(void)setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(p->fd);
	p->fd = -1;
	p->eof = 1;
}

static int point_matches(const struct sc_point *at, const char *point)
{
	if (at->kind == SC_AT_START)
		return strcmp(point, "start") == 0;
	if (at->kind == SC_AT_DONE)
		return strcmp(point, "done") == 0;
	if (at->kind == SC_AT_CHECKPOINT)
		return strncmp(point, "checkpoint:", 11) == 0 && atoi(point + 11) == at->task;
	return strncmp(point, "task:", 5) == 0 && atoi(point + 5) == at->task;
}

static int peer_act(struct run *r, const struct sc_peer_action *a,
		    struct peer *p, uint64_t written)
{
	if (p->fd < 0)
		return 0;
	switch (a->kind) {
	case SC_PEER_READ:
		return peer_read_until(r, p, written);
	case SC_PEER_SEND:
		if (p->fd >= 0 && write_all(p->fd, a->data, a->len) < 0)
			return 0; /* the subject is gone: its trace says why */
		return 0;
	case SC_PEER_SHUTDOWN:
		if (p->fd >= 0)
			(void)shutdown(p->fd, SHUT_WR);
		return 0;
	case SC_PEER_RESET:
		peer_reset(p);
		return 0;
	}
	return 0;
}

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
	if (r->sc->role == SC_ROLE_CLIENT && peer_accept_all(r) < 0) {
		free(written);
		return 0; /* the deadline passed; the main loop reports it */
	}
	for (size_t i = 0; i < r->sc->npeer; i++) {
		const struct sc_peer_action *a = &r->sc->peer[i];

		if (!point_matches(&a->at, point))
			continue;
		for (int c = 0; c < r->sc->connections; c++)
			if (a->conn < 0 || a->conn == c)
				(void)peer_act(r, a, &r->peers[c], written[c]);
	}
	if (strcmp(point, "done") == 0) {
		r->continuous = 1;
		r->done = 1;
	}
	free(written);
	(void)write_all(r->ctl_fd, "go\n", 3);
	return 0;
}

/* The subject listens (role server): connect every peer. */
static int on_listening(struct run *r, const char *args)
{
	int port = atoi(args);

	for (int i = 0; i < r->sc->connections; i++) {
		int fd = socket(r->sc->transport == SC_UNIX ? AF_UNIX : AF_INET,
				SOCK_STREAM | SOCK_CLOEXEC, 0);
		int rc;

		if (fd < 0)
			return fail(r, "peer socket: %s", strerror(errno));
		if (r->sc->peer_rcvbuf > 0)
			(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &r->sc->peer_rcvbuf, sizeof(int));
		if (r->sc->transport == SC_UNIX) {
			struct sockaddr_un sun = { .sun_family = AF_UNIX };

			snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", r->peer_path);
			rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
		} else {
			struct sockaddr_in sin = { .sin_family = AF_INET };

			sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			sin.sin_port = htons((uint16_t)port);
			rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		}
		if (rc < 0) {
			close(fd);
			return fail(r, "peer connect: %s", strerror(errno));
		}
		r->peers[r->accepted++].fd = fd;
	}
	return 0;
}

/* ---- the subject's event pipe ------------------------------------------- */

static int on_line(struct run *r, char *line)
{
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
		(void)kill(r->pid, atoi(line + 5));
		(void)write_all(r->ctl_fd, "go\n", 3);
		return 0;
	}
	if (strncmp(line, "listening ", 10) == 0)
		return on_listening(r, line + 10);
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

static int read_events(struct run *r)
{
	ssize_t n = read(r->ev_fd, r->evbuf + r->evlen, sizeof(r->evbuf) - r->evlen - 1);
	char *start, *nl;

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : fail(r, "event pipe: %s", strerror(errno));
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
	return 0;
}

/* ---- the script --------------------------------------------------------- */

struct sbuf {
	char *s;
	size_t len, cap;
	int oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || b->oom)
		return;
	if (b->len + (size_t)n + 1 > b->cap) {
		size_t cap = (b->cap + (size_t)n + 1) * 2;
		char *s = realloc(b->s, cap);

		if (!s) {
			b->oom = 1;
			return;
		}
		b->s = s;
		b->cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static const char *op_word[] = {
	"write", "end", "destroy", "destroy-soon", "cork", "uncork",
	"pause", "resume", "signal", "disarm", "checkpoint", "ignore",
	"abort", "exit", "execve", "await-drained", "write-owned", "overwrite",
};

static void script_op(struct sbuf *b, const struct sc_op *op)
{
	sb_printf(b, "op %s conn=%d len=%zu fill=%d cb=%d micro=%d sig=%d ext=%d",
		  op_word[op->kind], op->conn, op->len, op->fill, op->cb,
		  op->microtask, op->sig, op->external);
	if (op->data) {
		sb_printf(b, " hex=");
		for (size_t i = 0; i < op->len; i++)
			sb_printf(b, "%02x", op->data[i]);
	}
	sb_printf(b, "\n");
}

static char *build_script(struct run *r)
{
	const struct scenario *sc = r->sc;
	struct sbuf b = { 0 };

	for (size_t i = 0; i < sc->nvariants; i++) {
		const char *eq = strchr(sc->variants[i].text, '=');

		sb_printf(&b, "variant %.*s %s\n", (int)(eq - sc->variants[i].text),
			  sc->variants[i].text, eq + 1);
	}
	for (size_t i = 0; i < sc->nfaults; i++)
		sb_printf(&b, "fault %s\n", sc->faults[i].text);
	sb_printf(&b, "connections %d\nhalf-open %d\n", sc->connections, sc->allow_half_open);
	if (sc->role == SC_ROLE_SERVER) {
		if (sc->transport == SC_UNIX) {
			snprintf(r->peer_path, sizeof(r->peer_path), "%s/subject.sock", r->tmpdir);
			sb_printf(&b, "listen unix %s\n", r->peer_path);
		} else {
			sb_printf(&b, "listen tcp 127.0.0.1 0\n");
		}
	} else if (sc->transport == SC_UNIX) {
		sb_printf(&b, "connect unix %s\n", r->peer_path);
	} else {
		sb_printf(&b, "connect tcp 127.0.0.1 %d\n", local_port(r->listen_fd));
	}
	for (size_t i = 0; i < sc->npeer; i++) {
		if (sc->peer[i].at.kind == SC_AT_START)
			sb_printf(&b, "sync start\n");
		else if (sc->peer[i].at.kind == SC_AT_TASK)
			sb_printf(&b, "sync task %d\n", sc->peer[i].at.task);
	}
	for (size_t i = 0; i < sc->ntasks; i++) {
		sb_printf(&b, "task %d\n", sc->tasks[i].conn);
		for (size_t k = 0; k < sc->tasks[i].nops; k++)
			script_op(&b, &sc->tasks[i].ops[k]);
		for (size_t k = 0; k < sc->ntsignals; k++) {
			const struct sc_task_signal *ts = &sc->tsignals[k];
			struct sc_op op = { .kind = SC_OP_SIGNAL, .conn = -1, .fill = -1,
					    .sig = ts->sig, .external = ts->external };

			if ((size_t)ts->task == i + 1)
				script_op(&b, &op);
		}
		sb_printf(&b, "endblock\n");
	}
	for (size_t i = 0; i < sc->nhandlers; i++) {
		sb_printf(&b, "handler %s %d\n", sc_event_names[sc->handlers[i].event], sc->handlers[i].conn);
		for (size_t k = 0; k < sc->handlers[i].nops; k++)
			script_op(&b, &sc->handlers[i].ops[k]);
		sb_printf(&b, "endblock\n");
	}
	sb_printf(&b, "run\n");
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* ---- spawning ------------------------------------------------------------- */

static void child_exec(struct run *r, int ctl, int ev, int shm)
{
	char vglog[128];
	char *argv[16];
	int i = 0;

	/* Move the three fds out of the way, then to 3, 4, 5. */
	ctl = fcntl(ctl, F_DUPFD_CLOEXEC, 10);
	ev = fcntl(ev, F_DUPFD_CLOEXEC, 10);
	shm = fcntl(shm, F_DUPFD_CLOEXEC, 10);
	if (ctl < 0 || ev < 0 || shm < 0 || dup2(ctl, WC_FD_CTL) < 0 ||
	    dup2(ev, WC_FD_EVENTS) < 0 || dup2(shm, WC_FD_SHM) < 0)
		_exit(126);
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
	execvp(argv[0], argv);
	_exit(127);
}

static int spawn(struct run *r)
{
	int ctl[2], ev[2], shm;
	char *script;
	int rc;

	shm = memfd_create("wirecheck-counters", MFD_CLOEXEC);
	if (shm < 0 || ftruncate(shm, sizeof(struct wc_shm)) < 0)
		return fail(r, "memfd: %s", strerror(errno));
	r->shm = mmap(NULL, sizeof(struct wc_shm), PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
	if (r->shm == MAP_FAILED) {
		r->shm = NULL;
		close(shm);
		return fail(r, "mmap: %s", strerror(errno));
	}
	if (pipe2(ctl, O_CLOEXEC) < 0 || pipe2(ev, O_CLOEXEC) < 0) {
		close(shm);
		return fail(r, "pipe: %s", strerror(errno));
	}
	script = build_script(r);
	if (!script) {
		close(shm);
		return fail(r, "out of memory");
	}
	r->pid = fork();
	if (r->pid < 0) {
		free(script);
		return fail(r, "fork: %s", strerror(errno));
	}
	if (r->pid == 0)
		child_exec(r, ctl[0], ev[1], shm);
	close(ctl[0]);
	close(ev[1]);
	close(shm);
	r->ctl_fd = ctl[1];
	r->ev_fd = ev[0];
	/* Without pidfd_open (old kernels, or the harness itself under
	 * valgrind 3.19, which does not know the call), the loop polls
	 * waitpid() every PID_POLL_MS instead. */
	r->pid_fd = (int)syscall(SYS_pidfd_open, r->pid, 0);
	/* The subject reads the whole script before it does anything, so a
	 * blocking write cannot deadlock; a subject that died gives EPIPE. */
	rc = write_all(r->ctl_fd, script, strlen(script));
	free(script);
	(void)rc;
	return 0;
}

/* ---- the main loop ------------------------------------------------------- */

static int all_peers_done(const struct run *r)
{
	for (int i = 0; i < r->sc->connections; i++)
		if (r->peers[i].fd >= 0 && !r->peers[i].eof)
			return 0;
	return 1;
}

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
		 * take whatever is left. */
		r->continuous = 1;
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
	for (int i = 0; i < r->sc->connections; i++)
		while (r->peers[i].fd >= 0 && !r->peers[i].eof &&
		       peer_read_once(r, &r->peers[i]) > 0)
			;
}

static int loop(struct run *r)
{
	int n = r->sc->connections;
	struct pollfd *pfd = calloc((size_t)n + 3, sizeof(*pfd));

	if (!pfd)
		return fail(r, "out of memory");
	while (!(r->exited && r->ev_eof && (all_peers_done(r) || r->accepted == 0))) {
		int k = 0, rc;

		pfd[k++] = (struct pollfd){ .fd = r->ev_eof ? -1 : r->ev_fd, .events = POLLIN };
		pfd[k++] = (struct pollfd){ .fd = r->exited ? -1 : r->pid_fd, .events = POLLIN };
		pfd[k++] = (struct pollfd){ .fd = r->accepted < n && r->listen_fd >= 0 ? r->listen_fd : -1,
					    .events = POLLIN };
		for (int i = 0; i < n; i++)
			pfd[k++] = (struct pollfd){
				.fd = r->continuous && !r->peers[i].eof ? r->peers[i].fd : -1,
				.events = POLLIN };
		rc = poll(pfd, (nfds_t)k, r->pid_fd < 0 && !r->exited &&
			  time_left(r) > PID_POLL_MS ? PID_POLL_MS : time_left(r));
		if (rc < 0 && errno == EINTR)
			continue;
		if (r->pid_fd < 0)
			reap(r, WNOHANG);
		if (rc == 0 && time_left(r) > 0)
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
		if (pfd[2].revents && r->accepted < n && peer_accept_one(r) < 0) {
			free(pfd);
			return fail(r, "peer accept: %s", strerror(errno));
		}
		for (int i = 0; i < n; i++)
			if (pfd[3 + i].revents && r->peers[i].fd >= 0)
				(void)peer_read_once(r, &r->peers[i]);
		peer_eof_actions(r);
		if (r->exited && r->accepted == 0 && r->ev_eof)
			break;
	}
	free(pfd);
	return 0;
}

/* ---- the trace ------------------------------------------------------------ */

static json_t *peer_json(struct peer *p)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];
	json_t *o;

	(void)EVP_DigestFinal_ex(p->sha, md, &mdlen);
	for (unsigned int i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	o = json_pack("{s:I,s:s,s:O}", "bytes", (json_int_t)p->received,
		      "sha256", hex, "reads", p->reads);
	if (p->received <= HEX_LIMIT) {
		char *dump = malloc(2 * (size_t)p->received + 1);

		if (dump) {
			for (uint64_t i = 0; i < p->received; i++)
				snprintf(dump + 2 * i, 3, "%02x", p->head[i]);
			dump[2 * p->received] = '\0';
			json_object_set_new(o, "hex", json_string(dump));
			free(dump);
		}
	}
	if (p->reset)
		json_object_set_new(o, "reset", json_true());
	return o;
}

static json_t *exit_json(struct run *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
	if (!r->exited) {
		json_object_set_new(o, "code", json_null());
	} else if (WIFEXITED(r->status)) {
		int code = WEXITSTATUS(r->status);

		if (r->opts->valgrind && code == VALGRIND_ERROR_EXIT)
			json_object_set_new(o, "valgrind", json_string("errors"));
		else if (r->opts->valgrind)
			json_object_set_new(o, "valgrind", json_string("clean"));
		json_object_set_new(o, "code", json_integer(code));
	} else if (WIFSIGNALED(r->status)) {
		const char *name = fi_signal_name(WTERMSIG(r->status));

		json_object_set_new(o, "signal", name ? json_string(name)
						      : json_integer(WTERMSIG(r->status)));
		json_object_set_new(o, "core", json_boolean(WCOREDUMP(r->status)));
	}
	if (r->subject_error)
		json_object_set_new(o, "error", json_string(r->subject_error));
	return o;
}

static json_t *syscalls_json(const struct fi_counters *c, int timing)
{
	static const char *ops[4] = { NULL, "epoll_ctl.add", "epoll_ctl.del", "epoll_ctl.mod" };
	json_t *o = json_object();

	for (int k = 0; k < FI_SYS_COUNT; k++) {
		char key[48];

		if (timing) {
			snprintf(key, sizeof(key), "%s.wouldblock", fi_sys_name(k));
			if (c->wouldblock[k])
				json_object_set_new(o, key, json_integer((json_int_t)c->wouldblock[k]));
			continue;
		}
		if (k == FI_EPOLL_WAIT)
			continue;
		json_object_set_new(o, fi_sys_name(k),
				    json_integer((json_int_t)(fi_calls(c, k) - c->wouldblock[k])));
	}
	if (timing)
		json_object_set_new(o, "epoll_wait", json_integer((json_int_t)fi_calls(c, FI_EPOLL_WAIT)));
	else
		for (int op = 1; op < 4; op++)
			json_object_set_new(o, ops[op], json_integer((json_int_t)c->ctl_ops[op]));
	return o;
}

static json_t *build_trace(struct run *r)
{
	const struct scenario *sc = r->sc;
	json_t *t = json_object(), *faults = json_array(), *variants = json_object();
	char desc[256], *line, *save = NULL;

	/* The scenario's configuration, its variants applied: the same lines
	 * the subject applied to its own. */
	rs_config_describe(&sc->config, desc, sizeof(desc));
	for (line = strtok_r(desc, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (eq) {
			*eq = '\0';
			json_object_set_new(variants, line, json_string(eq + 1));
		}
	}
	for (size_t i = 0; i < sc->nfaults; i++)
		json_array_append_new(faults, json_string(sc->faults[i].text));
	json_object_set_new(t, "scenario", json_string(sc->name));
	json_object_set_new(t, "transport", json_string(sc->transport == SC_UNIX ? "unix" : "tcp"));
	json_object_set_new(t, "variant", variants);
	json_object_set_new(t, "faults", faults);
	json_object_set_new(t, "exit", exit_json(r));
	if (sc->connections == 1) {
		json_object_set_new(t, "peer", peer_json(&r->peers[0]));
	} else {
		json_t *arr = json_array();

		for (int i = 0; i < sc->connections; i++)
			json_array_append_new(arr, peer_json(&r->peers[i]));
		json_object_set_new(t, "peer", arr);
	}
	json_object_set(t, "events", r->events);
	json_object_set_new(t, "syscalls", syscalls_json(&r->shm->counters, 0));
	json_object_set_new(t, "syscalls_timing", syscalls_json(&r->shm->counters, 1));
	json_object_set(t, "queue", r->queue ? r->queue : json_null());
	return t;
}

/* ---- set-up and tear-down ------------------------------------------------ */

static int setup(struct run *r)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(r->tmpdir, sizeof(r->tmpdir), "%s/wirecheck.XXXXXX",
		 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(r->tmpdir))
		return fail(r, "mkdtemp %s: %s", r->tmpdir, strerror(errno));
	r->readbuf = malloc(READ_CHUNK);
	r->bytes_done = calloc(r->sc->npeer * (size_t)r->sc->connections + 1, 1);
	r->peers = calloc((size_t)r->sc->connections, sizeof(*r->peers));
	r->events = json_array();
	if (!r->readbuf || !r->peers || !r->events || !r->bytes_done)
		return fail(r, "out of memory");
	for (int i = 0; i < r->sc->connections; i++) {
		struct peer *p = &r->peers[i];

		p->fd = -1;
		p->reads = json_array();
		p->sha = EVP_MD_CTX_new();
		if (!p->sha || !p->reads || EVP_DigestInit_ex(p->sha, EVP_sha256(), NULL) != 1)
			return fail(r, "sha256 context");
	}
	if (r->sc->role == SC_ROLE_CLIENT)
		return peer_listen(r);
	return 0;
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
	for (int i = 0; r->peers && i < r->sc->connections; i++) {
		if (r->peers[i].fd >= 0)
			close(r->peers[i].fd);
		EVP_MD_CTX_free(r->peers[i].sha);
		json_decref(r->peers[i].reads);
	}
	free(r->peers);
	free(r->readbuf);
	free(r->bytes_done);
	free(r->subject_error);
	json_decref(r->events);
	json_decref(r->queue);
	if (r->shm)
		munmap(r->shm, sizeof(struct wc_shm));
	if (r->listen_fd >= 0)
		close(r->listen_fd);
	if (r->ctl_fd >= 0)
		close(r->ctl_fd);
	if (r->ev_fd >= 0)
		close(r->ev_fd);
	if (r->pid_fd >= 0)
		close(r->pid_fd);
	if (r->peer_path[0])
		(void)unlink(r->peer_path);
	if (r->tmpdir[0])
		(void)rmdir(r->tmpdir);
}

int wc_run(const struct scenario *sc, const struct run_options *opts,
	   json_t **trace, char *err, size_t errlen)
{
	struct run r = { .sc = sc, .opts = opts, .err = err, .errlen = errlen,
			 .listen_fd = -1, .ctl_fd = -1, .ev_fd = -1, .pid_fd = -1 };
	int64_t timeout = sc->timeout_ms;
	int rc;

	if (opts->valgrind)
		timeout *= VALGRIND_SLOWDOWN;
	r.deadline_ms = now_ms() + timeout;
	r.continuous = !sc_reads_at_points(sc);
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
	teardown(&r);
	return rc;
}

int wc_trace_same(json_t *a, json_t *b, const char **what)
{
	static const char *fields[] = { "scenario", "variant", "faults", "transport",
					"exit", "peer", "events", "syscalls", "queue" };

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (!json_equal(json_object_get(a, fields[i]), json_object_get(b, fields[i]))) {
			*what = fields[i];
			return 0;
		}
	}
	return 1;
}
