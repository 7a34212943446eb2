/*
 * validate.c: what is checked once the whole scenario is known, the
 * command-line flags applied (scenario.h, sc_validate): connection indexes
 * (of blocks, operations, peer actions and sweep-declare lines),
 * task and checkpoint numbers, the gate's rule limit, `peer exec`.
 */
#include "scenario.h"
#include "scenario_int.h"

#include "fi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int check_conn(const struct scenario *sc, int conn, int line,
		      char *err, size_t errlen)
{
	if (conn >= sc->connections)
		return wc_say(err, errlen, "%s:%d: conn=%d, but the scenario has %d connection%s (indexes from 0)",
			   sc->path ? sc->path : "scenario", line, conn,
			   sc->connections, sc->connections == 1 ? "" : "s");
	return 0;
}

static int check_block(const struct scenario *sc, const struct sc_block *b,
		       char *err, size_t errlen)
{
	if (b->conn >= 0 && check_conn(sc, b->conn, b->line, err, errlen) < 0)
		return -1;
	for (size_t i = 0; i < b->nops; i++) {
		enum sc_op_kind k = b->ops[i].kind;

		if (check_conn(sc, b->ops[i].conn, b->ops[i].line, err, errlen) < 0)
			return -1;
		/* WebSocket operations need WebSocket connections. */
		if ((k == SC_OP_WS_SEND || k == SC_OP_WS_CLOSE ||
		     k == SC_OP_WS_PING || k == SC_OP_WS_BUFFERED) && !sc->websocket)
			return wc_say(err, errlen, "%s:%d: '%s' needs 'websocket yes'",
				       sc->path ? sc->path : "scenario",
				       b->ops[i].line, sc_op_name(k));
	}
	return 0;
}

/* Checkpoints in tasks, which run once each; one in a handler may run any
 * number of times, so it counts as none here. */
static int count_checkpoints(const struct scenario *sc)
{
	int n = 0;

	for (size_t i = 0; i < sc->ntasks; i++)
		for (size_t k = 0; k < sc->tasks[i].nops; k++)
			n += sc->tasks[i].ops[k].kind == SC_OP_CHECKPOINT;
	return n;
}

/* Whether prog (a path, or a name looked up in PATH, as execvp does) is an
 * executable file. */
static int find_program(const char *prog)
{
	const char *path = getenv("PATH");
	char full[4096];
	struct stat st;

	if (strchr(prog, '/'))
		return stat(prog, &st) == 0 && S_ISREG(st.st_mode) && access(prog, X_OK) == 0;
	for (const char *dir = path ? path : "/usr/bin:/bin"; *dir;) {
		size_t len = strcspn(dir, ":");

		if ((size_t)snprintf(full, sizeof(full), "%.*s/%s", (int)len,
				     len ? dir : ".", prog) < sizeof(full) &&
		    stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0)
			return 1;
		dir += len + (dir[len] == ':');
	}
	return 0;
}

/* peer exec: the program exists, its arguments expand on this transport,
 * and nothing asks the harness's own peer to act. */
static int check_peer_exec(const struct scenario *sc, char *err, size_t errlen)
{
	const struct sc_peer_exec *x = sc->peer_exec;
	const char *where = sc->path ? sc->path : "scenario";
	/* The longest address a run can give: the largest port, a path as
	 * long as run.c's temporary folder allows. */
	struct sc_exec_address a = { sc->transport, 65535,
				     "/tmp/wirecheck.XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX/peer.sock",
				     sc->dir, 1 };
	char msg[512], out[SC_MAX_EXEC_ARG];

	/* PROGRAM as the run expands it (peer_exec.c): {dir} only. */
	if (sc_exec_expand(x->argv[0], &a, out, sizeof(out), msg, sizeof(msg)) < 0)
		return wc_say(err, errlen, "%s:%d: peer exec: %s", where, x->line, msg);
	if (!find_program(out))
		return wc_say(err, errlen, "%s:%d: peer exec: no program '%s' (%s)", where, x->line,
			       out, strchr(out, '/') ? "not an executable file" : "not found in PATH");
	a.program = 0;
	for (int i = 1; i < x->argc; i++)
		if (sc_exec_expand(x->argv[i], &a, out, sizeof(out), msg, sizeof(msg)) < 0)
			return wc_say(err, errlen, "%s:%d: peer exec: %s", where, x->line, msg);
	if (sc->npeer > 0)
		return wc_say(err, errlen, "%s:%d: 'peer %s' does not go with 'peer exec' (line %d): the program is the peer",
			       where, sc->peer[0].line,
			       sc->peer[0].kind == SC_PEER_READ ? "read" :
			       sc->peer[0].kind == SC_PEER_SEND ? "send" :
			       sc->peer[0].kind == SC_PEER_SHUTDOWN ? "shutdown" : "reset", x->line);
	if (sc->peer_rcvbuf > 0 || sc->peer_on_eof != SC_EOF_CLOSE)
		return wc_say(err, errlen, "%s:%d: 'peer rcvbuf' and 'peer on-eof' do not go with 'peer exec': the program is the peer",
			       where, x->line);
	return 0;
}

/* The gate arms at most FI_MAX_RULES rules; each clamp-send, refuse-write,
 * SIG@SYSCALL:K signal and fault line or flag makes one. */
static int check_rule_count(const struct scenario *sc, char *err, size_t errlen)
{
	const char *where = sc->path ? sc->path : "scenario";
	const struct sc_setting *f;

	if (sc->nfaults <= FI_MAX_RULES)
		return 0;
	f = &sc->faults[FI_MAX_RULES];
	if (f->line == 0)
		return wc_say(err, errlen, "%s: %zu fault rules with the command line's: the gate arms at most %d "
			       "(each clamp-send, refuse-write, SIG@SYSCALL:K signal and fault makes one)",
			       where, sc->nfaults, FI_MAX_RULES);
	return wc_say(err, errlen, "%s:%d: fault rule %d: the gate arms at most %d "
		       "(each clamp-send, refuse-write, SIG@SYSCALL:K signal and fault makes one)",
		       where, f->line, FI_MAX_RULES + 1, FI_MAX_RULES);
}

int sc_validate(const struct scenario *sc, char *err, size_t errlen)
{
	const char *where = sc->path ? sc->path : "scenario";

	if (check_rule_count(sc, err, errlen) < 0)
		return -1;

	for (size_t i = 0; i < sc->ntasks; i++)
		if (check_block(sc, &sc->tasks[i], err, errlen) < 0)
			return -1;
	for (size_t i = 0; i < sc->nhandlers; i++)
		if (check_block(sc, &sc->handlers[i], err, errlen) < 0)
			return -1;
	for (size_t i = 0; i < sc->npeer; i++) {
		const struct sc_peer_action *a = &sc->peer[i];

		if (a->conn >= 0 && check_conn(sc, a->conn, a->line, err, errlen) < 0)
			return -1;
		if (a->at.kind == SC_AT_CHECKPOINT && a->at.task > count_checkpoints(sc))
			return wc_say(err, errlen, "%s:%d: 'at checkpoint %d', but the scenario has %d checkpoint%s",
				   where, a->line, a->at.task, count_checkpoints(sc),
				   count_checkpoints(sc) == 1 ? "" : "s");
		if (a->at.kind == SC_AT_TASK && (size_t)a->at.task > sc->ntasks)
			return wc_say(err, errlen, "%s:%d: 'at task %d', but the scenario has %zu task%s",
				   where, a->line, a->at.task, sc->ntasks, sc->ntasks == 1 ? "" : "s");
	}
	for (size_t i = 0; i < sc->ndeclared; i++)
		if (check_conn(sc, sc->declared[i].conn, sc->declared[i].line, err, errlen) < 0)
			return -1;
	for (size_t i = 0; i < sc->ntsignals; i++) {
		const struct sc_task_signal *ts = &sc->tsignals[i];

		if ((size_t)ts->task <= sc->ntasks)
			continue;
		/* Line 0: the signal came from the command line. */
		if (ts->line == 0)
			return wc_say(err, errlen, "%s: --signal: a signal at task %d, but the scenario has %zu task%s",
				   where, ts->task, sc->ntasks, sc->ntasks == 1 ? "" : "s");
		return wc_say(err, errlen, "%s:%d: a signal at task %d, but the scenario has %zu task%s",
			   where, ts->line, ts->task, sc->ntasks, sc->ntasks == 1 ? "" : "s");
	}
	if (sc->peer_exec && check_peer_exec(sc, err, errlen) < 0)
		return -1;
	if (sc->ws_deflate[0] && !sc->websocket)
		return wc_say(err, errlen, "%s:%d: 'ws-deflate' needs 'websocket yes'",
			   where, sc->ws_deflate_line);
	if (sc->http && sc->role != SC_ROLE_SERVER)
		return wc_say(err, errlen, "%s:%d: 'http yes' needs 'role server' (the peer is the HTTP client)",
			   where, sc->http_line);
	return 0;
}

