/*
 * peer.c: the harness's built-in peer (peer.h).
 *
 * What the peer reads at a point is decided by the subject's own count of
 * bytes the kernel took (the "sync" line), never by how long the peer
 * waited; time bounds the waits only, through the run's deadline.
 */
#include "peer.h"

#include "wcutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define READ_CHUNK 262144

/* The request that opens a handed-off connection (WC_HANDOFF_UPGRADE). */
static const char upgrade_request[] =
	"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
	"Upgrade: wirecheck\r\n\r\n";

/* Whether the subject listens: role server, or any role with a handoff. */
static int subject_listens(const struct wc_peer *pe)
{
	return pe->sc->role == SC_ROLE_SERVER || pe->handoff != WC_HANDOFF_NONE;
}

static int fail(struct wc_peer *pe, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct wc_peer *pe, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pe->err, pe->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- set-up ------------------------------------------------------------- */

static int peer_listen(struct wc_peer *pe)
{
	const struct scenario *sc = pe->sc;
	/* Non-blocking: a sync point may have accepted the connection that
	 * made the listener readable in the same poll round. */
	int fd = socket(sc->transport == SC_UNIX ? AF_UNIX : AF_INET,
			SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return fail(pe, "peer socket: %s", strerror(errno));
	pe->listen_fd = fd;
	if (sc->peer_rcvbuf > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sc->peer_rcvbuf, sizeof(int)) < 0)
		return fail(pe, "peer SO_RCVBUF: %s", strerror(errno));
	if (sc->transport == SC_UNIX) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", pe->path);
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
			return fail(pe, "peer bind %s: %s", pe->path, strerror(errno));
	} else {
		struct sockaddr_in sin = { .sin_family = AF_INET };

		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
			return fail(pe, "peer bind: %s", strerror(errno));
	}
	if (listen(fd, 1024) < 0)
		return fail(pe, "peer listen: %s", strerror(errno));
	return 0;
}

/* A free TCP port of 127.0.0.1 for the program to listen on. */
static int free_port(struct wc_peer *pe)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return fail(pe, "socket: %s", strerror(errno));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	close(fd);
	if (port < 0)
		return fail(pe, "no free port for the program: %s", strerror(errno));
	return port;
}

/* peer exec, the subject the client: the program listens at {port} or
 * {unix}, and the subject starts once it does. */
static int program_listens_first(struct wc_peer *pe)
{
	struct sc_exec_address a = { pe->sc->transport, 0, pe->path, pe->sc->dir, 0 };

	if (a.transport == SC_TCP && (a.port = pe->port = free_port(pe)) < 0)
		return -1;
	if (wc_prog_start(&pe->prog, pe->sc->peer_exec, &a, pe->err, pe->errlen) < 0)
		return -1;
	wc_prog_wait_listening(&pe->prog, &a, pe->deadline_ms);
	return 0;
}

int wc_peer_init(struct wc_peer *pe, const struct scenario *sc, int handoff,
		 const char *tmpdir, int64_t deadline_ms, char *err,
		 size_t errlen)
{
	memset(pe, 0, sizeof(*pe));
	pe->sc = sc;
	pe->handoff = handoff;
	if (sc->peer_exec)
		wc_prog_init(&pe->prog, sc->peer_exec);
	pe->deadline_ms = deadline_ms;
	pe->err = err;
	pe->errlen = errlen;
	pe->listen_fd = -1;
	pe->prog.pid_fd = pe->prog.out_fd = pe->prog.err_fd = -1;
	pe->continuous = !sc_reads_at_points(sc);
	if (sc->transport == SC_UNIX)
		snprintf(pe->path, sizeof(pe->path), "%s/%s.sock", tmpdir,
			 subject_listens(pe) ? "subject" : "peer");
	pe->readbuf = malloc(READ_CHUNK);
	pe->bytes_done = calloc(sc->npeer * (size_t)sc->connections + 1, 1);
	pe->conns = calloc((size_t)sc->connections, sizeof(*pe->conns));
	if (!pe->readbuf || !pe->conns || !pe->bytes_done)
		return fail(pe, "out of memory");
	for (int i = 0; i < sc->connections; i++)
		pe->conns[i].fd = -1;
	for (int i = 0; i < sc->connections; i++) {
		struct wc_peer_conn *p = &pe->conns[i];

		p->reads = json_array();
		if (!p->reads || wc_stream_init(&p->in) < 0)
			return fail(pe, "sha256 context");
	}
	if (sc->peer_exec && handoff != WC_HANDOFF_NONE)
		return fail(pe, "a handed-off subject needs the built-in peer, which sends the "
			    "Upgrade request: not with peer exec");
	if (sc->peer_exec)
		return sc->role == SC_ROLE_CLIENT ? program_listens_first(pe) : 0;
	if (!subject_listens(pe))
		return peer_listen(pe);
	return 0;
}

void wc_peer_free(struct wc_peer *pe)
{
	if (pe->sc && pe->sc->peer_exec)
		wc_prog_free(&pe->prog);
	for (int i = 0; pe->conns && i < pe->sc->connections; i++) {
		if (pe->conns[i].fd >= 0)
			close(pe->conns[i].fd);
		wc_stream_free(&pe->conns[i].in);
		json_decref(pe->conns[i].reads);
	}
	free(pe->conns);
	free(pe->readbuf);
	free(pe->bytes_done);
	if (pe->listen_fd >= 0)
		close(pe->listen_fd);
	if (pe->path[0])
		(void)unlink(pe->path);
	memset(pe, 0, sizeof(*pe));
	pe->listen_fd = -1;
}

static int local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if (getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
		return -1;
	return ntohs(sin.sin_port);
}

void wc_peer_address_line(const struct wc_peer *pe, char *line, size_t len)
{
	const struct scenario *sc = pe->sc;
	int n = 0;

	if (pe->handoff == WC_HANDOFF_UPGRADE) {
		n = snprintf(line, len, "handoff upgrade %s\n",
			     sc->role == SC_ROLE_SERVER ? "accept" : "connect");
		if (n < 0 || (size_t)n >= len)
			n = 0;
		line += n;
		len -= (size_t)n;
	}
	if (subject_listens(pe) && sc->transport == SC_UNIX)
		snprintf(line, len, "listen unix %s", pe->path);
	else if (subject_listens(pe))
		snprintf(line, len, "listen tcp 127.0.0.1 0");
	else if (sc->transport == SC_UNIX)
		snprintf(line, len, "connect unix %s", pe->path);
	else if (sc->peer_exec)
		snprintf(line, len, "connect tcp 127.0.0.1 %d", pe->port);
	else
		snprintf(line, len, "connect tcp 127.0.0.1 %d", local_port(pe->listen_fd));
}

/* ---- reading ------------------------------------------------------------ */

/*
 * What the peer received. On a handed-off connection the subject's answer
 * comes first: it is gathered up to its blank line and left out of the
 * stream when it is a 101; any other answer (or one that does not end in
 * the buffer) goes into the stream, so that the trace shows it.
 */
static void peer_take(struct wc_peer_conn *p, const unsigned char *buf, size_t n)
{
	static const char blank[] = "\r\n\r\n";

	while (p->in_answer && n > 0) {
		p->answer[p->answer_len++] = *buf++;
		n--;
		if (p->answer_len >= 4 && memcmp(p->answer + p->answer_len - 4, blank, 4) == 0) {
			p->in_answer = 0;
			if (p->answer_len < 13 || memcmp(p->answer, "HTTP/1.1 101 ", 13) != 0)
				wc_stream_take(&p->in, p->answer, p->answer_len);
		} else if (p->answer_len == sizeof(p->answer)) {
			p->in_answer = 0;
			wc_stream_take(&p->in, p->answer, p->answer_len);
		}
	}
	if (n > 0)
		wc_stream_take(&p->in, buf, n);
}

/*
 * When the streams end. What the peer does about the end of a stream waits
 * until the script is over and every connection's stream has ended:
 * closing one connection while the subject still runs tasks on another
 * would make the order of its events depend on timing.
 */
static void peer_eof_actions(struct wc_peer *pe)
{
	const struct scenario *sc = pe->sc;

	if (pe->eof_acted || !pe->over)
		return;
	for (int i = 0; i < sc->connections; i++)
		if (pe->conns[i].fd >= 0 && !pe->conns[i].eof)
			return;
	pe->eof_acted = 1;
	for (int i = 0; i < sc->connections; i++) {
		struct wc_peer_conn *p = &pe->conns[i];

		if (p->fd < 0)
			continue;
		if (sc->peer_on_eof == SC_EOF_CLOSE) {
			close(p->fd);
			p->fd = -1;
		} else if (sc->peer_on_eof == SC_EOF_SHUTDOWN) {
			(void)shutdown(p->fd, SHUT_WR);
		}
	}
}

static int peer_act(struct wc_peer *pe, const struct sc_peer_action *a,
		    struct wc_peer_conn *p, uint64_t written);

/* Peer actions "at bytes N": the peer's own point, once it has read N bytes
 * on a connection (whatever the subject is doing then). */
static void peer_bytes_actions(struct wc_peer *pe, struct wc_peer_conn *p)
{
	const struct scenario *sc = pe->sc;
	int c = (int)(p - pe->conns);

	for (size_t i = 0; i < sc->npeer; i++) {
		const struct sc_peer_action *a = &sc->peer[i];
		unsigned char *done = &pe->bytes_done[i * (size_t)sc->connections + (size_t)c];

		if (a->at.kind != SC_AT_BYTES || *done || (a->conn >= 0 && a->conn != c) ||
		    p->in.bytes < a->at.bytes)
			continue;
		*done = 1;
		(void)peer_act(pe, a, p, 0);
	}
}

/* One read of whatever is there. Returns bytes read, 0 at EOF, -1 when
 * nothing was there. */
static ssize_t peer_read_once(struct wc_peer *pe, struct wc_peer_conn *p)
{
	ssize_t n = recv(p->fd, pe->readbuf, READ_CHUNK, MSG_DONTWAIT);

	if (n > 0) {
		peer_take(p, pe->readbuf, (size_t)n);
		peer_bytes_actions(pe, p);
		return n;
	}
	if (n == 0) {
		p->eof = 1;
		return 0;
	}
	if (errno == EAGAIN || errno == EINTR)
		return -1;
	/* ECONNRESET and the like: the stream is over. */
	p->reset = 1;
	p->eof = 1;
	return 0;
}

static int peer_accept_one(struct wc_peer *pe)
{
	int fd = accept4(pe->listen_fd, NULL, NULL, SOCK_CLOEXEC);

	/* The accepted socket is blocking (SOCK_NONBLOCK is not inherited);
	 * the peer's reads use MSG_DONTWAIT and poll. */

	if (fd < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -1;
	if (pe->accepted >= pe->sc->connections) {
		close(fd);
		return 0;
	}
	pe->conns[pe->accepted++].fd = fd;
	return 0;
}

/* Waits for fd to be readable until the deadline. 1 ready, 0 timeout. */
static int wait_readable(const struct wc_peer *pe, int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int rc;

	do {
		rc = poll(&pfd, 1, wc_ms_left(pe->deadline_ms));
	} while (rc < 0 && errno == EINTR);
	return rc > 0;
}

static int peer_accept_all(struct wc_peer *pe)
{
	while (pe->accepted < pe->sc->connections) {
		if (!wait_readable(pe, pe->listen_fd))
			return -1;
		if (peer_accept_one(pe) < 0)
			return -1;
	}
	return 0;
}

/* Reads until the peer has `until` bytes or the stream ends. */
static int peer_read_until(struct wc_peer *pe, struct wc_peer_conn *p, uint64_t until)
{
	uint64_t before = p->in.bytes;

	while (p->fd >= 0 && !p->eof && p->in.bytes < until) {
		if (!wait_readable(pe, p->fd)) {
			snprintf(pe->waiting, sizeof(pe->waiting), "at %s the peer waited for "
				 "byte %llu of connection %d, which the subject's sync line said it "
				 "had written, and had %llu", pe->point ? pe->point : "a point",
				 (unsigned long long)until, (int)(p - pe->conns),
				 (unsigned long long)p->in.bytes);
			return -1;
		}
		(void)peer_read_once(pe, p);
	}
	json_array_append_new(p->reads, json_integer((json_int_t)(p->in.bytes - before)));
	return 0;
}

/* ---- acting at points --------------------------------------------------- */

static void peer_reset(struct wc_peer_conn *p)
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

static int peer_act(struct wc_peer *pe, const struct sc_peer_action *a,
		    struct wc_peer_conn *p, uint64_t written)
{
	if (p->fd < 0)
		return 0;
	switch (a->kind) {
	case SC_PEER_READ:
		return peer_read_until(pe, p, written);
	case SC_PEER_SEND:
		/* A failure means the subject is gone: its trace says why. */
		(void)wc_write_all(p->fd, a->data, a->len);
		return 0;
	case SC_PEER_SHUTDOWN:
		(void)shutdown(p->fd, SHUT_WR);
		return 0;
	case SC_PEER_RESET:
		peer_reset(p);
		return 0;
	}
	return 0;
}

int wc_peer_at_point(struct wc_peer *pe, const char *point,
		     const uint64_t *written)
{
	const struct scenario *sc = pe->sc;

	if (sc->peer_exec) {
		pe->over |= strcmp(point, "done") == 0;
		return 0;
	}
	if (!subject_listens(pe) && peer_accept_all(pe) < 0)
		return 1; /* the deadline passed; the run reports it */
	pe->point = point;
	for (size_t i = 0; i < sc->npeer; i++) {
		const struct sc_peer_action *a = &sc->peer[i];

		if (!point_matches(&a->at, point))
			continue;
		for (int c = 0; c < sc->connections; c++)
			if (a->conn < 0 || a->conn == c)
				(void)peer_act(pe, a, &pe->conns[c], written[c]);
	}
	pe->point = NULL;
	if (strcmp(point, "done") == 0) {
		pe->continuous = 1;
		pe->over = 1;
	}
	return 0;
}

const char *wc_peer_waiting(const struct wc_peer *pe)
{
	return pe->waiting;
}

void wc_peer_subject_exited(struct wc_peer *pe)
{
	pe->continuous = 1;
	pe->over = 1;
	if (pe->sc->peer_exec)
		wc_prog_subject_exited(&pe->prog);
}

int wc_peer_connect(struct wc_peer *pe, int port)
{
	const struct scenario *sc = pe->sc;

	if (sc->peer_exec) {
		struct sc_exec_address a = { sc->transport, port, pe->path, sc->dir, 0 };

		return wc_prog_start(&pe->prog, sc->peer_exec, &a, pe->err, pe->errlen);
	}
	for (int i = 0; i < sc->connections; i++) {
		int fd = socket(sc->transport == SC_UNIX ? AF_UNIX : AF_INET,
				SOCK_STREAM | SOCK_CLOEXEC, 0);
		int rc;

		if (fd < 0)
			return fail(pe, "peer socket: %s", strerror(errno));
		if (sc->peer_rcvbuf > 0)
			(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sc->peer_rcvbuf, sizeof(int));
		if (sc->transport == SC_UNIX) {
			struct sockaddr_un sun = { .sun_family = AF_UNIX };

			snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", pe->path);
			rc = connect(fd, (struct sockaddr *)&sun, sizeof(sun));
		} else {
			struct sockaddr_in sin = { .sin_family = AF_INET };

			sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
			sin.sin_port = htons((uint16_t)port);
			rc = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		}
		if (rc < 0) {
			int err = errno;

			close(fd);
			(void)fail(pe, "peer connect: %s", strerror(err));
			/* Nothing listens where the subject said it does. */
			return err == ECONNREFUSED || err == ENOENT ? -2 : -1;
		}
		if (pe->handoff == WC_HANDOFF_UPGRADE) {
			/* A failure means the subject is gone: its trace says why. */
			(void)wc_write_all(fd, upgrade_request, sizeof(upgrade_request) - 1);
			pe->conns[pe->accepted].in_answer = 1;
		}
		pe->conns[pe->accepted++].fd = fd;
	}
	return 0;
}

/* ---- the poll loop's part ----------------------------------------------- */

int wc_peer_npollfds(const struct wc_peer *pe)
{
	return pe->sc->peer_exec ? WC_PROG_NPOLL : 1 + pe->sc->connections;
}

int wc_peer_pollfds(const struct wc_peer *pe, struct pollfd *pfd)
{
	int n = pe->sc->connections, k = 0;

	if (pe->sc->peer_exec) {
		wc_prog_pollfds(&pe->prog, pfd);
		return WC_PROG_NPOLL;
	}
	pfd[k++] = (struct pollfd){
		.fd = pe->accepted < n && pe->listen_fd >= 0 ? pe->listen_fd : -1,
		.events = POLLIN };
	for (int i = 0; i < n; i++)
		pfd[k++] = (struct pollfd){
			.fd = pe->continuous && !pe->conns[i].eof ? pe->conns[i].fd : -1,
			.events = POLLIN };
	return k;
}

int wc_peer_on_poll(struct wc_peer *pe, const struct pollfd *pfd)
{
	int n = pe->sc->connections;

	if (pe->sc->peer_exec) {
		wc_prog_on_poll(&pe->prog, pfd);
		return 0;
	}
	if (pfd[0].revents && pe->accepted < n && peer_accept_one(pe) < 0)
		return fail(pe, "peer accept: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		if (pfd[1 + i].revents && pe->conns[i].fd >= 0)
			(void)peer_read_once(pe, &pe->conns[i]);
	peer_eof_actions(pe);
	return 0;
}

void wc_peer_tick(struct wc_peer *pe)
{
	if (pe->sc->peer_exec && wc_prog_wants_tick(&pe->prog)) {
		struct pollfd none[WC_PROG_NPOLL] = { { .fd = -1 }, { .fd = -1 }, { .fd = -1 } };

		wc_prog_on_poll(&pe->prog, none);
	}
}

int wc_peer_wants_tick(const struct wc_peer *pe)
{
	return pe->sc->peer_exec && wc_prog_wants_tick(&pe->prog);
}

void wc_peer_take_rest(struct wc_peer *pe)
{
	if (pe->sc->peer_exec) {
		wc_prog_kill(&pe->prog);
		return;
	}
	for (int i = 0; i < pe->sc->connections; i++)
		while (pe->conns[i].fd >= 0 && !pe->conns[i].eof &&
		       peer_read_once(pe, &pe->conns[i]) > 0)
			;
}

int wc_peer_finished(const struct wc_peer *pe)
{
	if (pe->sc->peer_exec)
		return wc_prog_finished(&pe->prog);
	if (pe->accepted == 0)
		return 1;
	for (int i = 0; i < pe->sc->connections; i++)
		if (pe->conns[i].fd >= 0 && !pe->conns[i].eof)
			return 0;
	return 1;
}

/* ---- the trace ---------------------------------------------------------- */

static json_t *conn_json(struct wc_peer_conn *p)
{
	json_t *o = wc_stream_json(&p->in, json_pack("{s:O}", "reads", p->reads));

	if (p->reset)
		json_object_set_new(o, "reset", json_true());
	return o;
}

json_t *wc_peer_json(struct wc_peer *pe)
{
	json_t *arr;

	if (pe->sc->peer_exec)
		return wc_prog_json(&pe->prog);
	if (pe->sc->connections == 1)
		return conn_json(&pe->conns[0]);
	arr = json_array();
	for (int i = 0; i < pe->sc->connections; i++)
		json_array_append_new(arr, conn_json(&pe->conns[i]));
	return arr;
}
