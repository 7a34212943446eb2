/*
 * sender_cpu.h: what bench/sender_cpu.c measures and bench/sender_cpu_json.c
 * writes as JSON: the senders, the cells, the options.
 */
#ifndef WIRECHECK_SENDER_CPU_H
#define WIRECHECK_SENDER_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "bench_common.h"

#define KIB ((size_t)1024)
#define MIB (1024 * KIB)

/* The clamp of the clamped mode, and the gate rule that applies it. */
#define CLAMP ((size_t)4096)
#define CLAMP_RULE "write:short=4096,repeat=forever"

/* memmove cells predicted to move more than this are skipped. */
#define SKIP_BYTES UINT64_C(20000000000)

#define MAX_SIZES 16

enum transport { T_UNIX, T_TCP, NTRANSPORTS };
enum mode { M_UNCLAMPED, M_CLAMPED, NMODES };
enum sender {
	S_CURSOR,
	S_OWNED,
	S_MEMMOVE,
	S_FLOOR,
	S_COPY,
	S_NODE,
	S_LIBUV,
	NSENDERS
};

/* Whether librefstack has the owned write (bench/CMakeLists.txt looks for
 * it in rs.h): until then the owned sender does not run. */
#ifdef RS_HAVE_OWNED_WRITE
#define OWNED_BUILT 1
#else
#define OWNED_BUILT 0
#endif

extern const char *const transport_names[NTRANSPORTS];
extern const char *const mode_names[NMODES];
extern const char *const sender_names[NSENDERS];

/* One run of one sender. */
struct sample {
	double cpu_ms;
	uint64_t sends;   /* send and sendmsg calls, EAGAIN included */
	uint64_t waits;   /* epoll_wait calls */
	uint64_t moved;   /* bytes the stack's queue moved (0 for the floor) */
};

/* One sender at one size, transport and mode, over the rounds. */
struct cell {
	int skipped;        /* memmove predicted above SKIP_BYTES */
	int na;             /* the sender does not run here (left out by
			     * --subjects, node or libuv's sender not found,
			     * no preload library for their clamp, or the
			     * owned write not built) */
	uint64_t predicted; /* memmove's bytes moved, C(n-1)(n-2)/2; 0 if none */
	size_t n;
	struct sample *samples;
	/* Filled once the rounds are done: medians, and the least CPU. */
	double cpu_ms;
	double min_ms;
	double max_ms;
	double sends;
	double waits;
	double moved;
};

struct options {
	size_t sizes[MAX_SIZES]; /* bytes, ascending, distinct */
	size_t nsizes;
	int rounds;
	const char *json_out; /* --json-out FILE, or NULL: a copy of stdout */
	int warm_heap;
	int no_node;
	int no_libuv;
	const char *node_script;
	const char *libuv_sender; /* bench/sender_libuv, or NULL: not built */
	const char *preload;      /* the gate as a preload library, or NULL */
	/* --subjects: 64 MiB over the unix socket, the senders of the
	 * figure only (cursor, floor, node, libuv), and its own table. */
	int subjects;
	int want_sender[NSENDERS];
	int want_transport[NTRANSPORTS];
	const char *heap; /* "fresh", "warm", or "default" when mallopt failed */
	/* Filled by the run. */
	int sender_cpu;   /* the CPU the senders are pinned to, or -1 */
	int reader_cpu;   /* the reader's, or -1 */
	const char *node_version; /* NULL when node did not run */
	const char *libuv_version; /* NULL when libuv's sender did not run */
	/* Whether node's and libuv's clamped senders ran (under the preload). */
	int child_clamped[NSENDERS];
};

extern struct cell cells[NTRANSPORTS][NMODES][MAX_SIZES][NSENDERS];

/* Whether a cell holds figures. */
static inline int cell_ran(const struct cell *c)
{
	return !c->skipped && !c->na && c->n > 0;
}

/*
 * The run's report: the cells and the options as a JSON object (see
 * bc_report_new), the caller's to print. Dies as the bc_ builders do.
 */
json_t *sender_cpu_report(const struct options *o, int argc, char **argv,
			  const struct bc_machine *mach);

#endif
