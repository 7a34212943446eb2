/*
 * event_line.h: the harness's reader of the lines a subject writes on its
 * event pipe (docs/subject-protocol.md, "Lines from the subject"): one
 * line in, what it says out, no I/O and no state, so that every subject's
 * lines are judged by one grammar.
 */
#ifndef WIRECHECK_EVENT_LINE_H
#define WIRECHECK_EVENT_LINE_H

#include <stddef.h>
#include <stdint.h>

enum el_kind {
	EL_BROKEN,     /* a NUL byte, or no keyword of the protocol */
	EL_EV,         /* ev TASK CONN TEXT */
	EL_SYNC,       /* sync POINT W0 W1 ... */
	EL_KILL,       /* kill SIG [PID] */
	EL_LISTENING,  /* listening PORT */
	EL_STATS,      /* stats bytes_moved=N allocations=M bytes_copied=C */
	EL_FATAL,      /* fatal MESSAGE */
	EL_NOTE,       /* note [TEXT]: for a person, not part of the trace */
};

/* What a line is judged against: the run's scenario. */
struct el_context {
	int nconns;          /* connections: CONN and the Ws of a sync */
	int unix_transport;  /* listening PORT is then 0 */
	uint64_t *written;   /* room for nconns counts, a sync line's Ws */
};

struct el_line {
	enum el_kind kind;
	uint64_t task, conn;   /* ev */
	const char *text;      /* ev: TEXT; fatal: MESSAGE (in the line) */
	char point[64];        /* sync: POINT; the Ws go to cx->written */
	uint64_t sig, pid;     /* kill: pid 0 when the line names none */
	int port;              /* listening */
	uint64_t stats[3];     /* bytes_moved, allocations, bytes_copied */
};

/*
 * Reads one line, without its newline (line[len] is its NUL). Sets
 * out->kind from the keyword even when the rest is wrong, so that the
 * caller can judge a line by its kind first (a listening line from a
 * client). Returns 0, or -1 with the problem in problem[0, plen), written
 * as docs/subject-protocol.md says it ("TASK is not a number (ev TASK CONN
 * TEXT)"). TEXT and MESSAGE are not checked to be UTF-8 here.
 */
int el_parse(const char *line, size_t len, const struct el_context *cx,
	     struct el_line *out, char *problem, size_t plen);

#endif
