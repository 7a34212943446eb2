/*
 * sender_instr.c: the user-space instructions, syscalls and bytes copied of
 * end(P) per sender, counted so that the figures do not move from run to run
 * The CPU-time figures are bench/sender_cpu.c's.
 *
 * Senders (each in its own process under callgrind):
 *   floor         bench/floor.h's loop: send(MSG_NOSIGNAL) of what is left,
 *                 epoll_wait(EPOLLOUT) on EAGAIN, then shutdown(SHUT_WR),
 *                 every call through the same fault gate as the stack's
 *                 (fi_send, fi_epoll_wait, fi_shutdown), so that both pay
 *                 the gate's cost per call and both are clamped by the same
 *                 rule. The targets are judged against it.
 *   floor_direct  the same loop calling send, epoll_wait and shutdown
 *                 directly, clamping its own send length: shows what the
 *                 gate costs.
 *   copy          no socket: the queue's copy alone, rs_queue_append of the
 *                 bytes the copying sender copied, then rs_queue_free.
 *   copying       librefstack queue=cursor: rs_socket_end(P), today's write.
 *   owned         librefstack's owned write (the caller's buffer, held until
 *                 a release callback): not built until it is in the stack.
 *   memmove       librefstack queue=memmove: the legacy queue.
 *
 * Why the figures hold still. Instructions are callgrind's count of the
 * sender's user-space instructions between the start of end() (the floor:
 * its first send) and end()'s callback (the floor: after its shutdown);
 * the kernel's work is not in them. They depend only on the calls the
 * sender makes and what each returns, so the sends must be the same from
 * run to run. The sender is a unix socket whose peer reads in lockstep: the
 * peer (this program's parent, not under valgrind) reads nothing until the
 * sender asks, and the sender asks at the end of every task of the stack's
 * loop (the floor: at every EAGAIN) for every byte the kernel has taken so
 * far, and waits until the peer has them. Every burst of sends therefore
 * starts on an empty socket, and how much each send takes depends only on
 * the socket's send buffer and the send's length: the same on every run.
 * Collection is off while the sender waits. At the 4 KiB clamp (the gate's
 * write:short=4096,repeat=forever for every sender but floor_direct, armed
 * only while the region is counted) each send's length is fixed too; the
 * gate's armed path (fi__*_slow and the static *_slow of fi_calls.c: its
 * rules and the call it makes) is not counted for any sender (callgrind's
 * --toggle-collect), so that the clamp, a measuring device, adds nothing.
 * Nor is the bench's own work, alike for every sender: the lockstep wait
 * (the stack's task hook, the floor's EAGAIN hook: only the call to each
 * is counted) and the bookkeeping after end() returns and in its callback
 * (each side counts the client request that ends its region). Every
 * symbol is bound at load (LD_BIND_NOW), so that no sender pays the
 * dynamic linker. TCP is not measured here: how much loopback TCP takes
 * depends on its congestion window and ACKs, which are timing.
 *
 * Every cell runs --repeat times (at least 2), all cells once per pass; the
 * tables show the spread of each figure between passes, and a target whose
 * figures spread by more than its margin is not judged (it fails).
 *
 * Targets, on instructions, unclamped and at the 4 KiB clamp:
 *   copying <= (floor + copy) * 1.05 unclamped, * 1.10 at the clamp;
 *   copying copies each byte at most once: bytes copied = P - the bytes the
 *   kernel took in the end() call; owned copies none;
 *   owned, beyond the floor: at most 40 instructions per send and at most
 *   200 fixed per end(P). The split is measured, not assumed: between two
 *   payloads P1 < P2 each sender's cost per send is the difference of its
 *   instructions over the difference of its sends (EAGAIN included, both
 *   senders count them alike), and its fixed cost is what is left at P1,
 *   I(P1) - per_send * sends(P1). Beyond the floor is the owned figure less
 *   the floor's. Whatever grows with P lands in the per-send cost: unclamped,
 *   where a writable event makes about two sends, the loop's work per event
 *   is in it too. (The owned write's earlier target, owned <= floor * 1.05
 *   or * 1.10, set the stack's whole work against a floor of about 23
 *   instructions per send; these two replace it.)
 *
 * usage: sender_instr [--sizes 1,4] [--quick] [--repeat N] [--json]
 *                     [--check] [--rep-movsb] [--keep] [--valgrind PATH]
 * It prints one JSON object (--json changes nothing), which the report's
 * bench_sender_cpu section renders.
 * Exits 0 when every run worked (the targets are in the JSON, PASS or FAIL;
 * with --check a FAIL also exits 1), 1 when a run failed, 2 on a usage error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "bench_common.h"
#include "fi.h"
#include "floor.h"
#include "rs.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)
#define CLAMP ((size_t)4096)
#define CLAMP_RULE "write:short=4096,repeat=forever"
#define READ_CHUNK (256 * KIB)
#define MAX_SIZES 8
#define MAX_SIZE_MIB 64
#define MAX_REPEAT 10

/*
 * glibc's memcpy copies large blocks with rep movsb, which callgrind counts
 * as one instruction per byte (valgrind runs the instruction one iteration
 * at a time), where the processor moves tens of bytes per cycle: a copy
 * would then outweigh everything else by an order of magnitude it does not
 * have. With this tunable every sender's copies are glibc's vector loop,
 * whose instructions are what the processor runs. --rep-movsb leaves it.
 */
#define TUNABLES "glibc.cpu.x86_rep_movsb_threshold=2147483647"

enum mode { M_UNCLAMPED, M_CLAMPED, NMODES };
enum sender {
	S_FLOOR,
	S_FLOOR_DIRECT,
	S_COPY,
	S_COPYING,
	S_OWNED,
	S_MEMMOVE,
	NSENDERS
};

static const char *const mode_names[NMODES] = { "unclamped", "clamp_4k" };
static const char *const sender_names[NSENDERS] = {
	"floor", "floor_direct", "copy", "copying", "owned", "memmove" };

/* Whether librefstack has the owned write and the bytes-copied counter:
 * bench/CMakeLists.txt looks for them in rs.h. Until then the owned row
 * says "not built yet" and bytes copied are P less what end() sent. */
#ifdef RS_HAVE_OWNED_WRITE
#define OWNED_BUILT 1
#else
#define OWNED_BUILT 0
#endif
#ifdef RS_HAVE_BYTES_COPIED
#define HAVE_BYTES_COPIED 1
#define COPIED_SOURCE "the stack's count (rs_socket_bytes_copied)"
#else
#define HAVE_BYTES_COPIED 0
#define COPIED_SOURCE "P less what the kernel took inside end()"
#endif

static const double limits[NMODES] = { 1.05, 1.10 };
/* The owned write beyond the floor: instructions per send, and fixed
 * instructions per end(P), in both modes. */
#define OWNED_PER_SEND_LIMIT 40.0
#define OWNED_FIXED_LIMIT 200.0

/* Commands from the sender (child) to the peer (parent). */
enum cmd_kind { CMD_DRAIN = 1, CMD_EOF = 2, CMD_RESULT = 3 };

/* What one sender's run counted, besides callgrind's instructions. */
struct counts {
	/* send/sendmsg calls (EAGAIN included), of which the kernel refused,
	 * epoll_wait calls */
	struct floor_counts calls;
	uint64_t syscalls;    /* every call through the gate (or made) */
	uint64_t in_call;     /* bytes the kernel took inside end() */
	uint64_t copied;      /* bytes copied into the queue */
	uint64_t moved;       /* bytes memmove'd inside the queue */
	uint64_t syncs;       /* times the sender waited for the peer */
};

struct cmd {
	uint32_t kind;
	uint32_t pad;
	uint64_t value;
	struct counts counts; /* CMD_RESULT */
};

/* One run: callgrind's instructions and the sender's counts. */
struct run {
	uint64_t ir;
	struct counts c;
};

struct cell {
	int skip;            /* not built */
	int not_run;         /* a payload of the split only (--quick) */
	struct run runs[MAX_REPEAT];
};

struct options {
	size_t sizes[MAX_SIZES];
	size_t nsizes;
	size_t nfull;        /* sizes[nfull..] run the floor and owned only */
	int repeat;
	int check;
	int rep_movsb;
	int keep;
	const char *valgrind;
};

static struct cell cells[NMODES][MAX_SIZES][NSENDERS];

/* ======================================================================== */
/* The child: one sender under callgrind.                                   */

static int child_cmd = -1; /* write: commands to the peer */
static int child_ack = -1; /* read: the peer's answers */
static int collecting;
static struct fi_rule clamp_rule; /* armed in the region, when clamped */
static int clamp_wanted;

/* Turns callgrind's collection on or off (a client request: nothing
 * outside valgrind). */
static void collect(int on)
{
	if (on != collecting) {
		CALLGRIND_TOGGLE_COLLECT;
		collecting = on;
	}
}

/*
 * The counted region: collection on, and the clamp armed only inside it.
 * An armed gate takes its slow path for every call, and the slow paths
 * are not counted (callgrind's --toggle-collect flips collection on their
 * entry and exit); a slow path entered while collection is off would flip
 * it on instead, so no gate call may take one outside the region (the
 * connect before it, the close after it).
 */
static void region_begin(void)
{
	if (clamp_wanted && fi_arm(&clamp_rule) < 0)
		bc_die("cannot arm %s", CLAMP_RULE);
	collect(1);
}

static void region_end(void)
{
	collect(0);
	if (clamp_wanted)
		fi_disarm_all();
}

static uint64_t child_ask(uint32_t kind, uint64_t value)
{
	struct cmd c = { .kind = kind, .value = value };
	uint64_t got;

	if (bc_write_full(child_cmd, &c, sizeof(c)) != 0 ||
	    bc_read_full(child_ack, &got, sizeof(got)) != 0)
		bc_die("the peer went away");
	return got;
}

/* Waits until the peer has read every byte the kernel has taken (total):
 * the socket is then empty. Collection must be off already. */
static void child_sync_raw(uint64_t total, uint64_t *synced,
			   struct counts *c)
{
	if (total > *synced) {
		if (child_ask(CMD_DRAIN, total) != total)
			bc_die("the peer read a different count");
		*synced = total;
		c->syncs++;
	}
}

/* child_sync_raw with collection off while it waits. */
static void child_sync(uint64_t total, uint64_t *synced, struct counts *c)
{
	int was = collecting;

	collect(0);
	child_sync_raw(total, synced, c);
	collect(was);
}

static uint64_t gate_sum(void)
{
	const struct fi_counters *fc = fi_counters();
	uint64_t n = 0;

	for (int k = 0; k < FI_SYS_COUNT; k++)
		n += fi_calls(fc, (enum fi_sys)k);
	return n;
}

static uint64_t gate_sends(void)
{
	const struct fi_counters *fc = fi_counters();

	return fi_calls(fc, FI_SEND) + fi_calls(fc, FI_SENDMSG);
}

static uint64_t gate_eagain(void)
{
	const struct fi_counters *fc = fi_counters();

	return fc->wouldblock[FI_SEND] + fc->wouldblock[FI_SENDMSG];
}

static uint64_t gate_waits(void)
{
	return fi_calls(fi_counters(), FI_EPOLL_WAIT);
}

/* ---- the floor ---------------------------------------------------------- */

/* The floor's EAGAIN hook (floor.h): the peer reads what the kernel has
 * taken. fc is the first member of the run's struct counts, arg the bytes
 * synced so far. callgrind's --toggle-collect=floor_on_eagain turns
 * collection off for the whole call, as for the stack's task hook (the
 * same lockstep), so that both count the call to their hook and nothing
 * of it: out of line for that, and no client request in here. */
static __attribute__((noinline)) void
floor_on_eagain(uint64_t off, struct floor_counts *fc, void *arg)
{
	child_sync_raw(off, arg, (struct counts *)fc);
}

static void child_floor(int gate, enum mode m, const char *path,
			const char *payload, size_t len, struct counts *c)
{
	struct epoll_event ev = { .events = EPOLLOUT };
	int fd = bc_connect(path, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	int flags = fcntl(fd, F_GETFL);
	uint64_t synced = 0, g0;
	const struct floor_io io = {
		.gate = gate,
		.clamp = (!gate && m == M_CLAMPED) ? CLAMP : 0,
		.on_eagain = floor_on_eagain,
		.arg = &synced,
	};
	int rc;

	/* The set-up is floor_open's, written out: a call to it (out of line
	 * or inline) changes the register allocation of this whole child,
	 * and with it the compiled loop that FLOOR_SEND keeps as it was. */
	if (ep < 0 || flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
		bc_die("floor setup: %s", strerror(errno));
	ev.data.fd = fd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
		bc_die("epoll_ctl: %s", strerror(errno));
	g0 = gate_sum();
	region_begin();
	FLOOR_SEND(&io, fd, ep, &ev, payload, len, &c->calls, rc);
	region_end();
	if (rc != 0)
		bc_die("floor: %s", strerror(rc));
	/* Syscalls in the measured part: the gate's count, or our own for the
	 * direct loop (sends, waits, the shutdown). */
	c->syscalls = gate ? gate_sum() - g0
			   : c->calls.sends + c->calls.waits + 1;
	child_sync(len, &synced, c);
	if (close(ep) != 0 || close(fd) != 0)
		bc_die("close: %s", strerror(errno));
}

/* ---- the copy alone ----------------------------------------------------- */

static void child_copy(const char *payload, size_t len, struct counts *c)
{
	struct rs_queue q;
	int rc;

	rs_queue_init(&q, RS_QUEUE_CURSOR);
	collect(1);
	rc = rs_queue_append(&q, payload, len);
	rs_queue_free(&q);
	collect(0);
	if (rc < 0)
		bc_die("copy: rs_queue_append: %s", strerror(-rc));
	c->copied = len;
	c->moved = q.bytes_moved;
}

/* ---- the stack ---------------------------------------------------------- */

/* What sender_instr counts of a stack run (bc_end_run's hooks' arg). */
struct stack_run {
	size_t len;
	rs_socket *sock;     /* until end()'s callback */
	int done;            /* end()'s callback ran */
	uint64_t synced;
	uint64_t sends0, syscalls0, eagain0, waits0;
	struct counts c;
};

/*
 * The loop's task hook, set only while the region is counted (from end() to
 * its callback): at the end of every task, the peer reads what the kernel
 * has. callgrind's --toggle-collect=stack_hook turns collection off for the
 * whole call (the driver passes it), so nothing of the hook is counted but
 * the loop's call to it; hence no client request in here.
 */
static void stack_hook(rs_loop *loop, uint64_t task, void *arg)
{
	struct stack_run *r = arg;

	(void)loop;
	(void)task;
	child_sync_raw(r->done ? r->len : rs_socket_bytes_written(r->sock),
		       &r->synced, &r->c);
}

/*
 * end()'s callback: the region ends. callgrind's
 * --toggle-collect=stack_on_end turns collection off on entry and flips it
 * again on the way out, so that the bench's bookkeeping here is not
 * counted: the last statement flips it on, and the return leaves it off
 * (the region's end, as region_end would), counting only the return.
 */
static void stack_on_end(struct bc_end_run *e, rs_socket *s, int status)
{
	struct stack_run *r = e->arg;
	const struct rs_queue *q;

	(void)status;
	if (clamp_wanted)
		fi_disarm_all();
	q = rs_socket_queue(s);
#if HAVE_BYTES_COPIED
	/* The stack's own count, once it has one. */
	r->c.copied = rs_socket_bytes_copied(s);
#endif
	r->c.calls.sends = gate_sends() - r->sends0;
	r->c.syscalls = gate_sum() - r->syscalls0;
	r->c.calls.eagain = gate_eagain() - r->eagain0;
	r->c.calls.waits = gate_waits() - r->waits0;
	r->c.moved = q->bytes_moved;
	r->done = 1;
	r->sock = NULL;
	/* The region is over: the rest syncs after the loop. */
	rs_loop_set_hook(e->loop, NULL, NULL);
	collecting = 0;
	CALLGRIND_TOGGLE_COLLECT;
}

static void stack_before_end(struct bc_end_run *e, rs_socket *s)
{
	struct stack_run *r = e->arg;

	r->sock = s;
	r->sends0 = gate_sends();
	r->syscalls0 = gate_sum();
	r->eagain0 = gate_eagain();
	r->waits0 = gate_waits();
	rs_loop_set_hook(e->loop, stack_hook, r);
	region_begin();
}

/* What the call itself sent; the rest the stack copied. Not counted:
 * callgrind's --toggle-collect=stack_after_end_call turns collection off
 * for the whole call (no client request in here). */
static void stack_after_end_call(struct bc_end_run *e, rs_socket *s)
{
	struct stack_run *r = e->arg;

	if (e->end_rc == 0) {
		uint64_t w = r->done ? r->len : rs_socket_bytes_written(s);

		r->c.in_call = w;
		r->c.copied = r->len - w;
	}
}

static void child_stack(enum sender snd, const char *path, const char *payload,
			size_t len, struct counts *c)
{
	static const struct bc_end_hooks hooks = {
		.before_end = stack_before_end,
		.after_end_call = stack_after_end_call,
		.on_end = stack_on_end,
	};
	struct stack_run r = { .len = len };
	struct bc_end_run e = {
		.name = sender_names[snd], .memmove = snd == S_MEMMOVE,
		.owned = snd == S_OWNED, .payload = payload, .len = len,
		.hooks = &hooks, .arg = &r,
	};

	bc_end_run(&e, path, 0);
	child_sync(len, &r.synced, &r.c);
	*c = r.c;
}

/* argv: --child SENDER MODE SIZE COPYLEN PATH CMDFD ACKFD */
static int child_main(int argc, char **argv)
{
	struct counts c = { 0 };
	char err[256];
	enum sender snd = NSENDERS;
	enum mode m;
	size_t len, copylen;
	char *payload;
	int cmdfd, ackfd;

	if (argc != 9)
		return 2;
	for (int s = 0; s < NSENDERS; s++)
		if (strcmp(argv[2], sender_names[s]) == 0)
			snd = (enum sender)s;
	m = strcmp(argv[3], "clamp_4k") == 0 ? M_CLAMPED : M_UNCLAMPED;
	len = (size_t)strtoull(argv[4], NULL, 10);
	copylen = (size_t)strtoull(argv[5], NULL, 10);
	cmdfd = atoi(argv[7]);
	ackfd = atoi(argv[8]);
	if (snd == NSENDERS || len == 0 || cmdfd < 0 || ackfd < 0)
		return 2;
	child_cmd = cmdfd;
	child_ack = ackfd;
	if (fi_init() != 0)
		bc_die("fi_init failed");
	if (fi_rule_parse(CLAMP_RULE, &clamp_rule, err, sizeof(err)) != 0)
		bc_die("%s", err);
	payload = malloc(len);
	if (payload == NULL)
		bc_die("out of memory");
	memset(payload, 0x61, len);
	clamp_wanted = m == M_CLAMPED && snd != S_FLOOR_DIRECT &&
		       snd != S_COPY;
	switch (snd) {
	case S_FLOOR:
	case S_FLOOR_DIRECT:
		child_floor(snd == S_FLOOR, m, argv[6], payload, len, &c);
		break;
	case S_COPY:
		child_copy(payload, copylen, &c);
		break;
	default:
		child_stack(snd, argv[6], payload, len, &c);
		break;
	}
	if (snd != S_COPY && child_ask(CMD_EOF, 0) != len)
		bc_die("the peer did not read %zu bytes", len);
	{
		struct cmd res = { .kind = CMD_RESULT, .counts = c };

		if (bc_write_full(child_cmd, &res, sizeof(res)) != 0)
			bc_die("cannot report: %s", strerror(errno));
	}
	free(payload);
	return 0;
}

/* ======================================================================== */
/* The parent: the peer, and the driver of the runs.                        */

static char self_exe[PATH_MAX];
static const char *sock_path;
static int listen_fd = -1;
static char tmp_dir[] = "/tmp/sender_instr.XXXXXX";
static int run_counter;
/* The files of the run under way, removed at exit if it dies. */
static char cur_out[PATH_MAX + 32];
static char cur_log[PATH_MAX + 32];

/* Reads from fd until the count reaches target (or EOF when target is
 * UINT64_MAX). Returns the count. */
static uint64_t peer_read(int fd, char *buf, uint64_t have, uint64_t target)
{
	while (have < target) {
		size_t want = READ_CHUNK;
		ssize_t n;

		if (target != UINT64_MAX && target - have < want)
			want = (size_t)(target - have);
		n = recv(fd, buf, want, 0);
		if (n > 0)
			have += (uint64_t)n;
		else if (n == 0)
			break;
		else if (errno != EINTR)
			bc_die("peer recv: %s", strerror(errno));
	}
	return have;
}

/* Parses callgrind's output file: the "summary:" line's Ir. */
static uint64_t callgrind_ir(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[512];
	uint64_t ir = UINT64_MAX;

	if (f == NULL)
		bc_die("cannot open %s: %s", file, strerror(errno));
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long long v;

		if (sscanf(line, "summary: %llu", &v) == 1)
			ir = v;
	}
	if (fclose(f) != 0 || ir == UINT64_MAX)
		bc_die("no summary in %s", file);
	return ir;
}

static void dump_file(const char *file)
{
	FILE *f = fopen(file, "r");
	char line[512];

	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		fputs(line, stderr);
	(void)fclose(f);
}

/* Runs one sender under callgrind, serving as its peer. */
static void run_one(const struct options *o, enum sender snd, enum mode m,
		    size_t len, size_t copylen, struct run *out)
{
	char outf[PATH_MAX + 32], logf[PATH_MAX + 32], outarg[PATH_MAX + 64];
	char a_len[32], a_copy[32], a_cmd[16], a_ack[16];
	int cmdp[2], ackp[2], conn = -1, status;
	char *buf = malloc(READ_CHUNK);
	uint64_t have = 0;
	pid_t pid;

	if (buf == NULL)
		bc_die("out of memory");
	run_counter++;
	snprintf(outf, sizeof(outf), "%s/cg.%d", tmp_dir, run_counter);
	snprintf(logf, sizeof(logf), "%s/log.%d", tmp_dir, run_counter);
	memcpy(cur_out, outf, sizeof(cur_out));
	memcpy(cur_log, logf, sizeof(cur_log));
	snprintf(outarg, sizeof(outarg), "--callgrind-out-file=%s", outf);
	snprintf(a_len, sizeof(a_len), "%zu", len);
	snprintf(a_copy, sizeof(a_copy), "%zu", copylen);
	/* The child's ends are inherited across exec (no O_CLOEXEC). */
	if (pipe(cmdp) != 0 || pipe(ackp) != 0)
		bc_die("pipe: %s", strerror(errno));
	if (fcntl(cmdp[0], F_SETFD, FD_CLOEXEC) != 0 ||
	    fcntl(ackp[1], F_SETFD, FD_CLOEXEC) != 0)
		bc_die("fcntl: %s", strerror(errno));
	snprintf(a_cmd, sizeof(a_cmd), "%d", cmdp[1]);
	snprintf(a_ack, sizeof(a_ack), "%d", ackp[0]);
	pid = bc_fork();
	if (pid == 0) {
		char *args[] = { (char *)o->valgrind, "--tool=callgrind",
				 "--collect-atstart=no",
				 "--toggle-collect=fi__*_slow",
				 "--toggle-collect=epoll_ctl_slow",
				 "--toggle-collect=shutdown_slow",
				 "--toggle-collect=accept_slow",
				 "--toggle-collect=connect_slow",
				 "--toggle-collect=close_slow",
				 "--toggle-collect=stack_hook",
				 "--toggle-collect=stack_on_end",
				 "--toggle-collect=stack_after_end_call",
				 "--toggle-collect=floor_on_eagain", outarg,
				 self_exe, "--child", (char *)sender_names[snd],
				 (char *)mode_names[m], a_len, a_copy,
				 (char *)sock_path, a_cmd, a_ack, NULL };
		int lf = open(logf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			      0600);

		if (lf < 0 || dup2(lf, 1) < 0 || dup2(lf, 2) < 0)
			_exit(127);
		if (!o->rep_movsb && setenv("GLIBC_TUNABLES", TUNABLES, 1) != 0)
			_exit(127);
		/* Every symbol bound at load: lazy binding would count the
		 * dynamic linker's work in the region of whichever sender
		 * first calls a libc function there. */
		if (setenv("LD_BIND_NOW", "1", 1) != 0)
			_exit(127);
		execvp(o->valgrind, args);
		dprintf(2, "sender_instr: cannot run %s: %s\n", o->valgrind,
			strerror(errno));
		_exit(127);
	}
	if (close(cmdp[1]) != 0 || close(ackp[0]) != 0)
		bc_die("close: %s", strerror(errno));
	for (;;) {
		struct cmd c;

		if (conn < 0 && snd != S_COPY) {
			/* Accept, unless the child fails before it
			 * connects (its command pipe closes). */
			struct pollfd p[2] = {
				{ .fd = listen_fd, .events = POLLIN },
				{ .fd = cmdp[0], .events = POLLIN },
			};

			if (poll(p, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				bc_die("poll: %s", strerror(errno));
			}
			if (p[0].revents != 0) {
				conn = accept4(listen_fd, NULL, NULL,
					       SOCK_CLOEXEC);
				if (conn < 0)
					bc_die("accept: %s", strerror(errno));
				continue;
			}
		}
		if (bc_read_full(cmdp[0], &c, sizeof(c)) != 0) {
			dump_file(logf);
			bc_die("the %s sender (%s, %zu bytes) stopped "
			       "without a result",
			       sender_names[snd], mode_names[m], len);
		}
		if (c.kind == CMD_RESULT) {
			out->c = c.counts;
			break;
		}
		if (conn < 0)
			bc_die("a command before the connection");
		have = peer_read(conn, buf,
				 have, c.kind == CMD_EOF ? UINT64_MAX : c.value);
		if (bc_write_full(ackp[1], &have, sizeof(have)) != 0)
			bc_die("write: %s", strerror(errno));
	}
	/* A plain waitpid, not bc_wait_status: this code is compiled into
	 * main with the floor's loop, and the call moved every floor cell by
	 * 4 instructions (measured). bc_fork's record of the child then
	 * holds a reaped pid, which its exit handler skips. */
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			bc_die("waitpid: %s", strerror(errno));
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		dump_file(logf);
		bc_die("the %s sender exited with status %d", sender_names[snd],
		       status);
	}
	if ((conn >= 0 && close(conn) != 0) || close(cmdp[0]) != 0 ||
	    close(ackp[1]) != 0)
		bc_die("close: %s", strerror(errno));
	out->ir = callgrind_ir(outf);
	if (o->keep) {
		char kept[PATH_MAX + 64];

		snprintf(kept, sizeof(kept), "%s/%s.%s.%zu.%d", tmp_dir,
			 sender_names[snd], mode_names[m], len, run_counter);
		if (rename(outf, kept) != 0)
			bc_die("rename: %s", strerror(errno));
		fprintf(stderr, "sender_instr: kept %s\n", kept);
	} else if (unlink(outf) != 0) {
		bc_die("unlink: %s", strerror(errno));
	}
	if (unlink(logf) != 0)
		bc_die("unlink: %s", strerror(errno));
	cur_out[0] = cur_log[0] = '\0';
	free(buf);
}

static int keep_files;

static void remove_tmp(void)
{
	char p[PATH_MAX];

	if (keep_files)
		return;
	/* The files of a run that died half-way, when there is one. */
	if (cur_out[0] != '\0')
		(void)unlink(cur_out);
	if (cur_log[0] != '\0')
		(void)unlink(cur_log);
	snprintf(p, sizeof(p), "%s/sock", tmp_dir);
	(void)unlink(p);
	(void)rmdir(tmp_dir);
}

/* The figures: spreads, targets, JSON (see that file for why it is
 * included rather than linked). */
#include "sender_instr_figures.c"

/* ---- options and main --------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr,
		"usage: sender_instr [--sizes 1,4] [--quick] [--repeat N] "
		"[--json] [--check] [--rep-movsb] [--keep] [--valgrind PATH]\n"
		"  --sizes LIST    payloads in MiB (default 1,4; at most %d)\n"
		"  --quick         1 MiB, and 4 MiB for the floor and owned "
		"only (the split)\n"
		"  --repeat N      runs of every cell, 2 to %d (default 2)\n"
		"  --json          accepted; the output is JSON either way\n"
		"  --check         exit 1 when a built target fails\n"
		"  --keep          keep the callgrind files (for "
		"callgrind_annotate)\n"
		"  --rep-movsb     leave glibc's memcpy as it is (rep movsb, "
		"which callgrind\n"
		"                  counts once per byte)\n"
		"  --valgrind P    the valgrind to run (default: valgrind on "
		"PATH)\n",
		MAX_SIZE_MIB, MAX_REPEAT);
	return 2;
}

static int parse_sizes(const char *arg, struct options *o)
{
	return bc_parse_mib_list(arg, o->sizes, MAX_SIZES, MAX_SIZE_MIB, &o->nsizes);
}

/*
 * Written out rather than with bc_parse_flags: the child's code is compiled
 * into main with the rest, and a table here changes main's register
 * allocation and with it the floor's counted loop (measured: floor
 * unclamped 1 MiB 760 -> 753 instructions, clamp 4 KiB 6,318 -> 6,059).
 */
static int parse_options(int argc, char **argv, struct options *o)
{
	int sizes_given = 0, quick = 0;

	*o = (struct options){ .repeat = 2, .valgrind = "valgrind" };
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			continue; /* JSON is the only output */
		} else if (strcmp(argv[i], "--keep") == 0) {
			o->keep = 1;
		} else if (strcmp(argv[i], "--rep-movsb") == 0) {
			o->rep_movsb = 1;
		} else if (strcmp(argv[i], "--check") == 0) {
			o->check = 1;
		} else if (strcmp(argv[i], "--quick") == 0) {
			quick = 1;
		} else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
			if (parse_sizes(argv[++i], o) < 0)
				return -EINVAL;
			sizes_given = 1;
		} else if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
			if (bc_parse_int(argv[++i], 2, MAX_REPEAT,
					 &o->repeat) < 0)
				return -EINVAL;
		} else if (strcmp(argv[i], "--valgrind") == 0 && i + 1 < argc) {
			o->valgrind = argv[++i];
		} else {
			return -EINVAL;
		}
	}
	if (!sizes_given) {
		o->sizes[0] = 1 * MIB;
		o->sizes[1] = 4 * MIB;
		o->nsizes = 2;
	}
	/* --quick: every sender at the first payload; the second is there
	 * for the owned write's split, which needs the floor and owned. */
	o->nfull = quick && o->nsizes > 1 ? 1 : o->nsizes;
	return 0;
}

int main(int argc, char **argv)
{
	struct target t[MAX_TARGETS];
	struct options o;
	char path[PATH_MAX];
	ssize_t n;
	int nt, met, total;

	if (argc > 1 && strcmp(argv[1], "--child") == 0) {
		bc_set_prog("sender_instr child");
		return child_main(argc, argv);
	}
	bc_set_prog("sender_instr");
	if (parse_options(argc, argv, &o) < 0)
		return usage();
	n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	if (n <= 0)
		bc_die("readlink /proc/self/exe: %s", strerror(errno));
	self_exe[n] = '\0';
	bc_ignore_sigpipe();
	keep_files = o.keep;
	if (mkdtemp(tmp_dir) == NULL)
		bc_die("mkdtemp: %s", strerror(errno));
	if (atexit(remove_tmp) != 0)
		bc_die("atexit failed");
	snprintf(path, sizeof(path), "%s/sock", tmp_dir);
	sock_path = path;
	listen_fd = bc_listen_unix(sock_path, 4);
	for (int k = 0; k < o.repeat; k++)
	for (int m = 0; m < NMODES; m++)
	for (size_t i = 0; i < o.nsizes; i++)
	for (int s = 0; s < NSENDERS; s++) {
		struct cell *x = &cells[m][i][s];
		/* copy runs after copying (S_COPY < S_COPYING would not
		 * know the length): taken in order below. */
		static const int order[NSENDERS] = {
			S_FLOOR, S_FLOOR_DIRECT, S_COPYING, S_COPY,
			S_OWNED, S_MEMMOVE };
		int snd = order[s];

		x = &cells[m][i][snd];
		if (snd == S_OWNED && !OWNED_BUILT) {
			x->skip = 1;
			continue;
		}
		if (i >= o.nfull && snd != S_FLOOR && snd != S_OWNED) {
			x->not_run = 1;
			continue;
		}
		fprintf(stderr, "sender_instr: pass %d of %d: %s, %zu MiB, "
				"%s\n",
			k + 1, o.repeat, mode_names[m], o.sizes[i] / MIB,
			sender_names[snd]);
		run_one(&o, (enum sender)snd, (enum mode)m, o.sizes[i],
			snd == S_COPY ? cells[m][i][S_COPYING].runs[k].c.copied
				      : 0,
			&x->runs[k]);
	}
	if (close(listen_fd) != 0)
		bc_die("close: %s", strerror(errno));
	nt = targets_make(&o, t);
	met = print_json(&o, argc, argv, t, nt, &total);
	return o.check && met < total ? 1 : 0;
}
