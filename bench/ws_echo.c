/*
 * ws_echo.c: WebSocket echo and chat servers, the reference stack's
 * (reference/ws.c, forked from this program) against node 20 + npm ws
 * 8.18.3 (bench/ws_server.js) and Bun's Bun.serve (bench/ws_server_bun.js,
 * uWebSockets inside; $WIRECHECK_BUN, else the pinned one in third_party/bun,
 * left out with a note when neither runs, or with --no-bun), in the same
 * run, so that the three share whatever the machine does meanwhile.
 *
 * Echo rows: 16-byte text, 16-byte binary, 1 KiB and 16 KiB of non-ASCII
 * text (UTF-8 of 2- and 3-byte characters). A round sends M messages on one
 * connection, at most W in flight (64 KiB of messages, at most 32; --window
 * sets W), and reads every echo back (checked byte for byte). The figure:
 * server CPU per message, user + system, from the server's own getrusage
 * (the reference server) or process.cpuUsage() (node, the same getrusage),
 * read before and after the round through a "!cpu" text message the server
 * answers to its sender alone.
 * Chat: 32 connections; a round: each client sends 8 16-byte text
 * messages, the server writes each message to all 32, the round ends when
 * every client has read all 256. Figures: messages in per second (256 over
 * the round's time), deliveries per second (x32), server CPU per message in.
 *
 * Bun's chat is its pub/sub (every socket subscribes to one topic, each
 * message is one server.publish), as Bun's guide to a chat server does;
 * the reference's is its equivalent, one rs_ws_publish to a group of every
 * client (reference/ws_group.c); node + npm ws has no publish, its server
 * is a loop of ws.send. The rows "by a loop of sends" are the same chat
 * with a loop of sends on every side (node's rounds again).
 *
 * Sides run in interleaved rounds, the order rotated by one each round
 * (ref, node, bun, then node, bun, ref, ...): the medians, min and max,
 * and the ratios to the reference are printed with the load average, as
 * the machine is shared. Each round pairs the sides' runs seconds apart:
 * a row's target "ahead of X" is judged on the rounds' own ratios, met
 * when the low end of their median's 95% sign-test interval is above 1
 * (bench/chunked.py's rule; with under 6 rounds, --quick, when that
 * median and the medians' ratio are both above 1). The clients are this process: plain C,
 * blocking unix sockets, frames masked with the zero key (masking is then a
 * no-op for the client; the servers still unmask).
 *
 * usage: ws_echo [--quick] [--rounds N] [--json] [--instructions WS_SEND]
 *                [--no-bun] [--window N]
 * It prints its figures as one JSON object, which the report's bench_ws
 * section renders (--json is accepted and changes nothing); --instructions runs bench/ws_instructions.sh on WS_SEND too and adds
 * its callgrind figures, which hold still where time does not.
 * Exits 0 when the benchmark ran, 1 on a failure (a frame, a connection,
 * node or npm ws missing), 2 on a usage error.
 *
 * Two more modes are bench/ws_syscalls.py's parts, for counting each
 * server's syscalls with the preload gate (`wirecheck exec`):
 *   ws_echo --serve-ref PATH          the reference echo server, in the
 *                                     foreground ("!quit" ends it)
 *   ws_echo --serve-ref-chat PATH     the reference chat server (publish),
 *                                     the same
 *   ws_echo --serve-ref-chat-send PATH  the same, by a loop of sends
 *   ws_echo --chat-client PATH ROUNDS 32 connections, ROUNDS chat rounds
 *                                     (each message checked), "!quit"
 *   ws_echo --client PATH ROW COUNT [WINDOW]
 *                                     one connection: COUNT messages of echo
 *                                     row ROW (0 to 3, the rows above),
 *                                     at most WINDOW in flight (default as
 *                                     the echo rounds'), every echo read
 *                                     back and checked, then "!quit"
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "rs.h"
#include "ws_echo.h"
#include "ws_frame.h"

/* ---- rounds ----------------------------------------------------------- */

struct row {
	const char *name;
	int op;
	size_t size;
	int msgs;     /* per round */
	uint8_t *payload;
};

static uint8_t *payload_of(int op, size_t size)
{
	uint8_t *p = malloc(size);
	size_t i = 0;

	if (!p)
		bc_die("out of memory");
	if (op == RS_WS_OP_BINARY || size <= 16) {
		for (; i < size; i++)
			p[i] = (uint8_t)(op == RS_WS_OP_BINARY ? i * 37 + 200 : 'a' + i % 26);
		return p;
	}
	/* Non-ASCII text: "é" (2 bytes) and "€" (3 bytes), in turn. */
	while (i + 5 <= size) {
		memcpy(p + i, "\xc3\xa9\xe2\x82\xac", 5);
		i += 5;
	}
	for (; i < size; i++)
		p[i] = 'x';
	return p;
}

/* --window N: at most N echo messages in flight; 0, the default: 64 KiB
 * of messages, at most 32. With 1, every message is a read and a write of
 * its own on both sides, so that no side's way of writing several echoes
 * of one read counts. */
static int echo_window;

/* COUNT messages of r on c, at most the echo round's window in flight,
 * every echo checked. */
static void echo_count(struct conn *c, const struct row *r, int count)
{
	int window = echo_window > 0 ? echo_window
		     : (int)(65536 / r->size) < 32 ? (int)(65536 / r->size) : 32;
	int sent = 0, got = 0;

	if (window < 1)
		window = 1;
	while (got < count) {
		int op;
		size_t len;
		const uint8_t *p;

		while (sent < count && sent - got < window) {
			conn_send(c, r->op, r->payload, r->size);
			sent++;
		}
		p = conn_frame(c, &op, &len);
		if (op != r->op || len != r->size || memcmp(p, r->payload, len))
			bc_die("echo %d of %s differs", got, r->name);
		got++;
	}
}

/* One echo round: CPU per message (us); *rate gets messages per second. */
static double echo_round(struct conn *c, const struct row *r, double *rate)
{
	double cpu0 = conn_cpu(c), t0 = bc_clock_us(CLOCK_MONOTONIC), cpu1, t1;

	echo_count(c, r, r->msgs);
	t1 = bc_clock_us(CLOCK_MONOTONIC);
	cpu1 = conn_cpu(c);
	*rate = r->msgs / ((t1 - t0) / 1e6);
	return (cpu1 - cpu0) / r->msgs;
}

/* Each of the n clients sends CHAT_MSGS messages, then reads all
 * n * CHAT_MSGS, each checked. */
static void chat_exchange(struct conn *c, int n)
{
	static const char msg[16] = "chat message 16b";

	for (int i = 0; i < n; i++)
		for (int k = 0; k < CHAT_MSGS; k++)
			conn_send(&c[i], RS_WS_OP_TEXT, msg, sizeof(msg));
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < n * CHAT_MSGS; k++) {
			int op;
			size_t len;
			const uint8_t *p = conn_frame(&c[i], &op, &len);

			if (op != RS_WS_OP_TEXT || len != sizeof(msg) ||
			    memcmp(p, msg, len))
				bc_die("chat message %d at client %d differs", k, i);
		}
	}
}

/* One chat round: CPU per message in (us); *rate gets messages in per
 * second. */
static double chat_round(struct conn *c, int n, double *rate)
{
	double cpu0 = conn_cpu(&c[0]), t0 = bc_clock_us(CLOCK_MONOTONIC), cpu1, t1;

	chat_exchange(c, n);
	t1 = bc_clock_us(CLOCK_MONOTONIC);
	cpu1 = conn_cpu(&c[0]);
	*rate = n * CHAT_MSGS / ((t1 - t0) / 1e6);
	return (cpu1 - cpu0) / (n * CHAT_MSGS);
}

/*
 * The rounds' own ratios of the reference over another side (each round
 * runs every side once, seconds apart, so a drift of the machine weighs on
 * both sides of a round's ratio): their median, the 95% interval of that
 * median from the sign test (the k-th smallest and k-th largest ratio, k
 * the largest with P(Binomial(n, 1/2) < k) <= 0.025; none under 6
 * rounds), as bench/chunked.py's sign_interval(), and how many rounds the
 * reference won.
 */
struct paired {
	int n, won, has_interval;
	double med, lo, hi;
};

static struct paired paired_of(const double *ratios, int n)
{
	struct paired p = { .n = n };
	double c[64], below = 0, pj = 1;
	int k = 0;

	memcpy(c, ratios, (size_t)n * sizeof(*c));
	bc_sort_doubles(c, (size_t)n);
	p.med = bc_median(c, (size_t)n);
	for (int i = 0; i < n; i++)
		p.won += ratios[i] > 1;
	for (int i = 0; i < n; i++)
		pj /= 2; /* C(n, 0) / 2^n */
	for (int j = 0; j <= n; j++) {
		below += pj;
		if (below > 0.025)
			break;
		k = j + 1;
		pj = pj * (n - j) / (j + 1);
	}
	if (k > 0) {
		p.has_interval = 1;
		p.lo = c[k - 1];
		p.hi = c[n - k];
	}
	return p;
}

#define NPATHS 8
static char paths[NPATHS][128];

/* The servers' socket files, before bc_socket_dir's removal of their
 * directory (atexit runs this first: it is registered after). */
static void unlink_paths(void)
{
	for (int i = 0; i < NPATHS; i++)
		if (paths[i][0])
			(void)unlink(paths[i]);
}

/* The sides of a row: the reference stack, node + npm ws, Bun. */
enum { REF, NODE, BUN, NSIDES };
static const char *const side_key[NSIDES] = { "ref", "node", "bun" };

/* One line of the results: a figure of each side that ran it. */
struct result {
	char name[80];
	const char *unit;
	int higher_better;
	int have[NSIDES];
	struct bc_spread s[NSIDES];
	/* how far ref is ahead of side k: k/ref (CPU), ref/k (rates) */
	double ahead[NSIDES];
	/* the same, round by round */
	struct paired paired[NSIDES];
};

static struct result results[24];
static int nresults;

/* v[k] is side k's figures, NULL for a side that did not run the row. */
static void add_result(const char *name, const char *unit, double *v[NSIDES],
		       int n, int higher_better)
{
	struct result *r = &results[nresults++];

	snprintf(r->name, sizeof(r->name), "%s", name);
	r->unit = unit;
	r->higher_better = higher_better;
	for (int k = 0; k < NSIDES; k++) {
		r->have[k] = v[k] != NULL;
		if (!v[k])
			continue;
		r->s[k] = bc_spread_of(v[k], (size_t)n);
	}
	for (int k = 0; k < NSIDES; k++) {
		double ratios[64];

		r->ahead[k] = !r->have[k] ? 0
			      : higher_better ? r->s[REF].median / r->s[k].median
					      : r->s[k].median / r->s[REF].median;
		if (!r->have[k] || k == REF)
			continue;
		for (int i = 0; i < n; i++)
			ratios[i] = higher_better ? v[REF][i] / v[k][i]
						  : v[k][i] / v[REF][i];
		r->paired[k] = paired_of(ratios, n);
	}
}

/* The target's judgement against side k: the low end of the rounds'
 * ratios' interval above 1 (bench/chunked.py's rule for paired runs);
 * with too few rounds for one, the medians' ratio and the median of the
 * rounds' ratios both above 1. */
static int ahead_of(const struct result *r, int k)
{
	const struct paired *p = &r->paired[k];

	if (p->has_interval)
		return p->lo > 1;
	return r->ahead[k] > 1 && p->med > 1;
}

/* The rounds' ratios against side k: their median, the sign test's
 * interval (null under 6 rounds) and the rounds the reference won. */
static json_t *json_paired(const struct paired *q)
{
	return bc_pack("{s:i, s:o, s:i, s:o}", "rounds", q->n,
		       "median", bc_real(q->med, 4), "won", q->won, "interval",
		       q->has_interval ? bc_pack("[oo]", bc_real(q->lo, 4),
						 bc_real(q->hi, 4))
				       : json_null());
}

static json_t *json_result(const struct result *r)
{
	json_t *j = bc_pack("{s:s, s:s, s:b}", "row", r->name, "unit", r->unit,
			    "higher_is_better", r->higher_better);
	json_t *paired = bc_pack("{}"), *ahead = bc_pack("{}");

	for (int k = 0; k < NSIDES; k++)
		bc_set(j, side_key[k],
		       r->have[k] ? bc_spread_json(&r->s[k], 4) : json_null());
	bc_set(j, "ref_ahead_by",
	       r->have[NODE] ? bc_real(r->ahead[NODE], 4) : json_null());
	bc_set(j, "ref_ahead_of_bun",
	       r->have[BUN] ? bc_real(r->ahead[BUN], 4) : json_null());
	for (int k = NODE; k < NSIDES; k++) {
		if (!r->have[k])
			continue;
		bc_set(paired, side_key[k], json_paired(&r->paired[k]));
		bc_set(ahead, side_key[k], json_boolean(ahead_of(r, k)));
	}
	bc_set(j, "paired", paired);
	bc_set(j, "ahead", ahead);
	return j;
}

/* The figures as JSON, which the report's bench_ws section renders. */
static void print_json(int argc, char **argv, const struct bc_machine *m,
		       int rounds, int chat_rounds, const double *instr,
		       const char *bun_ver)
{
	json_t *report = bc_report_new(argc, argv), *rows, *targets;

	bc_set(report, "bench", json_string("ws"));
	bc_report_machine(report, m);
	bc_set(report, "rounds", json_integer(rounds));
	bc_set(report, "echo_window", echo_window > 0 ? json_integer(echo_window) : json_null());
	bc_set(report, "chat_rounds_per_round", json_integer(chat_rounds));
	bc_set(report, "chat_clients", json_integer(CHAT_CLIENTS));
	bc_set(report, "chat_messages_per_client", json_integer(CHAT_MSGS));
	bc_set(report, "transport", json_string("unix"));
	bc_set(report, "ws_version", json_string("8.18.3"));
	bc_set(report, "bun_version", bun_ver ? json_string(bun_ver) : json_null());
	bc_set(report, "bun_chat", json_string("server.publish"));
	bc_set(report, "instructions",
	       instr ? bc_pack("{s:o, s:o}", "send_16_text", bc_real(instr[0], 1),
			       "echo_16_text", bc_real(instr[1], 1))
		     : json_null());
	bc_set(report, "rows", rows = bc_pack("[]"));
	for (int i = 0; i < nresults; i++)
		bc_append(rows, json_result(&results[i]));
	targets = bc_pack("[]");
	for (int i = 0; i < nresults; i++) {
		for (int k = NODE; k < NSIDES; k++) {
			char name[160];

			if (!results[i].have[k])
				continue;
			snprintf(name, sizeof(name), "%.80s: ahead of %s", results[i].name,
				 k == NODE ? "node + ws" : "Bun");
			bc_append(targets, bc_pack("{s:s, s:b}", "target", name, "pass",
						   ahead_of(&results[i], k)));
		}
	}
	bc_report_targets(report, targets);
	bc_report_print(report);
}

/* bench/ws_instructions.sh on ws_send: the send's and the echo's
 * instructions (callgrind). Returns 0, or -1 when it did not run. */
static int run_instructions(const char *ws_send, double out[2])
{
	char cmd[512], line[256];
	int got = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "bash '%s' '%s' 100000 2>&1", WS_INSTRUCTIONS_SH,
		 ws_send);
	if (!(f = popen(cmd, "r")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "ws send, 16-byte text, server socket: %lf", &out[0]) == 1)
			got |= 1;
		if (sscanf(line, "ws echo, 16-byte text, server socket: %lf", &out[1]) == 1)
			got |= 2;
	}
	(void)pclose(f);
	return got == 3 ? 0 : -1;
}

static void quit(struct conn *c, pid_t pid, const char *what)
{
	conn_send(c, RS_WS_OP_TEXT, "!quit", 5);
	bc_wait_child(pid, what);
}

static void usage(void)
{
	fprintf(stderr, "usage: ws_echo [--quick] [--rounds N] [--json] "
		"[--instructions WS_SEND] [--no-bun] [--window N]\n"
		"       ws_echo --serve-ref PATH | --serve-ref-chat PATH | "
		"--serve-ref-chat-send PATH\n"
		"       ws_echo --client PATH ROW COUNT [WINDOW] | --chat-client PATH ROUNDS\n");
	exit(2);
}

/* CHAT_CLIENTS connections, ROUNDS chat rounds (each checked), "!quit". */
static int chat_client(const char *path, int rounds)
{
	static struct conn c[CHAT_CLIENTS];

	for (int i = 0; i < CHAT_CLIENTS; i++)
		c[i] = conn_open(path);
	for (int r = 0; r < rounds; r++)
		chat_exchange(c, CHAT_CLIENTS);
	conn_send(&c[0], RS_WS_OP_TEXT, "!quit", 5);
	for (int i = 0; i < CHAT_CLIENTS; i++) {
		free(c[i].buf);
		close(c[i].fd);
	}
	return 0;
}

/* The chat servers: the three sides' (the reference's and Bun's by
 * publish, node's a loop of sends), and the reference's and Bun's by a
 * loop of sends. */
enum { CHAT_REF, CHAT_NODE, CHAT_REF_SEND, CHAT_BUN, CHAT_BUN_SEND, NCHAT };

int main(int argc, char **argv)
{
	int rounds = 9, quick = 0, no_bun = 0;
	const char *ws_send = NULL;
	struct bc_machine machine;
	double instr[2];
	int have_instr = 0, nsides, nchat;
	char dir[128], bun_ver[64] = "";
	struct row rows[4] = {
		{ "echo 16 B text", RS_WS_OP_TEXT, 16, 20000, NULL },
		{ "echo 16 B binary", RS_WS_OP_BINARY, 16, 20000, NULL },
		{ "echo 1 KiB non-ASCII text", RS_WS_OP_TEXT, 1024, 10000, NULL },
		{ "echo 16 KiB non-ASCII text", RS_WS_OP_TEXT, 16384, 2000, NULL },
	};
	static double cpu[NCHAT][64], rate[NCHAT][64];
	static struct conn ce[NSIDES], cc[NCHAT][CHAT_CLIENTS];
	pid_t pe[NSIDES] = { 0 }, pc[NCHAT] = { 0 };
	int chat_rounds;

	bc_set_prog("ws_echo");
	bc_ignore_sigpipe();
	if (argc == 3 && !strcmp(argv[1], "--serve-ref"))
		return serve_ref(0, argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--serve-ref-chat"))
		return serve_ref(CHAT_PUBLISH, argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--serve-ref-chat-send"))
		return serve_ref(CHAT_LOOP, argv[2]);
	if (argc == 4 && !strcmp(argv[1], "--chat-client")) {
		int n;

		if (bc_parse_int(argv[3], 0, 1000000, &n) < 0)
			bc_die("--chat-client PATH ROUNDS: ROUNDS a number");
		return chat_client(argv[2], n);
	}
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "--client")) {
		int row, count;
		struct conn c;

		if (bc_parse_int(argv[3], 0, 3, &row) < 0 ||
		    bc_parse_int(argv[4], 0, 10000000, &count) < 0 ||
		    (argc == 6 && bc_parse_int(argv[5], 1, 1024, &echo_window) < 0))
			bc_die("--client PATH ROW COUNT [WINDOW]: ROW 0 to 3, COUNT a "
			       "number, WINDOW 1 to 1024");
		rows[row].payload = payload_of(rows[row].op, rows[row].size);
		c = conn_open(argv[2]);
		echo_count(&c, &rows[row], count);
		conn_send(&c, RS_WS_OP_TEXT, "!quit", 5);
		free(rows[row].payload);
		free(c.buf);
		close(c.fd);
		return 0;
	}
	{
		const struct bc_flag flags[] = {
			BC_ON("--quick", &quick),
			BC_INT("--rounds", &rounds, 1, 64),
			BC_ON("--json", NULL), /* JSON is the only output */
			BC_ON("--no-bun", &no_bun),
			BC_STR("--instructions", &ws_send),
			BC_INT("--window", &echo_window, 1, 1024),
		};

		if (bc_parse_flags(argc, argv, flags,
				   sizeof(flags) / sizeof(flags[0])) < 0)
			usage();
	}
	if (quick) {
		rounds = rounds > 3 ? 3 : rounds;
		for (int i = 0; i < 4; i++)
			rows[i].msgs /= 10;
	}
	if (!no_bun && !bun_binary())
		fprintf(stderr, "ws_echo: Bun is not installed (%s; scripts/setup.sh, "
			"or WIRECHECK_BUN): its column is left out\n", BUN_BIN);
	nsides = !no_bun && bun_binary() ? NSIDES : BUN;
	nchat = nsides == NSIDES ? NCHAT : CHAT_BUN;
	/* 3 + NCHAT socket paths. */
	_Static_assert(3 + NCHAT <= NPATHS, "a path for each server");
	if (nsides == NSIDES)
		bun_version(bun_ver, sizeof(bun_ver));
	chat_rounds = quick ? 20 : 100;
	/* bc_socket_dir gives DIR/sock; the servers' sockets go in DIR. */
	snprintf(dir, sizeof(dir), "%s", bc_socket_dir("/tmp/ws_echo.XXXXXX"));
	if (strlen(dir) > 5)
		dir[strlen(dir) - 5] = '\0';
	{
		static const char *const names[NPATHS] = {
			"ref-echo", "node-echo", "bun-echo", "ref-chat",
			"node-chat", "ref-chat-send", "bun-chat", "bun-chat-send"
		};

		for (int i = 0; i < NPATHS; i++) {
			int n = snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, names[i]);

			if (n < 0 || (size_t)n >= sizeof(paths[i]))
				bc_die("socket path too long");
		}
	}
	if (atexit(unlink_paths) != 0)
		bc_die("atexit failed");
	pe[REF] = start_ref(0, paths[0]);
	pe[NODE] = start_node(0, paths[1]);
	if (nsides == NSIDES)
		pe[BUN] = start_bun(0, paths[2]);
	pc[CHAT_REF] = start_ref(CHAT_PUBLISH, paths[3 + CHAT_REF]);
	pc[CHAT_NODE] = start_node(1, paths[3 + CHAT_NODE]);
	pc[CHAT_REF_SEND] = start_ref(CHAT_LOOP, paths[3 + CHAT_REF_SEND]);
	if (nchat == NCHAT) {
		pc[CHAT_BUN] = start_bun(1, paths[3 + CHAT_BUN]);
		pc[CHAT_BUN_SEND] = start_bun(2, paths[3 + CHAT_BUN_SEND]);
	}
	for (int k = 0; k < nsides; k++)
		ce[k] = conn_open(paths[k]);
	for (int i = 0; i < CHAT_CLIENTS; i++)
		for (int k = 0; k < nchat; k++)
			cc[k][i] = conn_open(paths[3 + k]);
	for (int i = 0; i < 4; i++)
		rows[i].payload = payload_of(rows[i].op, rows[i].size);
	machine = bc_machine_start();
	/* A warm-up round of every row on every side (the JITs). */
	for (int i = 0; i < 4; i++)
		for (int side = 0; side < nsides; side++)
			(void)echo_round(&ce[side], &rows[i], &rate[side][0]);
	for (int i = 0; i < 4; i++) {
		char name[64];
		double *c[NSIDES] = { cpu[REF], cpu[NODE], nsides > BUN ? cpu[BUN] : NULL };
		double *t[NSIDES] = { rate[REF], rate[NODE], nsides > BUN ? rate[BUN] : NULL };

		/* Each round runs every side once, the order rotated by one
		 * from round to round. */
		for (int r = 0; r < rounds; r++)
			for (int k = 0; k < nsides; k++) {
				int side = (r + k) % nsides;

				cpu[side][r] = echo_round(&ce[side], &rows[i],
							  &rate[side][r]);
			}
		snprintf(name, sizeof(name), "%s: server CPU", rows[i].name);
		add_result(name, "us/msg", c, rounds, 0);
		snprintf(name, sizeof(name), "%s: rate", rows[i].name);
		add_result(name, "msg/s", t, rounds, 1);
	}
	for (int w = 0; w < nchat; w++)
		(void)chat_round(cc[w], CHAT_CLIENTS, &rate[w][0]);
	{
		int per = chat_rounds / rounds > 0 ? chat_rounds / rounds : 1;
		double *c[NSIDES] = { cpu[CHAT_REF], cpu[CHAT_NODE],
				      nchat > CHAT_BUN ? cpu[CHAT_BUN] : NULL };
		double *t[NSIDES] = { rate[CHAT_REF], rate[CHAT_NODE],
				      nchat > CHAT_BUN ? rate[CHAT_BUN] : NULL };

		for (int r = 0; r < rounds; r++)
			for (int k = 0; k < nchat; k++) {
				int side = (r + k) % nchat;
				double sc = 0, sr = 0, rr;

				for (int j = 0; j < per; j++) {
					sc += chat_round(cc[side], CHAT_CLIENTS, &rr);
					sr += rr;
				}
				cpu[side][r] = sc / per;
				rate[side][r] = sr / per;
			}
		add_result("chat, 32 clients: server CPU", "us/msg in", c, rounds, 0);
		add_result("chat, 32 clients: messages in", "msg/s", t, rounds, 1);
		/* Every side by a loop of sends: node's rounds again (its
		 * server is a loop of sends in both rows). */
		c[REF] = cpu[CHAT_REF_SEND];
		t[REF] = rate[CHAT_REF_SEND];
		c[BUN] = nchat == NCHAT ? cpu[CHAT_BUN_SEND] : NULL;
		t[BUN] = nchat == NCHAT ? rate[CHAT_BUN_SEND] : NULL;
		add_result("chat, 32 clients, by a loop of sends: server CPU",
			   "us/msg in", c, rounds, 0);
		add_result("chat, 32 clients, by a loop of sends: messages in",
			   "msg/s", t, rounds, 1);
		chat_rounds = per;
	}
	bc_machine_end(&machine);
	for (int i = 0; i < 4; i++)
		free(rows[i].payload);
	if (ws_send)
		have_instr = run_instructions(ws_send, instr) == 0;
	print_json(argc, argv, &machine, rounds, chat_rounds,
		   have_instr ? instr : NULL, nsides == NSIDES ? bun_ver : NULL);
	quit(&ce[REF], pe[REF], "the reference echo server");
	quit(&ce[NODE], pe[NODE], "node's echo server");
	if (nsides == NSIDES)
		quit(&ce[BUN], pe[BUN], "Bun's echo server");
	quit(&cc[CHAT_REF][0], pc[CHAT_REF], "the reference chat server");
	quit(&cc[CHAT_NODE][0], pc[CHAT_NODE], "node's chat server");
	quit(&cc[CHAT_REF_SEND][0], pc[CHAT_REF_SEND],
	     "the reference chat server (a loop of sends)");
	if (nchat == NCHAT) {
		quit(&cc[CHAT_BUN][0], pc[CHAT_BUN], "Bun's chat server");
		quit(&cc[CHAT_BUN_SEND][0], pc[CHAT_BUN_SEND],
		     "Bun's chat server (ws.send)");
	}
	bc_finish_output();
	return 0;
}
