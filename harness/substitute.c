/*
 * substitute.c: the {name} substitutions of `peer exec` (scenario.h).
 *
 * One function both checks a scenario's arguments (sc_validate, with a
 * made-up address) and builds the program's argv at run time, so that what
 * `wirecheck check` accepts is exactly what a run can expand.
 */
#include "scenario.h"
#include "scenario_int.h"

#include <stdio.h>
#include <string.h>

#define NAMES "host, port, addr, url, unix, dir; {{ and }} for a brace"

/* The value of {name} for address a into val. 0, or -1 after a message. */
static int value_of(const char *name, size_t len, const struct sc_exec_address *a,
		    char *val, size_t vallen, char *err, size_t errlen)
{
	int tcp = a->transport == SC_TCP;
#define IS(w) (len == strlen(w) && strncmp(name, w, len) == 0)

	if (IS("dir")) {
		if (!a->dir)
			return wc_say(err, errlen, "{dir}: the harness's current directory is unknown (getcwd failed)");
		if ((size_t)snprintf(val, vallen, "%s", a->dir) >= vallen)
			return wc_say(err, errlen, "{dir}: the folder '%s' is longer than %zu bytes", a->dir, vallen - 1);
		return 0;
	}
	if (a->program && (IS("host") || IS("port") || IS("addr") || IS("unix") || IS("url")))
		return wc_say(err, errlen, "{%.*s} in PROGRAM: only {dir} is replaced there "
			       "(the address goes in the arguments)", (int)len, name);
	if (IS("host") || IS("port") || IS("addr")) {
		if (!tcp)
			return wc_say(err, errlen, "{%.*s} is for transport tcp, and this run is unix: "
				       "use {unix} (the socket's path)", (int)len, name);
		if (IS("host"))
			snprintf(val, vallen, "127.0.0.1");
		else if (IS("port"))
			snprintf(val, vallen, "%d", a->port);
		else
			snprintf(val, vallen, "127.0.0.1:%d", a->port);
		return 0;
	}
	if (IS("unix")) {
		if (tcp)
			return wc_say(err, errlen, "{unix} is for transport unix, and this run is tcp: "
				       "use {host} and {port}");
		snprintf(val, vallen, "%s", a->path ? a->path : "");
		return 0;
	}
	if (IS("url")) {
		if (tcp)
			snprintf(val, vallen, "http://127.0.0.1:%d/", a->port);
		else
			snprintf(val, vallen, "http://localhost/");
		return 0;
	}
#undef IS
	return wc_say(err, errlen, "unknown substitution '{%.*s}' (" NAMES ")", (int)len, name);
}

int sc_exec_expand(const char *arg, const struct sc_exec_address *a,
		   char *out, size_t outlen, char *err, size_t errlen)
{
	size_t o = 0;

	for (const char *s = arg; *s; s++) {
		char val[SC_MAX_EXEC_ARG];
		const char *close;
		size_t vlen;

		if ((s[0] == '{' && s[1] == '{') || (s[0] == '}' && s[1] == '}')) {
			val[0] = *s++;
			val[1] = '\0';
		} else if (*s == '}') {
			return wc_say(err, errlen, "a '}' without its '{' in '%s' (}} for a brace)", arg);
		} else if (*s != '{') {
			val[0] = *s;
			val[1] = '\0';
		} else if (!(close = strchr(s, '}'))) {
			return wc_say(err, errlen, "an unclosed '{' in '%s' ({{ for a brace)", arg);
		} else {
			if (value_of(s + 1, (size_t)(close - s - 1), a, val, sizeof(val), err, errlen) < 0)
				return -1;
			s = close;
		}
		vlen = strlen(val);
		if (out && o + vlen >= outlen)
			return wc_say(err, errlen, "'%s' is longer than %zu bytes once substituted", arg, outlen - 1);
		if (out)
			memcpy(out + o, val, vlen);
		o += vlen;
	}
	if (out)
		out[o] = '\0';
	return 0;
}
