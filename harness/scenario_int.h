/*
 * scenario_int.h: what the files of the scenario parser share (scenario.c:
 * blocks and settings; scenario_token.c: tokens; scenario_ops.c: operations;
 * scenario_suite.c: the peer's lines and the suite lines, matrix and
 * legacy; settings.c: the settings a flag also sets), and nothing else
 * includes.
 */
#ifndef WIRECHECK_SCENARIO_INT_H
#define WIRECHECK_SCENARIO_INT_H

#include "say.h" /* wc_say, the parser's error messages */

#include <stddef.h>

#define SC_MAX_CONNECTIONS 1024
#define SC_MAX_FILE (16 << 20)   /* bytes of a scenario file */
#define SC_MAX_WRITE (1 << 30)   /* bytes of one write or end */
#define SC_MAX_STRING (256 << 10) /* bytes of a string payload */

/* Grows the array *arrp of *n elements of size bytes by one zeroed
 * element and counts it in *n; returns the new element, or NULL (the
 * array unchanged) when out of memory. */
void *sc__grow(void *arrp, size_t *n, size_t size);

/* A non-negative decimal with an optional size suffix (K, KiB, M, MiB, G,
 * GiB) into *out. Returns 0; -2 when it is one but more than max; -1 when s
 * is not one. */
int sc__parse_size(const char *s, size_t max, size_t *out);

/* A decimal from min to max into *out. Returns 0; -2 when it is one but
 * more than max (however many digits); -1 otherwise. */
int sc__parse_int(const char *s, int min, int max, int *out);

/* The ws-deflate setting (scenario-language.md, "WebSocket"): "no",
 * "yes", or a comma list of npm ws's permessage-deflate options, into
 * sc->ws_deflate. */
struct scenario;
int sc__set_ws_deflate(struct scenario *sc, const char *arg, int line,
		       char *err, size_t errlen);

/* One line being parsed: its tokens, where it is, and where a message
 * goes. */
#define SC_MAX_TOKENS 32

struct token {
	char *text;        /* NUL-terminated; unescaped for strings */
	size_t len;        /* bytes in text (strings may hold NUL) */
	int quoted;
};

struct parser {
	const char *where;
	int line;
	char *err;
	size_t errlen;
	struct scenario *sc;
	struct sc_block *block; /* the open block, or NULL */
	struct token tok[SC_MAX_TOKENS];
	int ntok;
};

/* Formats "WHERE:LINE: message" into p->err; returns -1, for
 * `return sc__fail(p, ...)`. */
int sc__fail(struct parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Whether t is the bare (unquoted) word w. */
int sc__is_word(const struct token *t, const char *w);

/* The value of an unquoted "key=value" token, or NULL when t is not key=. */
const char *sc__key_value(const struct token *t, const char *key);

/* A malloc'd copy of a token's len bytes (at least one byte allocated), or
 * NULL when out of memory. The caller frees it. */
unsigned char *sc__dup_bytes(const struct token *t);

/* conn=K's K, from 0 to SC_MAX_CONNECTIONS - 1, into *out. Returns 0, or
 * -1 after a message. */
int sc__parse_conn(struct parser *p, const char *v, int *out);

/* One operation line of a block (scenario_ops.c), its tokens in p->tok,
 * appended to b. Returns 0, or -1 after a message. */
int sc__parse_op(struct parser *p, struct sc_block *b);

/* Cuts line s (modified in place) into p's tokens (scenario_token.c): a
 * line's words, key=value pairs and quoted strings. Returns 0, or -1 after
 * a message. */
int sc__tokenize(struct parser *p, char *s);

/* The whole-line settings of scenario_suite.c: `peer ...`, `matrix KEY
 * VALUE...`, `legacy NAME=VALUE must-differ|must-match [except=...]` and
 * `sweep-declare conn=C bytes=A..B "REASON"`.
 * Each reads p->tok, adds to p->sc, and returns 0, or -1 after a message
 * (what it added before failing is freed with the scenario). */
int sc__parse_peer_line(struct parser *p);
int sc__parse_matrix(struct parser *p);
int sc__parse_legacy(struct parser *p);
int sc__parse_sweep_declare(struct parser *p);

/* sc_parse with dir (NULL: the current directory) for sc->dir. */
int sc__parse_in(const char *where, const char *dir, const char *text,
		 struct scenario *sc, char *err, size_t errlen);

#endif
