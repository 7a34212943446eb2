/*
 * scenario_suite.c: the scenario lines that are not the subject's own
 * operations: what the peer does (`peer read|send|shutdown|reset at POINT`,
 * `peer exec`, `peer rcvbuf`, `peer on-eof`) and how the suite runs the
 * scenario (`matrix`, `legacy`). scenario.c tokenizes each line and hands
 * these keywords here (scenario_int.h).
 */
#include "scenario.h"
#include "scenario_int.h"

#include "fi.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The N of "task N" or "checkpoint N" (tokens i and i + 1), from 1, into
 * *out. Returns the index after it or -1. */
static int point_number(struct parser *p, const char *what, int i, int *out)
{
	const char *v = p->tok[i + 1].text;
	int rc = sc__parse_int(v, 1, INT32_MAX, out);

	if (rc == -2)
		return sc__fail(p, "%s '%s': at most %d", what, v, INT32_MAX);
	if (rc < 0)
		return sc__fail(p, "%s '%s': expected a %s number from 1", what, v, what);
	return i + 2;
}

/* POINT: start | task N | checkpoint N | bytes N | done. Returns the index
 * after it or -1. */
static int parse_point(struct parser *p, int i, struct sc_point *pt)
{
	if (i < p->ntok && sc__is_word(&p->tok[i], "start")) {
		pt->kind = SC_AT_START;
		return i + 1;
	}
	if (i < p->ntok && sc__is_word(&p->tok[i], "done")) {
		pt->kind = SC_AT_DONE;
		return i + 1;
	}
	if (i + 1 < p->ntok && sc__is_word(&p->tok[i], "bytes")) {
		pt->kind = SC_AT_BYTES;
		if (sc__parse_size(p->tok[i + 1].text, SIZE_MAX, &pt->bytes) == -2)
			return sc__fail(p, "bytes '%s': at most %zu", p->tok[i + 1].text, (size_t)SIZE_MAX);
		if (sc__parse_size(p->tok[i + 1].text, SIZE_MAX, &pt->bytes) < 0 || pt->bytes == 0)
			return sc__fail(p, "bytes '%s': expected a byte count from 1 (4096, 8MiB)", p->tok[i + 1].text);
		return i + 2;
	}
	if (i + 1 < p->ntok && sc__is_word(&p->tok[i], "checkpoint")) {
		pt->kind = SC_AT_CHECKPOINT;
		return point_number(p, "checkpoint", i, &pt->task);
	}
	if (i + 1 < p->ntok && sc__is_word(&p->tok[i], "task")) {
		pt->kind = SC_AT_TASK;
		return point_number(p, "task", i, &pt->task);
	}
	return sc__fail(p, "expected a point after 'at': start, task N, checkpoint N, bytes N or done");
}

static int parse_peer_action(struct parser *p, enum sc_peer_kind kind)
{
	struct sc_peer_action a;
	int i = 2;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.line = p->line;
	a.conn = -1;
	if (kind == SC_PEER_SEND) {
		if (i >= p->ntok || !p->tok[i].quoted)
			return sc__fail(p, "'peer send' needs a \"string\"");
		a.data = sc__dup_bytes(&p->tok[i]);
		if (!a.data)
			return sc__fail(p, "out of memory");
		a.len = p->tok[i].len;
		i++;
	}
	if (i >= p->ntok || !sc__is_word(&p->tok[i], "at")) {
		free(a.data);
		return sc__fail(p, "'peer %s' needs 'at POINT' (start, task N, checkpoint N, bytes N, done)", p->tok[1].text);
	}
	i = parse_point(p, i + 1, &a.at);
	if (i > 0 && kind == SC_PEER_READ && a.at.kind == SC_AT_BYTES) {
		free(a.data);
		return sc__fail(p, "'peer read at bytes N' reads nothing new: reads at bytes are continuous");
	}
	for (; i > 0 && i < p->ntok; i++) {
		const char *v = sc__key_value(&p->tok[i], "conn");

		if (!v) {
			i = sc__fail(p, "unexpected '%s' (expected conn=K)", p->tok[i].text);
			break;
		}
		if (sc__parse_conn(p, v, &a.conn) < 0) {
			i = -1;
			break;
		}
	}
	if (i < 0) {
		free(a.data);
		return -1;
	}
	{
		struct sc_peer_action *slot = sc__grow(&p->sc->peer, &p->sc->npeer, sizeof(*slot));

		if (!slot) {
			free(a.data);
			return sc__fail(p, "out of memory");
		}
		*slot = a;
	}
	return 0;
}

/* peer exec [stop=SIG] PROGRAM [ARG...]: the arguments are kept as written;
 * their {name}s are checked by sc_validate, once the transport is known. */
static int parse_peer_exec(struct parser *p)
{
	struct sc_peer_exec *x;
	const char *v;
	int i = 2, stop = 0;

	if (p->sc->peer_exec)
		return sc__fail(p, "'peer exec' is already given on line %d", p->sc->peer_exec->line);
	if (i < p->ntok && (v = sc__key_value(&p->tok[i], "stop"))) {
		if ((stop = fi_signal_parse(v)) < 0)
			return sc__fail(p, "stop=%s: expected a signal name (SIGTERM) or number", v);
		i++;
	}
	if (i == p->ntok)
		return sc__fail(p, "'peer exec' needs a program: peer exec [stop=SIG] PROGRAM [ARG...]");
	for (int k = i; k < p->ntok; k++)
		if (strlen(p->tok[k].text) != p->tok[k].len)
			return sc__fail(p, "'peer exec': an argument cannot hold a NUL byte");
	x = calloc(1, sizeof(*x));
	if (!x || !(x->argv = calloc((size_t)(p->ntok - i) + 1, sizeof(char *)))) {
		free(x);
		return sc__fail(p, "out of memory");
	}
	p->sc->peer_exec = x;
	x->line = p->line;
	x->stop_sig = stop;
	for (; i < p->ntok; i++)
		if (!(x->argv[x->argc++] = strdup(p->tok[i].text)))
			return sc__fail(p, "out of memory");
	return 0;
}

static int parse_peer(struct parser *p)
{
	const char *w = p->ntok > 1 ? p->tok[1].text : "";
	int n;

	if (sc__is_word(&p->tok[1], "read")) {
		if (p->ntok == 3 && sc__is_word(&p->tok[2], "continuous"))
			return 0;
		return parse_peer_action(p, SC_PEER_READ);
	}
	if (sc__is_word(&p->tok[1], "send"))
		return parse_peer_action(p, SC_PEER_SEND);
	if (sc__is_word(&p->tok[1], "exec"))
		return parse_peer_exec(p);
	if (sc__is_word(&p->tok[1], "shutdown"))
		return parse_peer_action(p, SC_PEER_SHUTDOWN);
	if (sc__is_word(&p->tok[1], "reset"))
		return parse_peer_action(p, SC_PEER_RESET);
	if (sc__is_word(&p->tok[1], "rcvbuf")) {
		if (p->ntok == 3 && sc__parse_int(p->tok[2].text, 1, INT32_MAX, &n) == -2)
			return sc__fail(p, "'peer rcvbuf %s': at most %d", p->tok[2].text, INT32_MAX);
		if (p->ntok != 3 || sc__parse_int(p->tok[2].text, 1, INT32_MAX, &n) < 0)
			return sc__fail(p, "'peer rcvbuf' needs a byte count from 1");
		p->sc->peer_rcvbuf = n;
		return 0;
	}
	if (sc__is_word(&p->tok[1], "on-eof")) {
		if (p->ntok == 3 && sc__is_word(&p->tok[2], "close"))
			p->sc->peer_on_eof = SC_EOF_CLOSE;
		else if (p->ntok == 3 && sc__is_word(&p->tok[2], "shutdown"))
			p->sc->peer_on_eof = SC_EOF_SHUTDOWN;
		else if (p->ntok == 3 && sc__is_word(&p->tok[2], "keep"))
			p->sc->peer_on_eof = SC_EOF_KEEP;
		else
			return sc__fail(p, "'peer on-eof' takes close, shutdown or keep");
		return 0;
	}
	return sc__fail(p, "unknown peer action '%s' (read, send, shutdown, reset, rcvbuf, on-eof, exec)", w);
}

/* Checks one matrix value the way the flag it stands for would. */
static int check_matrix_value(struct parser *p, const char *key, const char *v)
{
	struct scenario scratch;
	char msg[256];
	int rc;

	if (strcmp(v, "none") == 0)
		return 0;
	memset(&scratch, 0, sizeof(scratch));
	if (strcmp(key, "clamp") == 0)
		rc = sc_add_clamp(&scratch, v, p->line, msg, sizeof(msg));
	else if (strcmp(key, "refuse") == 0)
		rc = sc_add_refuse(&scratch, v, p->line, msg, sizeof(msg));
	else if (strcmp(key, "signal") == 0)
		rc = sc_add_signal(&scratch, v, p->line, msg, sizeof(msg));
	else if (strcmp(key, "fault") == 0)
		rc = sc_add_fault(&scratch, v, p->line, msg, sizeof(msg));
	else
		rc = sc_set_transport(&scratch, v, p->line, msg, sizeof(msg));
	for (size_t i = 0; i < scratch.nfaults; i++)
		free(scratch.faults[i].text);
	free(scratch.faults);
	free(scratch.tsignals);
	return rc < 0 ? sc__fail(p, "matrix %s: %s", key, msg) : 0;
}

int sc__parse_matrix(struct parser *p)
{
	static const char *keys[] = { "clamp", "refuse", "signal", "fault", "transport" };
	struct sc_matrix *m;
	size_t k;

	if (p->ntok < 3)
		return sc__fail(p, "'matrix' needs a key (clamp, refuse, signal, fault, transport) and at least one value");
	for (k = 0; k < 5; k++)
		if (sc__is_word(&p->tok[1], keys[k]))
			break;
	if (k == 5)
		return sc__fail(p, "matrix key '%s': expected clamp, refuse, signal, fault or transport", p->tok[1].text);
	for (size_t i = 0; i < p->sc->nmatrix; i++)
		if (strcmp(p->sc->matrix[i].key, keys[k]) == 0)
			return sc__fail(p, "matrix '%s' is already declared on line %d", keys[k], p->sc->matrix[i].line);
	for (int i = 2; i < p->ntok; i++)
		if (check_matrix_value(p, keys[k], p->tok[i].text) < 0)
			return -1;
	m = sc__grow(&p->sc->matrix, &p->sc->nmatrix, sizeof(*m));
	if (!m)
		return sc__fail(p, "out of memory");
	snprintf(m->key, sizeof(m->key), "%s", keys[k]);
	m->line = p->line;
	m->values = calloc((size_t)p->ntok - 2, sizeof(char *));
	if (!m->values)
		return sc__fail(p, "out of memory");
	for (int i = 2; i < p->ntok; i++) {
		m->values[m->nvalues] = strdup(p->tok[i].text);
		if (!m->values[m->nvalues])
			return sc__fail(p, "out of memory");
		m->nvalues++;
	}
	return 0;
}

/* The golden sections a must-match legacy run may leave out of the
 * comparison: the ones a strategy changes by design (syscall counts for
 * batching, bytes moved for the queue). */
static int check_sections(struct parser *p, const char *list)
{
	static const char *sections[] = { "syscalls", "queue", "events", "peer", "exit", "faults" };
	char buf[128], *save = NULL, *tok;

	if (strlen(list) >= sizeof(buf) || !*list)
		return sc__fail(p, "except=%s: expected SECTION[,SECTION]", list);
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t k;

		for (k = 0; k < sizeof(sections) / sizeof(sections[0]); k++)
			if (strcmp(tok, sections[k]) == 0)
				break;
		if (k == sizeof(sections) / sizeof(sections[0]))
			return sc__fail(p, "except: unknown section '%s' (syscalls, queue, events, peer, exit, faults)", tok);
	}
	return 0;
}

int sc__parse_legacy(struct parser *p)
{
	char msg[256];
	struct scenario scratch;
	int rc;

	const char *except = p->ntok == 4 ? sc__key_value(&p->tok[3], "except") : NULL;

	if ((p->ntok != 3 && !(p->ntok == 4 && except)) ||
	    (!sc__is_word(&p->tok[2], "must-differ") && !sc__is_word(&p->tok[2], "must-match")))
		return sc__fail(p, "'legacy' takes NAME=VALUE, must-differ or must-match, and for must-match optionally except=SECTION[,SECTION]");
	if (except && sc__is_word(&p->tok[2], "must-differ"))
		return sc__fail(p, "'except=' goes with must-match only");
	if (except && check_sections(p, except) < 0)
		return -1;
	if (p->sc->legacy)
		return sc__fail(p, "'legacy' is already declared on line %d", p->sc->legacy_line);
	memset(&scratch, 0, sizeof(scratch));
	rc = sc_add_variant(&scratch, p->tok[1].text, p->line, msg, sizeof(msg));
	for (size_t i = 0; i < scratch.nvariants; i++)
		free(scratch.variants[i].text);
	free(scratch.variants);
	if (rc < 0)
		return sc__fail(p, "legacy: %s", msg);
	p->sc->legacy = strdup(p->tok[1].text);
	if (!p->sc->legacy)
		return sc__fail(p, "out of memory");
	p->sc->legacy_must_differ = sc__is_word(&p->tok[2], "must-differ");
	if (except && !(p->sc->legacy_except = strdup(except)))
		return sc__fail(p, "out of memory");
	p->sc->legacy_line = p->line;
	return 0;
}

/* A..B, each a byte offset, A <= B, into [*start, *end). */
static int parse_byte_range(struct parser *p, const char *v, uint64_t *start,
			    uint64_t *end)
{
	char *dots = v ? strstr(v, "..") : NULL, *tail;
	unsigned long long a, b;

	if (!dots || dots == v || !dots[2])
		return sc__fail(p, "sweep-declare: bytes=A..B expected, the first and last byte");
	errno = 0;
	a = strtoull(v, &tail, 10);
	if (errno || tail != dots || *v == '-')
		return sc__fail(p, "sweep-declare: bytes=%s: A is not a byte offset", v);
	b = strtoull(dots + 2, &tail, 10);
	if (errno || *tail || dots[2] == '-')
		return sc__fail(p, "sweep-declare: bytes=%s: B is not a byte offset", v);
	if (b < a || b == UINT64_MAX)
		return sc__fail(p, "sweep-declare: bytes=%s: the last byte is before the first", v);
	*start = a;
	*end = (uint64_t)b + 1;
	return 0;
}

int sc__parse_sweep_declare(struct parser *p)
{
	struct scenario *sc = p->sc;
	struct sc_sweep_declared d = { .line = p->line }, *grown;
	const char *conn = p->ntok == 4 ? sc__key_value(&p->tok[1], "conn") : NULL;
	const char *bytes = p->ntok == 4 ? sc__key_value(&p->tok[2], "bytes") : NULL;

	if (p->ntok != 4 || !conn || !bytes || !p->tok[3].quoted)
		return sc__fail(p, "'sweep-declare' takes conn=C bytes=A..B \"REASON\"");
	if (p->tok[3].len == 0 || memchr(p->tok[3].text, '\0', p->tok[3].len))
		return sc__fail(p, "sweep-declare: the reason is empty or holds a NUL byte");
	if (sc->ndeclared > 0)
		return sc__fail(p, "'sweep-declare' is already declared on line %d",
				sc->declared[0].line);
	if (sc__parse_conn(p, conn, &d.conn) < 0 ||
	    parse_byte_range(p, bytes, &d.start, &d.end) < 0)
		return -1;
	grown = realloc(sc->declared, (sc->ndeclared + 1) * sizeof(*grown));
	if (!grown)
		return sc__fail(p, "out of memory");
	sc->declared = grown;
	d.reason = strdup(p->tok[3].text);
	if (!d.reason)
		return sc__fail(p, "out of memory");
	sc->declared[sc->ndeclared++] = d;
	return 0;
}

int sc__parse_peer_line(struct parser *p)
{
	if (p->ntok < 2)
		return sc__fail(p, "'peer' needs an action");
	return parse_peer(p);
}
