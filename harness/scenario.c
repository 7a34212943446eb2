/*
 * scenario.c: the parser of the scenario language.
 *
 * Line-oriented: a line is a keyword and its arguments; '#' starts a comment
 * outside strings. "task" and "on EVENT" open a block whose operations are
 * the indented lines that follow. Every error names where:LINE and what is
 * wrong, and a failed parse frees what it built. This file parses the
 * blocks and one-argument settings; the tokens are scenario_token.c's,
 * the operations scenario_ops.c's, the peer's lines and the suite lines
 * (matrix, legacy) scenario_suite.c's.
 */
#include "scenario.h"
#include "scenario_int.h"

#include "fi.h"
#include "rs.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- blocks and top-level lines --------------------------------------- */

static int parse_block_conn(struct parser *p, struct sc_block *b, int from)
{
	for (int i = from; i < p->ntok; i++) {
		const char *v = sc__key_value(&p->tok[i], "conn");

		if (!v)
			return sc__fail(p, "unexpected '%s' (expected conn=K)", p->tok[i].text);
		if (sc__parse_conn(p, v, &b->conn) < 0)
			return -1;
	}
	return 0;
}

static int open_task(struct parser *p)
{
	struct sc_block *b = sc__grow(&p->sc->tasks, &p->sc->ntasks, sizeof(*b));

	if (!b)
		return sc__fail(p, "out of memory");
	b->line = p->line;
	b->conn = 0;
	p->block = b;
	return parse_block_conn(p, b, 1);
}

const char *const sc_event_names[SC_EV_COUNT] = {
	"data", "eof", "drain", "finish", "close", "write-cb", "end-cb",
	"request", "writable",
};

static int open_handler(struct parser *p)
{
	struct sc_block *b;
	size_t e;

	if (p->ntok < 2)
		return sc__fail(p, "'on' needs an event: data, eof, drain, finish, close, write-cb, end-cb, request or writable");
	for (e = 0; e < SC_EV_COUNT; e++)
		if (sc__is_word(&p->tok[1], sc_event_names[e]))
			break;
	/* The name of the event before it was "eof", kept so that older
	 * scenarios still run (docs/scenario-language.md, "Handlers"). */
	if (sc__is_word(&p->tok[1], "end"))
		e = SC_EV_EOF;
	if (e == SC_EV_COUNT)
		return sc__fail(p, "unknown event '%s' (data, eof, drain, finish, close, write-cb, end-cb, request, writable)", p->tok[1].text);
	b = sc__grow(&p->sc->handlers, &p->sc->nhandlers, sizeof(*b));
	if (!b)
		return sc__fail(p, "out of memory");
	b->line = p->line;
	b->conn = -1;
	b->event = (enum sc_event)e;
	p->block = b;
	return parse_block_conn(p, b, 2);
}

static int need_args(struct parser *p, int n)
{
	if (p->ntok != n + 1)
		return sc__fail(p, "'%s' takes %d argument%s, got %d", p->tok[0].text,
			    n, n == 1 ? "" : "s", p->ntok - 1);
	return 0;
}

/* Runs a shared setting and puts the location in front of its message. */
static int located(struct parser *p, int rc)
{
	char msg[512];

	if (rc == 0)
		return 0;
	snprintf(msg, sizeof(msg), "%s", p->err);
	return sc__fail(p, "%s", msg);
}

static int is_marker_name(const char *s)
{
	if (!islower((unsigned char)*s))
		return 0;
	for (; *s; s++)
		if (!islower((unsigned char)*s) && !isdigit((unsigned char)*s) && *s != '_')
			return 0;
	return 1;
}

/* ---- settings ---------------------------------------------------------- */

/* The settings of one argument that only a scenario file has. */
static int set_name(struct scenario *sc, const char *arg, int line, char *err,
		    size_t errlen)
{
	char *name = strdup(arg);

	(void)line;
	if (!name)
		return wc_say(err, errlen, "out of memory");
	free(sc->name);
	sc->name = name;
	return 0;
}

static int set_role(struct scenario *sc, const char *arg, int line, char *err,
		    size_t errlen)
{
	(void)line;
	if (strcmp(arg, "client") == 0)
		sc->role = SC_ROLE_CLIENT;
	else if (strcmp(arg, "server") == 0)
		sc->role = SC_ROLE_SERVER;
	else
		return wc_say(err, errlen, "role '%s': expected client or server", arg);
	return 0;
}

static int set_half_open(struct scenario *sc, const char *arg, int line,
			 char *err, size_t errlen)
{
	(void)line;
	if (strcmp(arg, "yes") == 0)
		sc->allow_half_open = 1;
	else if (strcmp(arg, "no") == 0)
		sc->allow_half_open = 0;
	else
		return wc_say(err, errlen, "allow-half-open '%s': expected yes or no", arg);
	return 0;
}

/* http yes: the subject serves HTTP/1.1 on the connections it accepts
 * (role server), with chunked responses. */
static int set_http(struct scenario *sc, const char *arg, int line,
		    char *err, size_t errlen)
{
	if (strcmp(arg, "yes") == 0)
		sc->http = 1;
	else if (strcmp(arg, "no") == 0)
		sc->http = 0;
	else
		return wc_say(err, errlen, "http '%s': expected yes or no", arg);
	sc->http_line = line;
	return 0;
}

static int set_behaviour(struct scenario *sc, const char *arg, int line,
			 char *err, size_t errlen)
{
	char *name;

	(void)line;
	if (!is_marker_name(arg))
		return wc_say(err, errlen, "behaviour '%s': expected a lower-case name (letters, digits, _)", arg);
	if (!(name = strdup(arg)))
		return wc_say(err, errlen, "out of memory");
	free(sc->behaviour);
	sc->behaviour = name;
	return 0;
}

/* ---- WebSocket settings ------------------------------------------------ */

static int set_websocket(struct scenario *sc, const char *arg, int line,
			 char *err, size_t errlen)
{
	(void)line;
	if (strcmp(arg, "yes") == 0)
		sc->websocket = 1;
	else if (strcmp(arg, "no") == 0)
		sc->websocket = 0;
	else
		return wc_say(err, errlen, "websocket '%s': expected yes or no", arg);
	return 0;
}

static int set_ws_seed(struct scenario *sc, const char *arg, int line,
		       char *err, size_t errlen)
{
	char *end;

	(void)line;
	errno = 0;
	sc->ws_seed = strtoull(arg, &end, 10);
	if (!isdigit((unsigned char)arg[0]) || *end || errno)
		return wc_say(err, errlen, "ws-seed '%s': expected a number", arg);
	return 0;
}

static int set_ws_max_message(struct scenario *sc, const char *arg, int line,
			      char *err, size_t errlen)
{
	(void)line;
	int rc = sc__parse_size(arg, SIZE_MAX, &sc->ws_max_message);

	if (rc == -2)
		return wc_say(err, errlen, "ws-max-message '%s': at most %zu bytes", arg, (size_t)SIZE_MAX);
	if (rc < 0 || sc->ws_max_message == 0)
		return wc_say(err, errlen, "ws-max-message '%s': expected a byte count of at least 1", arg);
	return 0;
}

/*
 * The settings, one line each, in the same form as the operations: the
 * keyword, then either how to apply its one argument (also a command-line
 * flag --KEYWORD when flag is set) or how to read its whole line.
 */
static const struct setting_def {
	const char *name;
	sc_setting_fn apply;
	int (*parse)(struct parser *p);
	int flag;
} setting_defs[] = {
	{ "name", set_name, NULL, 0 },
	{ "transport", sc_set_transport, NULL, 1 },
	{ "timeout", sc_set_timeout, NULL, 1 },
	{ "clamp-send", sc_add_clamp, NULL, 1 },
	{ "refuse-write", sc_add_refuse, NULL, 1 },
	{ "signal", sc_add_signal, NULL, 1 },
	{ "fault", sc_add_fault, NULL, 1 },
	{ "variant", sc_add_variant, NULL, 1 },
	{ "connections", sc_set_connections, NULL, 1 },
	{ "role", set_role, NULL, 0 },
	{ "allow-half-open", set_half_open, NULL, 0 },
	{ "http", set_http, NULL, 0 },
	{ "behaviour", set_behaviour, NULL, 0 },
	{ "matrix", NULL, sc__parse_matrix, 0 },
	{ "legacy", NULL, sc__parse_legacy, 0 },
	{ "sweep-declare", NULL, sc__parse_sweep_declare, 0 },
	{ "peer", NULL, sc__parse_peer_line, 0 },
	{ "websocket", set_websocket, NULL, 0 },
	{ "ws-seed", set_ws_seed, NULL, 0 },
	{ "ws-max-message", set_ws_max_message, NULL, 0 },
	{ "ws-deflate", sc__set_ws_deflate, NULL, 0 },
};

#define NSETTINGS (sizeof(setting_defs) / sizeof(setting_defs[0]))

sc_setting_fn sc_flag_setting(const char *name)
{
	for (size_t k = 0; k < NSETTINGS; k++)
		if (setting_defs[k].flag && strcmp(setting_defs[k].name, name) == 0)
			return setting_defs[k].apply;
	return NULL;
}

static int parse_setting(struct parser *p)
{
	const struct setting_def *d = NULL;

	for (size_t k = 0; k < NSETTINGS && !d; k++)
		if (strcmp(p->tok[0].text, setting_defs[k].name) == 0)
			d = &setting_defs[k];
	if (!d)
		return sc__fail(p, "unknown keyword '%s'", p->tok[0].text);
	if (d->parse)
		return d->parse(p);
	if (need_args(p, 1) < 0)
		return -1;
	return located(p, d->apply(p->sc, p->tok[1].text, p->line, p->err, p->errlen));
}

static int parse_line(struct parser *p, char *line)
{
	int indented = line[0] == ' ' || line[0] == '\t';

	if (sc__tokenize(p, line) < 0)
		return -1;
	if (p->ntok == 0)
		return 0;
	if (indented) {
		if (!p->block)
			return sc__fail(p, "an indented operation outside a 'task' or 'on' block");
		return sc__parse_op(p, p->block);
	}
	p->block = NULL;
	if (sc__is_word(&p->tok[0], "task"))
		return open_task(p);
	if (sc__is_word(&p->tok[0], "on"))
		return open_handler(p);
	return parse_setting(p);
}

static void sc_defaults(struct scenario *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->transport = SC_TCP;
	sc->role = SC_ROLE_CLIENT;
	sc->connections = 1;
	sc->timeout_ms = SC_DEFAULT_TIMEOUT_MS;
	sc->config = (struct rs_config)RS_CONFIG_DEFAULTS;
	sc->peer_on_eof = SC_EOF_CLOSE;
}

/* The file name without folders and extension. */
static char *default_name(const char *where)
{
	const char *base = strrchr(where, '/');
	const char *dot;
	char *name;

	base = base ? base + 1 : where;
	dot = strrchr(base, '.');
	name = strndup(base, dot && dot != base ? (size_t)(dot - base) : strlen(base));
	return name;
}

int sc_parse(const char *where, const char *text, struct scenario *sc,
	     char *err, size_t errlen)
{
	return sc__parse_in(where, NULL, text, sc, err, errlen);
}

int sc__parse_in(const char *where, const char *dir, const char *text,
		 struct scenario *sc, char *err, size_t errlen)
{
	struct parser p = { .where = where, .err = err, .errlen = errlen, .sc = sc };
	char *copy = strdup(text), *line, *next;
	int rc = 0;

	sc_defaults(sc);
	if (!copy)
		return wc_say(err, errlen, "%s: out of memory", where);
	/* Before the lines: sc_validate, at the end, expands {dir}. A
	 * current directory that is gone leaves it NULL, and only {dir}
	 * is then refused. */
	sc->dir = dir ? strdup(dir) : getcwd(NULL, 0);
	if (dir && !sc->dir) {
		free(copy);
		return wc_say(err, errlen, "%s: out of memory", where);
	}
	for (line = copy; line && rc == 0; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		p.line++;
		rc = parse_line(&p, line);
	}
	free(copy);
	if (rc == 0 && !sc->name && !(sc->name = default_name(where)))
		rc = wc_say(err, errlen, "%s: out of memory", where);
	if (rc == 0 && !(sc->path = strdup(where)))
		rc = wc_say(err, errlen, "%s: out of memory", where);
	if (rc == 0)
		rc = sc_validate(sc, err, errlen);
	if (rc < 0)
		sc_free(sc);
	return rc;
}

int sc_reads_at_points(const struct scenario *sc)
{
	for (size_t i = 0; i < sc->npeer; i++)
		if (sc->peer[i].kind == SC_PEER_READ)
			return 1;
	return 0;
}

static void free_block(struct sc_block *b)
{
	for (size_t i = 0; i < b->nops; i++)
		free(b->ops[i].data);
	free(b->ops);
}

void sc_free(struct scenario *sc)
{
	for (size_t i = 0; i < sc->ntasks; i++)
		free_block(&sc->tasks[i]);
	for (size_t i = 0; i < sc->nhandlers; i++)
		free_block(&sc->handlers[i]);
	for (size_t i = 0; i < sc->npeer; i++)
		free(sc->peer[i].data);
	for (size_t i = 0; i < sc->nfaults; i++)
		free(sc->faults[i].text);
	for (size_t i = 0; i < sc->nvariants; i++)
		free(sc->variants[i].text);
	free(sc->tasks);
	free(sc->handlers);
	free(sc->peer);
	free(sc->faults);
	free(sc->variants);
	free(sc->tsignals);
	if (sc->peer_exec) {
		for (int i = 0; i < sc->peer_exec->argc; i++)
			free(sc->peer_exec->argv[i]);
		free(sc->peer_exec->argv);
		free(sc->peer_exec);
	}
	for (size_t i = 0; i < sc->nmatrix; i++) {
		for (size_t k = 0; k < sc->matrix[i].nvalues; k++)
			free(sc->matrix[i].values[k]);
		free(sc->matrix[i].values);
	}
	free(sc->matrix);
	free(sc->behaviour);
	free(sc->legacy);
	free(sc->legacy_except);
	for (size_t i = 0; i < sc->ndeclared; i++)
		free(sc->declared[i].reason);
	free(sc->declared);
	free(sc->name);
	free(sc->path);
	free(sc->dir);
	memset(sc, 0, sizeof(*sc));
}
