/*
 * say.h: the one formatter of a parser's error message, for every reader of
 * text in the harness and the protocol (the scenario parser, the script
 * reader, the event-line reader): they all report a problem as a message
 * in the caller's buffer and -1.
 */
#ifndef WIRECHECK_SAY_H
#define WIRECHECK_SAY_H

#include <stddef.h>

/* Formats FMT into err (at most errlen bytes, NUL-terminated; cut when
 * longer). Returns -1, so that a parser can `return wc_say(...)`. */
int wc_say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
