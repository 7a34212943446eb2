/*
 * fi_state.h: what the preload library (preload.c) keeps of one process,
 * laid out so that it can live in a file the process maps shared: the
 * counters, the rules, and what each fd was. `wirecheck exec` reads these
 * files after the process ended, however it ended (exit, a crash, SIGKILL
 * at a timeout), so the counts survive it; the library also writes them as
 * JSON at exit when it runs without wirecheck (WIRECHECK_COUNTS).
 *
 * Both sides are built from this one header in one build, so the layout
 * cannot differ; the magic and size catch a file of another build.
 */
#ifndef WIRECHECK_FI_STATE_H
#define WIRECHECK_FI_STATE_H

#include <stdint.h>

#include <jansson.h>

#include "fi.h"

#define FI_STATE_MAGIC "wcstate2"
/* What an fd was, kept per fd number: the first FI_WHAT_MAX - 1 things it
 * was and the latest one. */
#define FI_WHAT_MAX 4
#define FI_WHAT_LEN 112
#define FI_SPEC_LEN FI_SPEC_MAX

struct fi_fd_what {
	uint32_t n;                        /* things it was, all told */
	uint32_t provisional;              /* the last one may still change
					    * (a socket not yet connected) */
	char what[FI_WHAT_MAX][FI_WHAT_LEN];
};

struct fi_state {
	char magic[8];             /* FI_STATE_MAGIC, without its NUL */
	uint32_t size;             /* sizeof(struct fi_state) */
	int32_t pid;
	uint32_t exited;           /* 1 once its exit handlers ran */
	uint32_t nrules;
	char rules[FI_MAX_RULES][FI_SPEC_LEN]; /* canonical specs */
	struct fi_fd_what fds[FI_MAX_FD];
	struct fi_counters counters;
};

/*
 * Returns 1 when the bytes at s (len of them) are a state of this build:
 * the magic and the size match. Never reads past len.
 */
int fi_state_valid(const void *s, size_t len);

/*
 * The JSON of a process's state (docs/cli.md, "wirecheck exec", counts):
 * pid, exited, faults, syscalls (calls the kernel saw), refused, injected,
 * wouldblock, epoll_ctl_ops, forms, fds, fired and fired_total. Returns a
 * new reference, or NULL without memory. The state is only read.
 */
json_t *fi_state_json(const struct fi_state *s);

/*
 * The fired faults of c as a JSON list (docs/cli.md): the first
 * min(max, FI_FIRED_MAX) of them, each with its rule's spec (specs[rule],
 * or null when the rule is not among the nspecs: a failpoint fiu-ctrl
 * enabled), call, index, fd, offset, action, refused, conn (null for an fd
 * without a connection number) and length. Returns a new
 * reference, or NULL without memory. specs and c are only read.
 */
json_t *fi_fired_json(const struct fi_counters *c, const char *const *specs,
		      size_t nspecs, size_t max);

/* { kind: n } of the kinds whose v[kind] is not zero (v has FI_SYS_COUNT
 * entries); a new reference, or NULL without memory. */
json_t *fi_kinds_json(const uint64_t *v);

#endif
