/*
 * scenario_int.h: what the two files of the scenario parser (scenario.c,
 * settings.c) share, and nothing else includes.
 */
#ifndef WIRECHECK_SCENARIO_INT_H
#define WIRECHECK_SCENARIO_INT_H

#include <stddef.h>

#define SC_MAX_CONNECTIONS 1024

/* Formats a message into err; returns -1, for `return sc__say(...)`. */
int sc__say(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Grows the array *arrp of *n elements of size bytes by one zeroed
 * element and counts it in *n; returns the new element, or NULL (the
 * array unchanged) when out of memory. */
void *sc__grow(void *arrp, size_t *n, size_t size);

/* A non-negative decimal with an optional size suffix (K, KiB, M, MiB)
 * into *out. Returns 0, or -1 when s is not one or does not fit a size_t. */
int sc__parse_size(const char *s, size_t *out);

/* A decimal from min to max into *out. Returns 0, or -1. */
int sc__parse_int(const char *s, int min, int max, int *out);

#endif
