/*
 * chunked_threshold: where copying a whole chunked response into one buffer
 * and sending it stops beating a head with MSG_MORE and one sendmsg of body
 * and terminator (RS_HTTP_COPY_MAX in reference/rs.h).
 *
 *   chunked_threshold [--quick] [--blocks N] [--rounds N] [--json]
 *                     [--sizes BYTES,BYTES,...]
 *
 * It prints one JSON object (--json is accepted and changes nothing);
 * `python3 -m wirecheck.report.render chunked_threshold FILE` shows it as a
 * table.
 *
 * For each body size B, the response is what reference/http.c emits for
 * try_write(B bytes, final) with its head: the head, the chunk header
 * "%zx\r\n", the body, the terminator "\r\n0\r\n\r\n". Two ways to send it,
 * the two of the fixed strategy:
 *
 *   copy   memcpy of all four into one buffer, one send()
 *   iov    head and chunk header copied into one small buffer (as
 *          http.c's send_run gathers framing) and sent with MSG_MORE, then
 *          one sendmsg() of body and terminator, no copy
 *
 * and two more, to put the fixed strategy's cost beside the others' in a
 * figure that leaves the load generator out (bench/chunked.py's wrk runs
 * measure wrk as much as the server):
 *
 *   sep    chunked=separate (legacy): head and chunk header in one send,
 *          the body in a second, the terminator in a third
 *   one    one sendmsg() of all four, no copy (node 20's shape: one writev)
 *
 * over TCP on 127.0.0.1 with TCP_NODELAY, to a forked reader (on the other
 * CPU when there is one) that reads the whole response and answers one byte,
 * so that every response starts with an empty send buffer, as a server's
 * answer to a request does. The measured figure is the sender thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID: user and kernel) from the first byte copied
 * to the last call's return, per response: the memcpy and the system calls,
 * both of which the choice trades, and the kernel's own copy, which both
 * make. Wall time would add the reader's scheduling on a shared machine;
 * callgrind would see the memcpy but not the kernel side of a syscall, which
 * is what the copy saves, so neither answers the question.
 *
 * Each block runs `rounds` responses of each way in turn, the order
 * reversed every other block, for every size; the figure of a way is the
 * median over its blocks of each block's median. copy/iov < 1 means copying
 * is cheaper. The crossover is the first size from which iov is cheaper at
 * that size and every larger one. separate/fixed is sep over the way the
 * fixed strategy takes at that size (copy up to RS_HTTP_COPY_MAX bytes of
 * response, iov above): what the legacy strategy's two more sends cost the
 * sender, per response.
 *
 * Exit status: 0, or 1 when something failed, 2 on a bad flag.
 */
#include "bench_common.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

/* The head http.c writes for a chunked 200 without user headers. */
static const char HEAD[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
static const char TERM[] = "\r\n0\r\n\r\n";

#define MAX_SIZES 32
#define MAX_BODY (4u << 20)

static const size_t default_sizes[] = {
	1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768,
	49152, 65536, 98304, 131072, 262144,
};

enum way { WAY_COPY, WAY_IOV, WAY_SEP, WAY_ONE, WAYS };

static const char *const way_name[WAYS] = { "copy", "iov", "sep", "one" };

struct opts {
	size_t sizes[MAX_SIZES];
	int n_sizes;
	struct bc_block_options b;
};

static unsigned char *body;
static unsigned char *copy_buf;

/* Sends all of iov[0..n) with flags, retrying after a short send (the
 * reader drains, so it is rare; both ways pay it alike). */
static void send_all(int fd, struct iovec *iov, int n, int flags)
{
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t got = n == 1 ? send(fd, iov[0].iov_base, iov[0].iov_len, flags)
				     : sendmsg(fd, &m, flags);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			bc_die("send: %s", strerror(errno));
		}
		while (n > 0 && (size_t)got >= iov[0].iov_len) {
			got -= (ssize_t)iov[0].iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov[0].iov_base = (char *)iov[0].iov_base + got;
			iov[0].iov_len -= (size_t)got;
		}
	}
}

/* One response of size bytes of body, the chosen way. */
static void respond(int fd, enum way w, size_t size)
{
	char hdr[sizeof(HEAD) + 24];
	size_t head = sizeof(HEAD) - 1;
	int h = snprintf(hdr + head, sizeof(hdr) - head, "%zx\r\n", size);

	if (h < 0 || (size_t)h >= sizeof(hdr) - head)
		bc_die("snprintf: chunk header");
	if (w == WAY_COPY) {
		size_t off = 0;
		struct iovec one;

		memcpy(copy_buf, HEAD, head);
		off = head;
		memcpy(copy_buf + off, hdr + head, (size_t)h);
		off += (size_t)h;
		memcpy(copy_buf + off, body, size);
		off += size;
		memcpy(copy_buf + off, TERM, sizeof(TERM) - 1);
		off += sizeof(TERM) - 1;
		one = (struct iovec){ copy_buf, off };
		send_all(fd, &one, 1, 0);
	} else if (w == WAY_ONE) {
		struct iovec all[4] = {
			{ (void *)HEAD, head }, { hdr + head, (size_t)h },
			{ body, size }, { (void *)TERM, sizeof(TERM) - 1 },
		};

		send_all(fd, all, 4, 0);
	} else {
		struct iovec framing, rest[2];

		memcpy(hdr, HEAD, head);
		framing = (struct iovec){ hdr, head + (size_t)h };
		if (w == WAY_SEP) {
			send_all(fd, &framing, 1, 0);
			rest[0] = (struct iovec){ body, size };
			send_all(fd, &rest[0], 1, 0);
			rest[1] = (struct iovec){ (void *)TERM, sizeof(TERM) - 1 };
			send_all(fd, &rest[1], 1, 0);
			return;
		}
		send_all(fd, &framing, 1, MSG_MORE);
		rest[0] = (struct iovec){ body, size };
		rest[1] = (struct iovec){ (void *)TERM, sizeof(TERM) - 1 };
		send_all(fd, rest, 2, 0);
	}
}

static size_t response_len(size_t size)
{
	char hdr[24];
	int h = snprintf(hdr, sizeof(hdr), "%zx\r\n", size);

	return sizeof(HEAD) - 1 + (size_t)h + size + sizeof(TERM) - 1;
}

/* The reader: for each length the parent announces (8 bytes on the pipe),
 * reads that many bytes, then answers one byte on the socket. Length 0 ends
 * it. */
static void reader(int fd, int ctl)
{
	static unsigned char sink[1 << 16];

	for (;;) {
		uint64_t len;

		if (bc_read_full(ctl, &len, sizeof(len)) < 0)
			bc_die("reader: the control pipe: %s", strerror(errno));
		if (len == 0)
			_exit(0);
		while (len > 0) {
			ssize_t got = recv(fd, sink, len < sizeof(sink) ? len : sizeof(sink), 0);

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				bc_die("reader: recv: %s", got < 0 ? strerror(errno) : "end of stream");
			len -= (uint64_t)got;
		}
		if (bc_write_full(fd, "k", 1) < 0)
			bc_die("reader: the answer: %s", strerror(errno));
	}
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (bc_cpus_online() < 2)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		bc_die("sched_setaffinity: %s", strerror(errno));
}

/* rounds responses the way w; the median CPU µs per response. */
static double block(int fd, int ctl, enum way w, size_t size, int rounds,
		    double *scratch)
{
	uint64_t len = response_len(size);

	for (int r = 0; r < rounds; r++) {
		char k;
		double t0;

		if (bc_write_full(ctl, &len, sizeof(len)) < 0)
			bc_die("the control pipe: %s", strerror(errno));
		t0 = bc_clock_us(CLOCK_THREAD_CPUTIME_ID);
		respond(fd, w, size);
		scratch[r] = bc_clock_us(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (bc_read_full(fd, &k, 1) < 0)
			bc_die("the reader's answer: %s", strerror(errno));
	}
	return bc_median(scratch, (size_t)rounds);
}

/* The responses per way and size that warm the buffers and the
 * connection before the measured blocks. */
#define WARM_ROUNDS 10

static int parse_sizes(const char *s, struct opts *o)
{
	char *end;

	o->n_sizes = 0;
	while (*s) {
		unsigned long long v;

		errno = 0;
		v = strtoull(s, &end, 10);
		if (end == s || errno || v < 1 || v > MAX_BODY || o->n_sizes == MAX_SIZES ||
		    (*end && *end != ','))
			return -EINVAL;
		o->sizes[o->n_sizes++] = (size_t)v;
		s = *end ? end + 1 : end;
	}
	return o->n_sizes ? 0 : -EINVAL;
}

static int own_flag(int argc, char **argv, int *i, void *ctx)
{
	if (strcmp(argv[*i], "--sizes") != 0)
		return 0;
	if (*i + 1 >= argc || parse_sizes(argv[*i + 1], ctx) < 0)
		return -EINVAL;
	(*i)++;
	return 1;
}

int main(int argc, char **argv)
{
	static const struct bc_block_defaults d = { 9, 400, 5, 100 };
	struct opts o = { .n_sizes = 0 };
	struct bc_spread sp[MAX_SIZES][WAYS];
	double *scratch, *per_block[WAYS];
	struct bc_machine m;
	json_t *report, *rows;
	int lfd, port, fd, ctl[2], crossover = -1;
	size_t max = 0;
	pid_t pid;

	bc_set_prog("chunked_threshold");
	for (size_t i = 0; i < sizeof(default_sizes) / sizeof(*default_sizes); i++)
		o.sizes[o.n_sizes++] = default_sizes[i];
	if (bc_parse_block_options(argc, argv, &d, own_flag, &o, &o.b) < 0) {
		fprintf(stderr, "usage: chunked_threshold [--quick] [--blocks N] [--rounds N] "
			"[--json] [--sizes BYTES,...] (sizes 1 to %u)\n", MAX_BODY);
		return 2;
	}
	for (int i = 0; i < o.n_sizes; i++)
		max = o.sizes[i] > max ? o.sizes[i] : max;
	body = malloc(max);
	copy_buf = malloc(response_len(max));
	/* One time per round of a block: the warm-up's WARM_ROUNDS too, which
	 * overflowed a smaller --rounds. */
	scratch = malloc(sizeof(double) *
			 (size_t)(o.b.rounds > WARM_ROUNDS ? o.b.rounds : WARM_ROUNDS));
	if (!body || !copy_buf || !scratch)
		bc_die("out of memory");
	for (int w = 0; w < WAYS; w++)
		if (!(per_block[w] = malloc(sizeof(double) * (size_t)o.b.blocks)))
			bc_die("out of memory");
	memset(body, 'a', max);
	memset(copy_buf, 0, response_len(max));
	bc_ignore_sigpipe();

	lfd = bc_listen_tcp(1, &port);
	bc_pipe(ctl);
	pid = bc_fork();
	if (pid == 0) {
		int rfd;

		close(ctl[1]);
		close(lfd);
		pin(1);
		rfd = bc_connect(NULL, port);
		reader(rfd, ctl[0]);
	}
	close(ctl[0]);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		bc_die("accept: %s", strerror(errno));
	close(lfd);
	if (bc_set_nodelay(fd) < 0)
		bc_die("TCP_NODELAY: %s", strerror(errno));
	pin(0);

	m = bc_machine_start();
	/* Warm: the buffers' pages and the connection's windows. */
	for (int i = 0; i < o.n_sizes; i++)
		for (int w = 0; w < WAYS; w++)
			(void)block(fd, ctl[1], (enum way)w, o.sizes[i], WARM_ROUNDS,
				    scratch);
	for (int i = 0; i < o.n_sizes; i++) {
		for (int b = 0; b < o.b.blocks; b++)
			for (int k = 0; k < WAYS; k++) {
				int w = (b % 2) ? WAYS - 1 - k : k;

				per_block[w][b] = block(fd, ctl[1], (enum way)w, o.sizes[i],
							o.b.rounds, scratch);
			}
		for (int w = 0; w < WAYS; w++)
			sp[i][w] = bc_spread_of(per_block[w], (size_t)o.b.blocks);
	}
	bc_machine_end(&m);
	{
		uint64_t zero = 0;

		if (bc_write_full(ctl[1], &zero, sizeof(zero)) < 0)
			bc_die("the control pipe: %s", strerror(errno));
	}
	bc_wait_child(pid, "reader");
	close(fd);
	close(ctl[1]);
	for (int i = o.n_sizes - 1; i >= 0 && sp[i][WAY_IOV].median < sp[i][WAY_COPY].median; i--)
		crossover = i;

	report = bc_report_new(argc, argv);
	bc_report_machine(report, &m);
	bc_set(report, "blocks", json_integer(o.b.blocks));
	bc_set(report, "rounds", json_integer(o.b.rounds));
	bc_set(report, "copy_max", json_integer(RS_HTTP_COPY_MAX));
	bc_set(report, "rows", rows = bc_pack("[]"));
	for (int i = 0; i < o.n_sizes; i++) {
		json_t *row = bc_pack("{s:I, s:I}", "body", (json_int_t)o.sizes[i],
				      "response", (json_int_t)response_len(o.sizes[i]));
		char key[32];

		for (int w = 0; w < WAYS; w++) {
			snprintf(key, sizeof(key), "%s_us", way_name[w]);
			bc_set(row, key, bc_real(sp[i][w].median, 4));
			snprintf(key, sizeof(key), "%s_block_us", way_name[w]);
			bc_set(row, key, bc_pack("[oo]", bc_real(sp[i][w].min, 4),
						 bc_real(sp[i][w].max, 4)));
		}
		bc_append(rows, row);
	}
	bc_set(report, "crossover_body", crossover < 0 ? json_null() :
	       json_integer((json_int_t)o.sizes[crossover]));
	bc_report_print(report);
	free(body);
	free(copy_buf);
	free(scratch);
	for (int w = 0; w < WAYS; w++)
		free(per_block[w]);
	return 0;
}
