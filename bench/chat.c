/*
 * chat.c: a broadcast chat server on the reference stack, the application
 * of oven-sh/bun#45246's "Numbers": 8 clients, every message a client sends
 * is written by the server to all 8 of them.
 *
 * Server: the parent process, on the stack's loop. A client socket's
 * on_data (one task per readable event, one recv) cuts what it got into
 * fixed 100-byte frames (partial frames wait in a per-connection buffer)
 * and writes each message frame to every client socket, one
 * rs_socket_write of 100 bytes per frame and client, without a callback.
 *
 * Clients: one forked process in plain C with 8 blocking TCP (or unix)
 * sockets. A round: every client sends its 4 messages of 100 bytes in one
 * send of 400 bytes (--messages N changes the 4), so 32 messages in and
 * 256 frames out; the round ends when every socket has received the 32
 * frames of the round, each checked
 * (type, round, sender, and each sender's messages in order). The next
 * round starts right away. Round time: CLOCK_MONOTONIC in the client
 * process, from its first send to the last frame.
 *
 * Configurations: batch=off and batch=on, in blocks of rounds that
 * alternate (off, on, then on, off, ...). Between blocks the client tells
 * the server on socket 0 that the block is done (a 'D' frame), and the
 * server switches the configuration and answers with a 'G' frame before
 * the client starts the next block; the server's counters cover only the
 * rounds of the block (the 'G' send is made before they start).
 *
 * Server sends: send + sendto + sendmsg + write + writev of fi_counters,
 * per round. The task hook splits them into the sends inside the write
 * calls and those of the end of the task (the batches), per task that
 * broadcast. The targets compare them with bounds computed from the tasks
 * that wrote, per such task and client: the design's bound, min(frames, 2)
 * sends (the first write of a task goes to the kernel in the call, the
 * later ones in one batch at the end of the task: the batching rule), and
 * the batches' own bound, 1 end-of-task send.
 *
 * TCP: TCP_NODELAY on every socket of both ends (the stack has no option
 * for it, so the server sets it on each accepted socket's fd).
 *
 * usage: chat [--unix] [--quick] [--blocks N] [--rounds N] [--messages N]
 *             [--json]
 * It prints one JSON object (--json changes nothing); the report's
 * bench_chat section renders it.
 * Exits 0 when the benchmark ran (the targets are in the JSON, PASS or FAIL),
 * 1 when something failed (a frame, a connection), 2 on a usage error.
 */
#ifndef _GNU_SOURCE
/* MAP_ANONYMOUS is an extension that a strict -std=c11 build hides
 * without it. */
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "fi.h"
#include "rs.h"

#define NCLIENTS 8
#define DEFAULT_MSGS 4 /* per client per round */
#define MAX_MSGS 64
#define FRAME 100

/* --blocks (per configuration) and --rounds (per block) when not given,
 * without and with --quick. */
static const struct bc_block_defaults block_defaults = {
	.blocks = 8, .rounds = 120, .quick_blocks = 2, .quick_rounds = 30
};

#define SLOWEST 4

/* Frame types. */
#define F_HELLO 'H'
#define F_MSG 'M'
#define F_GO 'G'
#define F_DONE 'D'

/*
 * A frame: 100 bytes.
 *   0      type
 *   1      sender (client id)
 *   2..3   seq of the message in the round (0..msgs-1)
 *   4..7   round
 *   8..11  block
 *   12..   filler
 */
struct frame_hdr {
	char type;
	uint8_t sender;
	uint16_t seq;
	uint32_t round;
	uint32_t block;
};

enum config { C_OFF, C_ON, NCONFIGS };

static const char *const config_keys[NCONFIGS] = { "off", "on" };

struct options {
	int msgs;   /* per client per round */
	int blocks; /* per configuration */
	int rounds; /* per block */
	int unix_socket;
};

/* The server's figures of one block. */
struct block_stats {
	int config;
	uint64_t sends;    /* every writing call of the block */
	uint64_t in_call;  /* of which inside the body of writing tasks */
	uint64_t at_end;   /* of which at the end of writing tasks */
	uint64_t tasks;    /* tasks that broadcast (wrote) */
	uint64_t bound_batches; /* sum over them of NCLIENTS x 1 */
	uint64_t bound_design; /* sum of NCLIENTS x min(frames, 2) */
	uint64_t messages;     /* message frames in */
	uint64_t frames;       /* frames written */
	double cpu_us;         /* the server thread's CPU time */
};

struct conn {
	struct server *srv;
	rs_socket *s;
	int id; /* from its hello, or -1 */
	unsigned char buf[FRAME];
	size_t have;
};

struct server {
	const struct options *o;
	rs_loop *loop;
	rs_listener *l;
	struct conn conns[NCLIENTS];
	int nconns;
	int hellos;
	struct conn *by_id[NCLIENTS];
	int nblocks;
	int block; /* the running block, or -1 */
	struct block_stats *stats;
	uint64_t sends0;
	double cpu0;
	/* The running task, when it broadcast. */
	int writing;
	uint64_t mark_body;
	int finished;
};

struct endpoint {
	const char *path; /* the unix socket's, or NULL over TCP */
	int port;
};

static struct endpoint the_endpoint;

/* ------------------------------------------------------------------------ */
/* Small helpers.                                                           */

static void frame_make(unsigned char *f, char type, int sender, int seq,
		       int round, int block)
{
	struct frame_hdr h = { type, (uint8_t)sender, (uint16_t)seq,
			       (uint32_t)round, (uint32_t)block };

	memcpy(f, &h, sizeof(h));
	for (size_t i = sizeof(h); i < FRAME; i++)
		f[i] = (unsigned char)('a' + (i + (size_t)sender) % 26);
}

static struct frame_hdr frame_read(const unsigned char *f)
{
	struct frame_hdr h;

	memcpy(&h, f, sizeof(h));
	return h;
}

/* The configuration of block b: pairs off,on then on,off, alternating. */
static int block_config(int b)
{
	int pair = b / NCONFIGS, i = b % NCONFIGS;

	return pair % 2 == 0 ? i : NCONFIGS - 1 - i;
}

/* ------------------------------------------------------------------------ */
/* The clients: one process, 8 blocking sockets.                            */

struct client_sock {
	int fd;
	unsigned char buf[FRAME];
	size_t have;
	int frames;              /* of this round */
	int next_seq[NCLIENTS];  /* per sender, in this round */
};

static int client_connect(const struct endpoint *e)
{
	int fd = bc_connect(e->path, e->port);

	if (e->path == NULL && bc_set_nodelay(fd) != 0)
		bc_die("setsockopt(TCP_NODELAY): %s", strerror(errno));
	return fd;
}

/* Checks one frame a client socket received in round r of block b. */
static void client_frame(struct client_sock *c, int self, int r, int b)
{
	struct frame_hdr h = frame_read(c->buf);
	unsigned char want[FRAME];

	if (h.type != F_MSG || h.sender >= NCLIENTS || (int)h.round != r ||
	    (int)h.block != b)
		bc_die("client %d: unexpected frame (type %d, sender %d, round "
		       "%" PRIu32 ", block %" PRIu32 ") in round %d of block "
		       "%d",
		       self, h.type, h.sender, h.round, h.block, r, b);
	if (h.seq != c->next_seq[h.sender])
		bc_die("client %d: message %d of client %d came before message "
		       "%d", self, h.seq, h.sender, c->next_seq[h.sender]);
	frame_make(want, F_MSG, h.sender, h.seq, r, b);
	if (memcmp(want, c->buf, FRAME) != 0)
		bc_die("client %d: the bytes of a frame changed", self);
	c->next_seq[h.sender]++;
	c->frames++;
}

/* Reads what a readable socket has and counts its complete frames. */
static void client_read(struct client_sock *c, int self, int r, int b,
			unsigned char *tmp, size_t tmplen)
{
	ssize_t n;

	do
		n = recv(c->fd, tmp, tmplen, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		bc_die("client %d: recv: %s", self, strerror(errno));
	if (n == 0)
		bc_die("client %d: the server closed the connection", self);
	for (size_t off = 0; off < (size_t)n;) {
		size_t take = FRAME - c->have;

		if (take > (size_t)n - off)
			take = (size_t)n - off;
		memcpy(c->buf + c->have, tmp + off, take);
		c->have += take;
		off += take;
		if (c->have == FRAME) {
			c->have = 0;
			client_frame(c, self, r, b);
		}
	}
}

/* One round; returns its time in microseconds. */
static double client_round(const struct options *o, struct client_sock *cs,
			   int r, int b)
{
	unsigned char out[MAX_MSGS * FRAME], tmp[64 * 1024];
	struct pollfd p[NCLIENTS];
	int left = NCLIENTS, per_round = NCLIENTS * o->msgs;
	double t0 = bc_clock_us(CLOCK_MONOTONIC);

	for (int i = 0; i < NCLIENTS; i++) {
		cs[i].frames = 0;
		memset(cs[i].next_seq, 0, sizeof(cs[i].next_seq));
	}
	for (int i = 0; i < NCLIENTS; i++) {
		for (int m = 0; m < o->msgs; m++)
			frame_make(out + m * FRAME, F_MSG, i, m, r, b);
		if (bc_write_full(cs[i].fd, out, (size_t)o->msgs * FRAME) != 0)
			bc_die("client %d: send: %s", i, strerror(errno));
	}
	while (left > 0) {
		int n = 0;

		for (int i = 0; i < NCLIENTS; i++) {
			if (cs[i].frames < per_round)
				p[n++] = (struct pollfd){ cs[i].fd, POLLIN, 0 };
		}
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			bc_die("poll: %s", strerror(errno));
		}
		for (int k = 0; k < n; k++) {
			int i;

			if (p[k].revents == 0)
				continue;
			for (i = 0; cs[i].fd != p[k].fd; i++)
				continue;
			client_read(&cs[i], i, r, b, tmp, sizeof(tmp));
			if (cs[i].frames > per_round)
				bc_die("client %d: more frames than the "
				       "round's", i);
			if (cs[i].frames == per_round)
				left--;
		}
	}
	for (int i = 0; i < NCLIENTS; i++) {
		if (cs[i].have != 0)
			bc_die("client %d: a partial frame after the round", i);
	}
	return bc_clock_us(CLOCK_MONOTONIC) - t0;
}

/* The clients' process. times: [block][round], shared with the parent. */
static int client_main(int port_fd, const struct options *o, double *times)
{
	struct client_sock cs[NCLIENTS];
	unsigned char f[FRAME];
	int nblocks = o->blocks * NCONFIGS;

	bc_set_prog("chat clients");
	if (bc_read_full(port_fd, &the_endpoint.port, sizeof(int)) != 0)
		bc_die("the server did not start");
	if (close(port_fd) != 0)
		bc_die("close: %s", strerror(errno));
	memset(cs, 0, sizeof(cs));
	for (int i = 0; i < NCLIENTS; i++) {
		cs[i].fd = client_connect(&the_endpoint);
		frame_make(f, F_HELLO, i, 0, 0, 0);
		if (bc_write_full(cs[i].fd, f, FRAME) != 0)
			bc_die("client %d: send: %s", i, strerror(errno));
	}
	for (int b = 0; b < nblocks; b++) {
		struct frame_hdr h;

		if (bc_read_full(cs[0].fd, f, FRAME) != 0)
			bc_die("no go from the server for block %d", b);
		h = frame_read(f);
		if (h.type != F_GO || (int)h.block != b)
			bc_die("unexpected frame instead of the go of block %d",
			       b);
		for (int r = 0; r < o->rounds; r++)
			times[(size_t)b * (size_t)o->rounds + (size_t)r] =
				client_round(o, cs, r, b);
		frame_make(f, F_DONE, 0, 0, 0, b);
		if (bc_write_full(cs[0].fd, f, FRAME) != 0)
			bc_die("client 0: send: %s", strerror(errno));
	}
	/* The server closes every connection after the last block. */
	for (int i = 0; i < NCLIENTS; i++) {
		ssize_t n;

		do
			n = recv(cs[i].fd, f, FRAME, 0);
		while (n < 0 && errno == EINTR);
		if (n != 0)
			bc_die("client %d: %s instead of the server's close", i,
			       n < 0 ? strerror(errno) : "bytes");
		if (close(cs[i].fd) != 0)
			bc_die("close: %s", strerror(errno));
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The server, on the reference stack.                                      */

static void server_write(struct conn *c, const unsigned char *f)
{
	int rc = rs_socket_write(c->s, f, FRAME, NULL, NULL);

	if (rc < 0)
		bc_die("rs_socket_write to client %d: %s", c->id,
		       strerror(-rc));
}

static void block_start(struct server *srv, int b)
{
	unsigned char f[FRAME];
	struct block_stats *st = &srv->stats[b];
	int rc;

	memset(st, 0, sizeof(*st));
	st->config = block_config(b);
	rc = rs_variant_set("batch", config_keys[st->config]);
	if (rc < 0)
		bc_die("rs_variant_set: %s", strerror(-rc));
	srv->block = b;
	frame_make(f, F_GO, 0, 0, 0, b);
	/* The go is not the block's: the counters start after it. It is the
	 * first write of this task, so it is sent in the call. */
	server_write(srv->by_id[0], f);
	srv->sends0 = bc_gate_writes();
	srv->cpu0 = bc_clock_us(CLOCK_THREAD_CPUTIME_ID);
}

static void block_finish(struct server *srv)
{
	struct block_stats *st = &srv->stats[srv->block];

	st->sends = bc_gate_writes() - srv->sends0;
	st->cpu_us = bc_clock_us(CLOCK_THREAD_CPUTIME_ID) - srv->cpu0;
	uint64_t msgs = (uint64_t)srv->o->rounds * NCLIENTS * srv->o->msgs;

	if (st->messages != msgs || st->frames != msgs * NCLIENTS)
		bc_die("block %d: %" PRIu64 " messages in and %" PRIu64
		       " frames out, expected %" PRIu64 " and %" PRIu64,
		       srv->block, st->messages, st->frames, msgs,
		       msgs * NCLIENTS);
	srv->block = -1;
}

static void server_finish(struct server *srv)
{
	srv->finished = 1;
	for (int i = 0; i < NCLIENTS; i++)
		rs_socket_destroy(srv->conns[i].s, 0);
}

/* One complete frame from a client. Returns 1 when it was a message (and
 * was broadcast), else 0. */
static int server_frame(struct conn *c, int broadcast_so_far)
{
	struct server *srv = c->srv;
	struct frame_hdr h = frame_read(c->buf);

	switch (h.type) {
	case F_HELLO:
		if (c->id >= 0 || h.sender >= NCLIENTS || h.seq != 0 ||
		    srv->by_id[h.sender] != NULL)
			bc_die("a bad hello (client %d)", h.sender);
		c->id = h.sender;
		srv->by_id[h.sender] = c;
		if (++srv->hellos == NCLIENTS) {
			rs_listener_close(srv->l);
			block_start(srv, 0);
		}
		return 0;
	case F_MSG:
		if (srv->block < 0 || h.sender != c->id ||
		    (int)h.block != srv->block || h.seq >= srv->o->msgs)
			bc_die("a message outside its block (client %d)",
			       c->id);
		for (int i = 0; i < NCLIENTS; i++)
			server_write(&srv->conns[i], c->buf);
		srv->stats[srv->block].messages++;
		srv->stats[srv->block].frames += NCLIENTS;
		return 1;
	case F_DONE:
		/* The clients have every frame of the block, so the server
		 * has read every message: none can be in this read. */
		if (c->id != 0 || srv->block < 0 ||
		    (int)h.block != srv->block || broadcast_so_far != 0)
			bc_die("a bad done (client %d)", c->id);
		block_finish(srv);
		if ((int)h.block + 1 < srv->nblocks)
			block_start(srv, (int)h.block + 1);
		else
			server_finish(srv);
		return 0;
	default:
		bc_die("an unknown frame type %d from client %d", h.type,
		       c->id);
	}
}

/* One task per readable event: cut the bytes into frames, broadcast each
 * message. */
static void on_data(rs_socket *s, const char *data, size_t len, void *arg)
{
	struct conn *c = arg;
	struct server *srv = c->srv;
	uint64_t before = bc_gate_writes();
	int k = 0;

	(void)s;
	while (len > 0) {
		size_t take = FRAME - c->have;

		if (take > len)
			take = len;
		memcpy(c->buf + c->have, data, take);
		c->have += take;
		data += take;
		len -= take;
		if (c->have == FRAME) {
			c->have = 0;
			k += server_frame(c, k);
		}
	}
	if (k > 0) {
		struct block_stats *st = &srv->stats[srv->block];

		srv->mark_body = bc_gate_writes();
		srv->writing = 1;
		st->tasks++;
		st->in_call += srv->mark_body - before;
		st->bound_batches += NCLIENTS;
		st->bound_design += (uint64_t)NCLIENTS * (k < 2 ? 1 : 2);
	}
}

/* The end of a task that broadcast: its end-of-task sends (the batches). */
static void task_hook(rs_loop *loop, uint64_t task, void *arg)
{
	struct server *srv = arg;

	(void)loop;
	(void)task;
	if (!srv->writing)
		return;
	srv->writing = 0;
	srv->stats[srv->block].at_end += bc_gate_writes() - srv->mark_body;
}

static void on_end(rs_socket *s, void *arg)
{
	struct conn *c = arg;

	(void)s;
	bc_die("client %d closed its connection before the end", c->id);
}

static void on_error(rs_socket *s, int code, const char *syscall, void *arg)
{
	struct conn *c = arg;

	(void)s;
	bc_die("client %d: %s: %s", c->id, syscall, strerror(code));
}

static void on_close(rs_socket *s, int had_error, void *arg)
{
	struct conn *c = arg;

	(void)s;
	if (!c->srv->finished || had_error)
		bc_die("client %d's connection closed before the end", c->id);
}

static void on_connection(rs_listener *l, rs_socket *s, void *arg)
{
	static const struct rs_socket_events events = {
		.on_data = on_data,
		.on_end = on_end,
		.on_error = on_error,
		.on_close = on_close,
	};
	struct server *srv = arg;
	struct conn *c;

	(void)l;
	if (srv->nconns == NCLIENTS)
		bc_die("more than %d connections", NCLIENTS);
	c = &srv->conns[srv->nconns++];
	c->srv = srv;
	c->s = s;
	c->id = -1;
	c->have = 0;
	rs_socket_set_events(s, &events, c);
	if (!srv->o->unix_socket && bc_set_nodelay(rs_socket_fd(s)) != 0)
		bc_die("setsockopt(TCP_NODELAY): %s", strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* The processes.                                                           */

/* Forks the clients before the server's loop exists; they wait for the
 * port (or the go of the unix path) on a pipe. Returns the pipe's write
 * end. */
static int clients_start(const struct options *o, double *times, pid_t *pid)
{
	int p[2];

	bc_pipe(p);
	*pid = bc_fork();
	if (*pid == 0) {
		if (close(p[1]) != 0)
			_exit(1);
		_exit(client_main(p[0], o, times));
	}
	if (close(p[0]) != 0)
		bc_die("close: %s", strerror(errno));
	return p[1];
}

static void server_run(struct server *srv, int port_fd)
{
	struct endpoint *e = &the_endpoint;
	int rc;

	srv->loop = bc_loop_new();
	rs_loop_set_hook(srv->loop, task_hook, srv);
	if (e->path != NULL)
		rc = rs_listen_unix(srv->loop, e->path, NULL, on_connection,
				    srv, &srv->l);
	else
		rc = rs_listen_tcp(srv->loop, "127.0.0.1", 0, NULL,
				   on_connection, srv, &srv->l);
	if (rc < 0)
		bc_die("listen: %s", strerror(-rc));
	if (e->path == NULL) {
		e->port = rs_listener_port(srv->l);
		if (e->port < 0)
			bc_die("rs_listener_port: %s", strerror(-e->port));
	}
	if (bc_write_full(port_fd, &e->port, sizeof(e->port)) != 0 ||
	    close(port_fd) != 0)
		bc_die("cannot start the clients: %s", strerror(errno));
	bc_loop_run_free(srv->loop);
	srv->loop = NULL;
	if (!srv->finished)
		bc_die("the loop ended before the last block");
}

/* ------------------------------------------------------------------------ */
/* Reduction and output.                                                    */

struct summary {
	double mean_us;
	double median_us;
	double slowest_us;  /* mean over blocks of the mean of the SLOWEST */
	double first_us;    /* mean over blocks of the first round */
	double cpu_us;      /* server CPU per round */
	double sends, in_call, at_end, other;   /* per round */
	double tasks, bound_batches, bound_design; /* per round */
	double frames, messages;                /* per round */
	size_t rounds;
};

static void summarize(const struct options *o, const struct block_stats *st,
		      const double *times, int config, struct summary *out)
{
	size_t per = (size_t)o->rounds, n = 0;
	double *all = malloc((size_t)o->blocks * per * sizeof(double));
	double *blk = malloc(per * sizeof(double));
	int nb = 0;

	if (all == NULL || blk == NULL)
		bc_die("out of memory");
	memset(out, 0, sizeof(*out));
	for (int b = 0; b < o->blocks * NCONFIGS; b++) {
		const struct block_stats *s = &st[b];
		int k = per < SLOWEST ? (int)per : SLOWEST;
		double slow = 0.0;

		if (s->config != config)
			continue;
		nb++;
		memcpy(blk, times + (size_t)b * per, per * sizeof(double));
		memcpy(all + n, blk, per * sizeof(double));
		n += per;
		out->first_us += blk[0];
		bc_sort_doubles(blk, per);
		for (int i = 0; i < k; i++)
			slow += blk[per - 1 - (size_t)i];
		out->slowest_us += slow / k;
		out->cpu_us += s->cpu_us;
		out->sends += (double)s->sends;
		out->in_call += (double)s->in_call;
		out->at_end += (double)s->at_end;
		out->tasks += (double)s->tasks;
		out->bound_batches += (double)s->bound_batches;
		out->bound_design += (double)s->bound_design;
		out->frames += (double)s->frames;
		out->messages += (double)s->messages;
	}
	/* The median first: it sorts, and the mean sums in that order. */
	out->median_us = bc_median(all, n);
	for (size_t i = 0; i < n; i++)
		out->mean_us += all[i];
	out->mean_us /= (double)n;
	out->first_us /= nb;
	out->slowest_us /= nb;
	out->rounds = n;
	out->cpu_us /= (double)n;
	out->sends /= (double)n;
	out->in_call /= (double)n;
	out->at_end /= (double)n;
	out->other = out->sends - out->in_call - out->at_end;
	out->tasks /= (double)n;
	out->bound_batches /= (double)n;
	out->bound_design /= (double)n;
	out->frames /= (double)n;
	out->messages /= (double)n;
	free(all);
	free(blk);
}

enum target { T_DESIGN, T_END, T_OFF, NTARGETS };

struct verdict {
	int pass;
	const char *what;
	double bound;
	double measured;
};

static void targets_eval(const struct summary *sm, struct verdict *v)
{
	const struct summary *on = &sm[C_ON], *off = &sm[C_OFF];

	v[T_DESIGN] = (struct verdict){
		on->sends <= on->bound_design,
		"batch=on: sends per round at most min(frames, 2) per client "
		"per task that writes to it (1 in the call + 1 batch)",
		on->bound_design, on->sends };
	v[T_END] = (struct verdict){
		on->at_end <= on->bound_batches,
		"batch=on: end-of-task sends (the batches) per round at most 1 "
		"per client per task that writes to it",
		on->bound_batches, on->at_end };
	v[T_OFF] = (struct verdict){
		off->sends == off->frames,
		"batch=off: 1 send per frame out (the baseline is unbatched)",
		off->frames, off->sends };
}

/* One configuration's figures, per round. */
static json_t *json_config(const struct summary *s)
{
	return bc_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
		       " s:o, s:o, s:o, s:o}",
		       "rounds", (json_int_t)s->rounds,
		       "mean_round_us", bc_real(s->mean_us, 3),
		       "median_round_us", bc_real(s->median_us, 3),
		       "mean_slowest4_per_block_us", bc_real(s->slowest_us, 3),
		       "first_round_per_block_us", bc_real(s->first_us, 3),
		       "server_cpu_per_round_us", bc_real(s->cpu_us, 3),
		       "sends_per_round", bc_real(s->sends, 3),
		       "sends_in_call_per_round", bc_real(s->in_call, 3),
		       "sends_at_end_of_task_per_round", bc_real(s->at_end, 3),
		       "sends_other_per_round", bc_real(s->other, 3),
		       "writing_tasks_per_round", bc_real(s->tasks, 3),
		       "bound_batches", bc_real(s->bound_batches, 3),
		       "bound_design", bc_real(s->bound_design, 3),
		       "messages_per_round", bc_real(s->messages, 1),
		       "frames_per_round", bc_real(s->frames, 1));
}

/* JSON, rendered by the report's bench_chat section. */
static void print_json(const struct options *o, int argc, char **argv,
		       const struct summary *sm, const struct bc_machine *m)
{
	struct verdict v[NTARGETS];
	json_t *report = bc_report_new(argc, argv), *configs, *targets;

	bc_set(report, "transport", json_string(o->unix_socket ? "unix" : "tcp"));
	bc_set(report, "clients", json_integer(NCLIENTS));
	bc_set(report, "messages_per_client_per_round", json_integer(o->msgs));
	bc_set(report, "frame_bytes", json_integer(FRAME));
	bc_set(report, "blocks_per_config", json_integer(o->blocks));
	bc_set(report, "rounds_per_block", json_integer(o->rounds));
	bc_report_machine(report, m);
	bc_set(report, "configs", configs = bc_pack("{}"));
	for (int c = 0; c < NCONFIGS; c++)
		bc_set(configs, config_keys[c], json_config(&sm[c]));
	bc_set(report, "ratio_mean_round_off_on",
	       bc_real(sm[C_OFF].mean_us / sm[C_ON].mean_us, 4));
	targets_eval(sm, v);
	targets = bc_pack("[]");
	for (int t = 0; t < NTARGETS; t++)
		bc_append(targets, bc_pack("{s:s, s:o, s:o, s:b}", "target", v[t].what,
					   "bound", bc_real(v[t].bound, 3),
					   "measured", bc_real(v[t].measured, 3),
					   "pass", v[t].pass));
	bc_report_targets(report, targets);
	bc_report_print(report);
}

/* ------------------------------------------------------------------------ */
/* Options and main.                                                        */

static int usage(void)
{
	fprintf(stderr,
		"usage: chat [--unix] [--quick] [--blocks N] [--rounds N] "
		"[--messages N] [--json]\n"
		"  --unix      unix sockets instead of TCP over 127.0.0.1\n"
		"  --quick     %d blocks of %d rounds per configuration "
		"(default %d of %d)\n"
		"  --blocks N  blocks per configuration\n"
		"  --rounds N  rounds per block\n"
		"  --messages N  messages per client per round, sent in one "
		"send (default %d,\n"
		"              at most %d)\n"
		"  --json      accepted; the output is JSON either way\n",
		block_defaults.quick_blocks, block_defaults.quick_rounds,
		block_defaults.blocks, block_defaults.rounds,
		DEFAULT_MSGS, MAX_MSGS);
	return 2;
}

/* --messages N, chat's own flag (see bc_flag_fn); ctx is the int it sets. */
static int messages_flag(int argc, char **argv, int *i, void *ctx)
{
	if (strcmp(argv[*i], "--messages") != 0)
		return 0;
	if (*i + 1 >= argc || bc_parse_int(argv[*i + 1], 1, MAX_MSGS, ctx) < 0)
		return -EINVAL;
	(*i)++;
	return 1;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	struct bc_block_options run;
	int msgs = DEFAULT_MSGS;

	if (bc_parse_block_options(argc, argv, &block_defaults, messages_flag,
				   &msgs, &run) < 0)
		return -EINVAL;
	*o = (struct options){ .msgs = msgs,
			       .blocks = run.blocks,
			       .rounds = run.rounds,
			       .unix_socket = run.unix_socket };
	return 0;
}

int main(int argc, char **argv)
{
	struct options o;
	struct server srv;
	struct summary sm[NCONFIGS];
	struct bc_machine m;
	double *times;
	size_t ntimes;
	pid_t pid;
	int port_fd;

	bc_set_prog("chat");
	if (parse_options(argc, argv, &o) < 0)
		return usage();
	/* A pipe to clients that died fails with EPIPE (reported), instead
	 * of killing this process silently. The clients' process inherits
	 * this, so its writes to a server that died fail the same way. */
	bc_ignore_sigpipe();
	if (o.unix_socket)
		the_endpoint.path = bc_socket_dir("/tmp/wirecheck-chat.XXXXXX");
	ntimes = (size_t)o.blocks * NCONFIGS * (size_t)o.rounds;
	times = mmap(NULL, ntimes * sizeof(double), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (times == MAP_FAILED)
		bc_die("mmap: %s", strerror(errno));
	port_fd = clients_start(&o, times, &pid);
	if (fi_init() != 0)
		bc_die("fi_init failed");
	memset(&srv, 0, sizeof(srv));
	srv.o = &o;
	srv.block = -1;
	srv.nblocks = o.blocks * NCONFIGS;
	srv.stats = calloc((size_t)srv.nblocks, sizeof(*srv.stats));
	if (srv.stats == NULL)
		bc_die("out of memory");
	m = bc_machine_start();
	server_run(&srv, port_fd);
	bc_wait_child(pid, "clients");
	bc_machine_end(&m);
	for (int c = 0; c < NCONFIGS; c++)
		summarize(&o, srv.stats, times, c, &sm[c]);
	print_json(&o, argc, argv, sm, &m);
	free(srv.stats);
	if (munmap(times, ntimes * sizeof(double)) != 0)
		bc_die("munmap: %s", strerror(errno));
	return 0;
}
