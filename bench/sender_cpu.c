/*
 * sender_cpu.c: the CPU time a sender spends to hand one large payload to
 * the kernel, from end() to its completion callback: the "Sender CPU" table
 * of the oven-sh/bun pull request "socket: drain node:net's pending-write
 * queue with a cursor", for the reference stack. This is the sender's secondary
 * figure: its targets are judged on callgrind instructions, which do not
 * move between runs (bench/sender_instr.c). Its figures are one JSON object
 * (sender_cpu_json.c), which the report's bench_sender_cpu section renders;
 * node's sender is sender_node.c and sender_node.js.
 *
 * Senders:
 *   cursor   librefstack with queue=cursor: rs_socket_end(payload), timed
 *            from the call to end()'s callback.
 *   memmove  the same with queue=memmove (the legacy queue).
 *   floor    bench/floor.h's loop: send(MSG_NOSIGNAL) of what is left on a
 *            non-blocking socket, epoll_wait(EPOLLOUT) on EAGAIN, then
 *            shutdown(SHUT_WR). No stack does less to send the same bytes.
 *   copy     no sender: the queue's copy alone, P bytes appended to an
 *            empty cursor queue, then freed (the stack copies P less what
 *            its first send took). A queue that copies cannot cost less
 *            than floor + copy, so 1 + copy / floor bounds cursor / floor
 *            from below: the report prints it beside it. Its cells run in
 *            every transport and mode, only so that each is measured in
 *            the same rounds as its neighbours.
 *   node     node 20's socket.end(buf) of the same bytes to the same
 *            reader (bench/sender_node.js). Its time is process.cpuUsage()
 *            of the node process, from the connection to end()'s callback.
 *   libuv    libuv's uv_write of the whole payload (one buffer, held by
 *            reference: no copy), then uv_shutdown (bench/sender_libuv.c):
 *            the thread's CPU from the connection to the shutdown callback.
 *   node and libuv run as child processes; their clamped runs are second
 *   processes with the gate preloaded (LD_PRELOAD=libwirecheck-preload.so,
 *   WIRECHECK_FAULTS=write:short=4096,repeat=forever), whose interposition
 *   of every call is in their clamped figures, as the linked gate's is in
 *   the stack's. Without the preload library (a sanitizer build) they run
 *   unclamped only.
 * Transports: a unix socket and TCP over 127.0.0.1. Modes: unclamped, and
 * every send clamped to 4 KiB (the gate's write:short=4096,repeat=forever for
 * the stack; the floor clamps its own send length, so that both make the
 * same sends).
 *
 * The time is user plus system CPU of the sending thread, not wall time, so
 * that a loaded machine slows the figures less. It is read with
 * clock_gettime(CLOCK_THREAD_CPUTIME_ID), the scheduler's exact runtime of
 * the thread, rather than getrusage, whose user and system parts are tick
 * samples adjusted to stay monotonic: their sum is not the runtime at the
 * moment of the call. On the machine this was written on, getrusage
 * (RUSAGE_THREAD) read 0.0 ms for some 4 MiB floor runs and was 1 to 2 ms
 * off the exact clock on others, errors as large as the figures.
 *
 * The senders run on one CPU and the reader on another (sched_setaffinity:
 * the first two CPUs this process may use; node inherits the senders'), so
 * that the reader's work never runs on the sender's CPU in the middle of a
 * measured run. The reader is a separate process, forked before anything is
 * measured, that accepts one connection at a time, reads it with recv of 256 KiB until
 * EOF and reports the byte count; every run's count is checked against the
 * payload, and a mismatch aborts the benchmark.
 *
 * The senders run interleaved: each round runs every cell's senders back to
 * back, in an order that rotates by round, so that they share whatever the
 * machine does meanwhile. The tables give the median and the minimum of the
 * rounds (at least 7 by default, --quick included).
 *
 * memmove at the 4 KiB clamp is quadratic: with n = P / C, the queue moves
 * C(n-1)(n-2)/2 bytes (docs/queue-model.md); 64 MiB is about 5.5e11 bytes.
 * Cells whose prediction exceeds 20 GB are skipped and say so. Unclamped
 * cells have no prediction (the kernel decides the size of each send), so
 * they always run; the bytes they moved are reported.
 *
 * The stack copies what the kernel does not take at once into its queue, and
 * the first touch of that allocation's pages costs page faults; the floor
 * makes no copy of its own. By default every run's queue is a fresh mapping
 * (as in a process that makes one large end(), which is how the PR measured), so
 * that cost is in the figures. --warm-heap keeps freed memory in the heap
 * and faults it in before the rounds, so that the figures show the queue's
 * work without the faults of a fresh allocation.
 *
 * --subjects is the figure across subjects: end(64 MiB) over the unix socket,
 * unclamped and at the 4 KiB clamp, for the reference stack (cursor), node,
 * libuv and the floor, in one run, with a table of its own.
 *
 * usage: sender_cpu [--sizes 16,64] [--rounds N] [--quick] [--warm-heap]
 *                   [--no-node] [--node-script FILE] [--no-libuv]
 *                   [--libuv-sender FILE] [--preload FILE] [--subjects]
 *                   [--json | --json-out FILE]
 * Exits 0 when the benchmark ran, 1 when a run failed or a byte count was
 * wrong, 2 on a usage error.
 */
#ifndef _GNU_SOURCE
/* clock_gettime, the CPU-time clocks and the other POSIX interfaces used
 * here are hidden by a strict -std=c11 build without a feature macro. */
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "fi.h"
#include "floor.h"
#include "rs.h"
#include "sender_cpu.h"
#include "sender_node.h"

#ifndef SENDER_NODE_JS
#define SENDER_NODE_JS "bench/sender_node.js"
#endif
/* bench/sender_libuv and the preload library, as the build knows them; ""
 * when they are not built. */
#ifndef SENDER_LIBUV
#define SENDER_LIBUV ""
#endif
#ifndef WIRECHECK_PRELOAD
#define WIRECHECK_PRELOAD ""
#endif

/* The reader's recv size: large, so that the reader keeps up. */
#define READ_CHUNK (256 * KIB)

#define MAX_SIZE_MIB 4096
#define MAX_ROUNDS 1000
/* At least 7 rounds, so that the minimum and the median mean something. */
#define DEFAULT_ROUNDS 7
#define QUICK_ROUNDS 7

static const size_t default_sizes[] = { 16, 64 };
static const size_t quick_sizes[] = { 4, 16 };

/* The reader process and the addresses it listens on. */
struct reader {
	pid_t pid;
	int ctl;    /* write end of a pipe: closing it tells the reader to exit */
	int result; /* read end of a pipe: one uint64_t count per connection */
	const char *path; /* of the unix listener */
	int port;         /* of the TCP listener */
};

struct cell cells[NTRANSPORTS][NMODES][MAX_SIZES][NSENDERS];

/* The reader of this process. */
static struct reader the_reader = { .pid = -1, .ctl = -1, .result = -1 };

/* ------------------------------------------------------------------------ */
/* Small helpers.                                                           */

/* User plus system CPU time of this thread, in ms (see the top comment
 * for why this clock and not getrusage). */
static double cpu_ms(void)
{
	return bc_clock_us(CLOCK_THREAD_CPUTIME_ID) / 1e3;
}

/* C(n-1)(n-2)/2 for n = payload / C: what memmove moves at the clamp. */
static uint64_t predicted_moves(size_t payload, size_t clamp)
{
	uint64_t n = payload / clamp;

	return n < 3 ? 0 : (uint64_t)clamp * (n - 1) * (n - 2) / 2;
}

/* ------------------------------------------------------------------------ */
/* CPUs.                                                                    */

/*
 * Picks the first two CPUs this process may run on: the senders' and the
 * reader's. Returns 0, or -1 when fewer than two are allowed (then nothing
 * is pinned).
 */
static int cpus_pick(int *sender, int *reader)
{
	cpu_set_t set;
	int found = 0;

	*sender = *reader = -1;
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		bc_die("sched_getaffinity: %s", strerror(errno));
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		if (found++ == 0)
			*sender = c;
		else
			*reader = c;
	}
	if (found < 2) {
		*sender = *reader = -1;
		return -1;
	}
	return 0;
}

/* Pins the calling process (and what it forks later) to cpu. */
static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		bc_die("sched_setaffinity(%d): %s", cpu, strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* The reader process.                                                      */

/*
 * Reads one connection until EOF. Returns the count, or UINT64_MAX when recv
 * failed: no payload has that size, so the parent sees a mismatch.
 */
static uint64_t reader_drain(int fd, char *buf)
{
	uint64_t total = 0;

	for (;;) {
		ssize_t n = recv(fd, buf, READ_CHUNK, 0);

		if (n > 0) {
			total += (uint64_t)n;
		} else if (n == 0) {
			return total;
		} else if (errno != EINTR) {
			fprintf(stderr, "sender_cpu reader: recv: %s\n",
				strerror(errno));
			return UINT64_MAX;
		}
	}
}

/*
 * The reader: serves one connection at a time from either listener, as fast
 * as it can, until the parent closes the control pipe (which it also does by
 * dying, so the reader never outlives it). Returns the exit status.
 */
static int reader_main(int unix_fd, int tcp_fd, int ctl, int result)
{
	struct pollfd p[3] = {
		{ .fd = ctl, .events = POLLIN },
		{ .fd = unix_fd, .events = POLLIN },
		{ .fd = tcp_fd, .events = POLLIN },
	};
	char *buf = malloc(READ_CHUNK);
	int status = -1;

	if (buf == NULL)
		return 1;
	while (status < 0) {
		if (poll(p, 3, -1) < 0) {
			if (errno != EINTR)
				status = 1;
			continue;
		}
		if (p[0].revents != 0) {
			status = 0;
			break;
		}
		for (int i = 1; i < 3 && status < 0; i++) {
			uint64_t total;
			int fd;

			if (p[i].revents == 0)
				continue;
			fd = accept(p[i].fd, NULL, NULL);
			if (fd < 0) {
				if (errno != EINTR && errno != ECONNABORTED)
					status = 1;
				continue;
			}
			total = reader_drain(fd, buf);
			if (close(fd) != 0 ||
			    bc_write_full(result, &total, sizeof(total)) != 0)
				status = 1;
		}
	}
	/* Freed so that a run under valgrind, which follows the fork, finds
	 * no leak in the reader either. */
	free(buf);
	return status;
}

/*
 * Makes both listeners and forks the reader. It is forked before the payload
 * is allocated, so that the fork copies little and the sender shares no large
 * copy-on-write mapping with it while it is measured.
 */
static void reader_start(struct reader *r, int cpu)
{
	int ctl[2], result[2], unix_fd, tcp_fd;

	r->path = bc_socket_dir("/tmp/sender_cpu.XXXXXX");
	unix_fd = bc_listen_unix(r->path, 8);
	tcp_fd = bc_listen_tcp(8, &r->port);
	bc_pipe(ctl);
	bc_pipe(result);
	r->pid = bc_fork();
	if (r->pid == 0) {
		/* The child keeps the read end of ctl and the write end of
		 * result; closing the others lets each side see EOF. */
		if (close(ctl[1]) != 0 || close(result[0]) != 0)
			_exit(1);
		if (cpu >= 0)
			pin_to(cpu);
		_exit(reader_main(unix_fd, tcp_fd, ctl[0], result[1]));
	}
	if (close(ctl[0]) != 0 || close(result[1]) != 0 ||
	    close(unix_fd) != 0 || close(tcp_fd) != 0)
		bc_die("close: %s", strerror(errno));
	r->ctl = ctl[1];
	r->result = result[0];
}

/* Waits for the reader's count of the last connection and checks it. */
static void reader_expect(const struct reader *r, size_t len)
{
	uint64_t got;

	if (bc_read_full(r->result, &got, sizeof(got)) != 0)
		bc_die("the reader exited before it reported a count");
	if (got == UINT64_MAX)
		bc_die("the reader's recv failed: aborting");
	if (got != len)
		bc_die("the reader counted %" PRIu64 " bytes, the payload is "
		       "%zu: aborting",
		       got, len);
}

static void reader_stop(struct reader *r)
{
	if (close(r->ctl) != 0 || close(r->result) != 0)
		bc_die("close: %s", strerror(errno));
	r->ctl = -1;
	r->result = -1;
	bc_wait_child(r->pid, "reader");
	r->pid = -1;
}

/* ------------------------------------------------------------------------ */
/* The heap the queue allocates from.                                       */

/* Beyond the largest queue, room for the stack's small allocations that may
 * sit in front of it in the warm heap. */
#define HEAP_SLACK MIB

/*
 * Fresh (the default): a fixed mmap threshold turns off glibc's dynamic
 * one, which rises after the first large free and would then serve later
 * queues from a heap that is already faulted in. With it fixed, every run's
 * queue is a fresh mapping, as in a process that makes one large end(), and
 * a run's cost does not depend on the runs before it.
 * Warm (--warm-heap): no mmap at all and no trimming, so that every
 * allocation comes from the heap and a freed queue's pages stay faulted in
 * for the next one. The dynamic threshold cannot give this: it stops at
 * 32 MiB, above which every queue would still be a fresh mapping.
 */
static const char *heap_setup(const struct options *o)
{
	int ok;

	if (o->warm_heap)
		ok = mallopt(M_MMAP_MAX, 0) == 1 &&
		     mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
	else
		ok = mallopt(M_MMAP_THRESHOLD, 128 * 1024) == 1;
	if (ok)
		return o->warm_heap ? "warm" : "fresh";
	/* A sanitizer's allocator refuses mallopt. Its figures mean little
	 * anyway, but its run still checks the bytes and the memory, so it
	 * goes on, and the output says the heap was not set up. */
	fprintf(stderr, "sender_cpu: mallopt refused; the heap is the "
			"allocator's default\n");
	return "default";
}

/* Faults in len bytes at the top of the heap and leaves them there free. */
static void heap_prefault(size_t len)
{
	char *p = malloc(len);

	if (p == NULL)
		bc_die("cannot allocate %zu bytes", len);
	memset(p, 0, len);
	free(p);
}

/* ------------------------------------------------------------------------ */
/* The stack's senders.                                                     */

/* What sender_cpu measures of a stack run (bc_end_run's hooks' arg). */
struct stack_run {
	double t0;
	double t1;
	uint64_t sends0;
	uint64_t waits0;
	struct sample out;
};

static uint64_t gate_sends(void)
{
	const struct fi_counters *c = fi_counters();

	return fi_calls(c, FI_SEND) + fi_calls(c, FI_SENDMSG);
}

static uint64_t gate_waits(void)
{
	return fi_calls(fi_counters(), FI_EPOLL_WAIT);
}

/* The measured interval starts at end(), once the socket is connected. */
static void stack_before_end(struct bc_end_run *e, rs_socket *s)
{
	struct stack_run *r = e->arg;

	(void)s;
	r->sends0 = gate_sends();
	r->waits0 = gate_waits();
	r->t0 = cpu_ms();
}

/* end()'s callback: the measured interval stops here, before anything else. */
static void stack_on_end(struct bc_end_run *e, rs_socket *s, int status)
{
	struct stack_run *r = e->arg;

	(void)status;
	r->t1 = cpu_ms();
	r->out.sends = gate_sends() - r->sends0;
	r->out.waits = gate_waits() - r->waits0;
	r->out.moved = rs_socket_queue(s)->bytes_moved;
}

static void stack_run(const struct reader *rd, enum transport t, enum mode m,
		      enum sender snd, const char *payload, size_t len,
		      const struct fi_rule *rule, struct sample *out)
{
	static const struct bc_end_hooks hooks = {
		.before_end = stack_before_end,
		.on_end = stack_on_end,
	};
	struct stack_run r = { 0 };
	struct bc_end_run e = {
		.name = sender_names[snd], .memmove = snd == S_MEMMOVE,
		.owned = snd == S_OWNED, .payload = payload, .len = len,
		.hooks = &hooks, .arg = &r,
	};

	/* Armed before the connect, which is no write and so never clamped;
	 * fi_arm resets the rule's counts each time. */
	if (m == M_CLAMPED && fi_arm(rule) < 0)
		bc_die("cannot arm %s", CLAMP_RULE);
	bc_end_run(&e, t == T_UNIX ? rd->path : NULL, rd->port);
	/* After the loop's free, which makes no write (it closes the epoll fd
	 * and frees memory), so the rule covered every write of the run. */
	if (m == M_CLAMPED)
		fi_disarm_all();
	/* A clamp that did not apply would make a clamped figure look good:
	 * at most CLAMP bytes per send means at least len / CLAMP sends. */
	if (m == M_CLAMPED && r.out.sends < len / CLAMP)
		bc_die("%s sender: %" PRIu64 " sends for %zu bytes: the clamp "
		       "did not apply",
		       sender_names[snd], r.out.sends, len);
	r.out.cpu_ms = r.t1 - r.t0;
	*out = r.out;
}

/* ------------------------------------------------------------------------ */
/* The floor.                                                               */

static void floor_run(const struct reader *rd, enum transport t, enum mode m,
		      const char *payload, size_t len, struct sample *out)
{
	const struct floor_io io = { .clamp = m == M_CLAMPED ? CLAMP : 0 };
	struct floor_counts c = { 0 };
	/* The socket and its epoll set are made before the clock starts, as
	 * the stack's loop and its registration are. */
	struct floor_sock s = floor_open(t == T_UNIX ? rd->path : NULL,
					 rd->port);
	double t0, t1;
	int rc;

	t0 = cpu_ms();
	rc = floor_send(&io, s.fd, s.ep, &s.ev, payload, len, &c);
	t1 = cpu_ms();
	if (rc != 0)
		bc_die("floor sender: %s", strerror(rc));
	floor_close(&s);
	*out = (struct sample){ .cpu_ms = t1 - t0, .sends = c.sends,
				.waits = c.waits };
}

/* ------------------------------------------------------------------------ */
/* The rounds.                                                              */

struct bench {
	const struct options *o;
	const struct reader *rd;
	const char *payload;
	struct fi_rule rule;
	/* node's and libuv's sender processes per mode (S_NODE, S_LIBUV),
	 * NULL where they do not run. */
	struct node_sender *child[NSENDERS][NMODES];
};

/* The copy alone (see the top): timed from the append to the free, as
 * the stack's interval includes both. */
static void copy_run(const char *payload, size_t len, struct sample *out)
{
	struct rs_queue q;
	double t0, t1;
	int rc;

	rs_queue_init(&q, RS_QUEUE_CURSOR);
	t0 = cpu_ms();
	rc = rs_queue_append(&q, payload, len);
	rs_queue_free(&q);
	t1 = cpu_ms();
	if (rc < 0)
		bc_die("copy: rs_queue_append of %zu bytes: %s", len,
		       strerror(-rc));
	*out = (struct sample){ .cpu_ms = t1 - t0, .moved = q.bytes_moved };
}

static void run_one(const struct bench *b, enum transport t, enum mode m,
		    size_t size, enum sender s, struct sample *out)
{
	if (s == S_COPY) {
		copy_run(b->payload, size, out);
		return; /* no connection, so nothing for the reader */
	}
	if (s == S_NODE || s == S_LIBUV) {
		*out = (struct sample){ 0 };
		node_run(b->child[s][m], t == T_UNIX ? b->rd->path : NULL,
			 b->rd->port, size, &out->cpu_ms);
	} else if (s == S_FLOOR)
		floor_run(b->rd, t, m, b->payload, size, out);
	else
		stack_run(b->rd, t, m, s, b->payload, size, &b->rule, out);
	/* Every run's bytes are counted before the next run starts, so that
	 * the reader of one run never competes with the next sender. */
	reader_expect(b->rd, size);
}

static void cells_plan(const struct options *o, const struct bench *b)
{
	for (int t = 0; t < NTRANSPORTS; t++)
	for (int m = 0; m < NMODES; m++)
	for (size_t i = 0; i < o->nsizes; i++)
	for (int s = 0; s < NSENDERS; s++) {
		struct cell *c = &cells[t][m][i][s];

		*c = (struct cell){ 0 };
		c->na = ((s == S_NODE || s == S_LIBUV) && b->child[s][m] == NULL) ||
			(s == S_OWNED && !OWNED_BUILT) ||
			!o->want_sender[s] || !o->want_transport[t];
		if (s == S_MEMMOVE && m == M_CLAMPED) {
			c->predicted = predicted_moves(o->sizes[i], CLAMP);
			c->skipped = c->predicted > SKIP_BYTES;
		}
		if (!c->skipped && !c->na) {
			c->samples = calloc((size_t)o->rounds,
					    sizeof(*c->samples));
			if (c->samples == NULL)
				bc_die("out of memory");
		}
	}
}

/*
 * One unmeasured run of each sender that runs at all, at its smallest size,
 * so that the first round does not pay for lazy symbol binding, libfiu's
 * first lookups and cold code.
 */
static void warm_up(const struct bench *b)
{
	const struct options *o = b->o;
	struct sample unused;

	for (int t = 0; t < NTRANSPORTS; t++)
	for (int m = 0; m < NMODES; m++)
	for (int s = 0; s < NSENDERS; s++) {
		for (size_t i = 0; i < o->nsizes; i++) {
			if (cells[t][m][i][s].skipped ||
			    cells[t][m][i][s].na)
				continue;
			run_one(b, t, m, o->sizes[i], s, &unused);
			break;
		}
	}
}

static void rounds_run(const struct bench *b)
{
	const struct options *o = b->o;

	for (int r = 0; r < o->rounds; r++) {
		fprintf(stderr, "sender_cpu: round %d of %d\n", r + 1,
			o->rounds);
		for (int t = 0; t < NTRANSPORTS; t++)
		for (int m = 0; m < NMODES; m++)
		for (size_t i = 0; i < o->nsizes; i++)
		for (int k = 0; k < NSENDERS; k++) {
			int s = (r + k) % NSENDERS;
			struct cell *c = &cells[t][m][i][s];

			if (c->skipped || c->na)
				continue;
			run_one(b, t, m, o->sizes[i], s, &c->samples[c->n++]);
		}
	}
}

static void cells_reduce(const struct options *o)
{
	double *v = calloc((size_t)o->rounds, sizeof(*v));

	if (v == NULL)
		bc_die("out of memory");
	for (int t = 0; t < NTRANSPORTS; t++)
	for (int m = 0; m < NMODES; m++)
	for (size_t i = 0; i < o->nsizes; i++)
	for (int s = 0; s < NSENDERS; s++) {
		struct cell *c = &cells[t][m][i][s];

		if (!cell_ran(c))
			continue;
		for (size_t k = 0; k < c->n; k++)
			v[k] = c->samples[k].cpu_ms;
		c->cpu_ms = bc_median(v, c->n);
		c->min_ms = v[0]; /* bc_median sorted v */
		c->max_ms = v[c->n - 1];
		for (size_t k = 0; k < c->n; k++)
			v[k] = (double)c->samples[k].sends;
		c->sends = bc_median(v, c->n);
		for (size_t k = 0; k < c->n; k++)
			v[k] = (double)c->samples[k].waits;
		c->waits = bc_median(v, c->n);
		for (size_t k = 0; k < c->n; k++)
			v[k] = (double)c->samples[k].moved;
		c->moved = bc_median(v, c->n);
	}
	free(v);
}

/* ------------------------------------------------------------------------ */
/* Options.                                                                 */

static int usage(void)
{
	fprintf(stderr,
		"usage: sender_cpu [--sizes 16,64] [--rounds N] [--quick] "
		"[--warm-heap] [--no-node]\n"
		"                  [--node-script FILE] [--no-libuv] "
		"[--libuv-sender FILE]\n"
		"                  [--preload FILE] [--subjects] [--json | --json-out FILE]\n"
		"  --sizes LIST  payloads in MiB, comma-separated "
		"(default 16,64)\n"
		"  --rounds N    interleaved rounds per cell (default %d)\n"
		"  --quick       sizes 4,16 and %d rounds, for a CI smoke run "
		"(--sizes and --rounds still override)\n"
		"  --no-node     no node column\n"
		"  --node-script FILE  node's sender (default %s)\n"
		"  --no-libuv    no libuv column\n"
		"  --libuv-sender FILE  libuv's sender (default %s)\n"
		"  --preload FILE  the gate preloaded into node's and libuv's "
		"clamped senders\n"
		"                (default %s)\n"
		"  --subjects    the figure across subjects: 64 MiB over the unix socket, "
		"cursor, floor,\n"
		"                node and libuv only (--sizes and --rounds still "
		"apply)\n"
		"  --warm-heap   reuse faulted-in heap memory for the queue "
		"instead of a fresh\n"
		"                mapping per run\n"
		"  --json        accepted; the output is JSON either way\n"
		"  --json-out FILE  also write the JSON to FILE\n",
		DEFAULT_ROUNDS, QUICK_ROUNDS, SENDER_NODE_JS,
		SENDER_LIBUV[0] ? SENDER_LIBUV : "not built",
		WIRECHECK_PRELOAD[0] ? WIRECHECK_PRELOAD : "not built");
	return 2;
}

static int cmp_size(const void *x, const void *y)
{
	size_t a = *(const size_t *)x, b = *(const size_t *)y;

	return (a > b) - (a < b);
}

/* --sizes "16,32,64" (MiB) into ascending distinct byte counts
 * (bc_flag's parse; dest is the options). */
static int parse_sizes(const char *arg, void *dest)
{
	struct options *o = dest;
	size_t n, k = 0;

	if (bc_parse_mib_list(arg, o->sizes, MAX_SIZES, MAX_SIZE_MIB, &n) < 0)
		return -EINVAL;
	qsort(o->sizes, n, sizeof(o->sizes[0]), cmp_size);
	for (size_t i = 0; i < n; i++) {
		if (k == 0 || o->sizes[i] != o->sizes[k - 1])
			o->sizes[k++] = o->sizes[i];
	}
	o->nsizes = k;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	int quick = 0;
	const struct bc_flag flags[] = {
		BC_ON("--json", NULL), /* JSON is the only output */
		BC_ON("--warm-heap", &o->warm_heap),
		BC_ON("--no-node", &o->no_node),
		BC_STR("--node-script", &o->node_script),
		BC_ON("--no-libuv", &o->no_libuv),
		BC_STR("--libuv-sender", &o->libuv_sender),
		BC_STR("--preload", &o->preload),
		BC_STR("--json-out", &o->json_out),
		BC_ON("--subjects", &o->subjects),
		BC_ON("--quick", &quick),
		BC_CALL("--sizes", parse_sizes, o),
		BC_INT("--rounds", &o->rounds, 1, MAX_ROUNDS),
	};
	/* nsizes and rounds stay 0 unless given: the defaults come below. */
	*o = (struct options){ .node_script = SENDER_NODE_JS,
			       .libuv_sender = SENDER_LIBUV[0] ? SENDER_LIBUV : NULL,
			       .preload = WIRECHECK_PRELOAD[0] ? WIRECHECK_PRELOAD : NULL };
	if (bc_parse_flags(argc, argv, flags, sizeof(flags) / sizeof(flags[0])) < 0)
		return -EINVAL;
	/* --quick only changes defaults, so that it combines with explicit
	 * flags in any order. */
	for (int s = 0; s < NSENDERS; s++)
		o->want_sender[s] = !o->subjects || s == S_CURSOR ||
				    s == S_FLOOR || s == S_NODE || s == S_LIBUV;
	o->want_transport[T_UNIX] = 1;
	o->want_transport[T_TCP] = !o->subjects;
	if (o->subjects && o->nsizes == 0) {
		o->sizes[0] = 64 * MIB;
		o->nsizes = 1;
	} else if (o->nsizes == 0) {
		const size_t *d = quick ? quick_sizes : default_sizes;
		size_t n = quick ? sizeof(quick_sizes) / sizeof(quick_sizes[0])
				 : sizeof(default_sizes) /
					   sizeof(default_sizes[0]);

		for (size_t i = 0; i < n; i++)
			o->sizes[i] = d[i] * MIB;
		o->nsizes = n;
	}
	if (o->rounds == 0)
		o->rounds = quick ? QUICK_ROUNDS : DEFAULT_ROUNDS;
	return 0;
}

/* Starts one child sender (S_NODE or S_LIBUV) for mode m: clamped, with the
 * gate preloaded and the clamp rule. Returns it, or NULL when it did not
 * start (the cells then say "-"). */
static struct node_sender *child_start(struct node_sender *n, const struct options *o,
				       int s, enum mode m)
{
	const char *preload = m == M_CLAMPED ? o->preload : NULL;
	int rc;

	if (m == M_CLAMPED && preload == NULL)
		return NULL;
	if (s == S_NODE)
		rc = sender_child_start(n, "node", "/usr/bin/node", o->node_script,
					preload, CLAMP_RULE);
	else
		rc = sender_child_start(n, o->libuv_sender, NULL, NULL, preload,
					CLAMP_RULE);
	if (rc < 0) {
		fprintf(stderr, "sender_cpu: %s's sender did not start%s: no %s "
				"%s column\n",
			sender_names[s], m == M_CLAMPED ? " with the preload" : "",
			mode_names[m], sender_names[s]);
		return NULL;
	}
	return n;
}

/* node's and libuv's senders, each unclamped and clamped, unless left out. */
static void children_start(struct bench *b, struct options *o,
			   struct node_sender n[NSENDERS][NMODES])
{
	for (int m = 0; m < NMODES; m++) {
		b->child[S_NODE][m] = NULL;
		b->child[S_LIBUV][m] = NULL;
		if (!o->no_node && o->want_sender[S_NODE])
			b->child[S_NODE][m] = child_start(&n[S_NODE][m], o, S_NODE, m);
		if (!o->no_libuv && o->want_sender[S_LIBUV] && o->libuv_sender != NULL)
			b->child[S_LIBUV][m] = child_start(&n[S_LIBUV][m], o, S_LIBUV, m);
	}
	for (int s = S_NODE; s <= S_LIBUV; s++) {
		for (int m = 0; m < NMODES; m++) {
			if (b->child[s][m] == NULL)
				continue;
			if (s == S_NODE)
				o->node_version = b->child[s][m]->version;
			else
				o->libuv_version = b->child[s][m]->version;
		}
		o->child_clamped[s] = b->child[s][M_CLAMPED] != NULL;
	}
}

static void children_stop(struct bench *b)
{
	for (int s = S_NODE; s <= S_LIBUV; s++)
		for (int m = 0; m < NMODES; m++)
			if (b->child[s][m] != NULL)
				node_stop(b->child[s][m]);
}

int main(int argc, char **argv)
{
	struct node_sender children[NSENDERS][NMODES];
	struct options o;
	struct bench b;
	char err[256];
	struct bc_machine m;
	json_t *report;
	char *payload;

	bc_set_prog("sender_cpu");
	if (parse_options(argc, argv, &o) < 0)
		return usage();
	if (fi_init() != 0)
		bc_die("fi_init failed");
	if (fi_rule_parse(CLAMP_RULE, &b.rule, err, sizeof(err)) != 0)
		bc_die("%s", err);
	/* The reader on one CPU, the senders (and node, which inherits the
	 * affinity) on another, so that neither takes the other's time. */
	if (cpus_pick(&o.sender_cpu, &o.reader_cpu) == 0)
		pin_to(o.sender_cpu);
	reader_start(&the_reader, o.reader_cpu);
	children_start(&b, &o, children);
	o.heap = heap_setup(&o);
	/* The payload of the PR's sender: Buffer.alloc(N, 0x61). Written
	 * once here, so that its pages are resident before any run. */
	payload = malloc(o.sizes[o.nsizes - 1]);
	if (payload == NULL)
		bc_die("cannot allocate %zu bytes", o.sizes[o.nsizes - 1]);
	memset(payload, 0x61, o.sizes[o.nsizes - 1]);
	/* After the payload, so that the faulted-in block is the heap's top
	 * and the queue's allocations are carved from it. */
	if (strcmp(o.heap, "warm") == 0)
		heap_prefault(o.sizes[o.nsizes - 1] + HEAP_SLACK);
	b.o = &o;
	b.rd = &the_reader;
	b.payload = payload;
	m = bc_machine_start();
	cells_plan(&o, &b);
	warm_up(&b);
	rounds_run(&b);
	bc_machine_end(&m);
	children_stop(&b);
	reader_stop(&the_reader);
	cells_reduce(&o);
	report = sender_cpu_report(&o, argc, argv, &m);
	if (o.json_out != NULL)
		bc_report_write(report, o.json_out);
	bc_report_print(report);
	free(payload);
	return 0;
}
