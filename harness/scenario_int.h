/*
 * scenario_int.h: what the two files of the scenario parser (scenario.c,
 * settings.c) share, and nothing else includes.
 */
#ifndef WIRECHECK_SCENARIO_INT_H
#define WIRECHECK_SCENARIO_INT_H

#include <stddef.h>

#define SC_MAX_CONNECTIONS 1024
#define SC_MAX_FILE (16 << 20)   /* bytes of a scenario file */
#define SC_MAX_WRITE (1 << 30)   /* bytes of one write or end */
#define SC_MAX_STRING (256 << 10) /* bytes of a string payload */

/* Formats a message into err; returns -1, for `return sc__say(...)`. */
int sc__say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

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

/* sc_parse with dir (NULL: the current directory) for sc->dir. */
int sc__parse_in(const char *where, const char *dir, const char *text,
		 struct scenario *sc, char *err, size_t errlen);

#endif
