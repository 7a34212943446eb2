/*
 * settings.c: the settings a scenario file shares with the command line
 * (scenario.h: clamp-send, refuse-write, signal, fault, variant, transport,
 * timeout, connections), and the helpers of the whole parser
 * (scenario_int.h): numbers, messages, growing arrays.
 */
#include "scenario.h"
#include "scenario_int.h"

#include "fi.h"
#include "rs.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Grows an array by one zeroed element; returns it or NULL. */
void *sc__grow(void *arrp, size_t *n, size_t size)
{
	void **arr = arrp;
	char *bigger = realloc(*arr, (*n + 1) * size);

	if (!bigger)
		return NULL;
	memset(bigger + *n * size, 0, size);
	*arr = bigger;
	return bigger + (*n)++ * size;
}

/* ---- numbers ---------------------------------------------------------- */

int sc__parse_size(const char *s, size_t max, size_t *out)
{
	char *end;
	unsigned long long v;
	unsigned long long mult = 1;
	int erange;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	erange = errno == ERANGE;
	if (errno && !erange)
		return -1;
	if (strcmp(end, "K") == 0 || strcmp(end, "KiB") == 0)
		mult = 1024;
	else if (strcmp(end, "M") == 0 || strcmp(end, "MiB") == 0)
		mult = 1024 * 1024;
	else if (strcmp(end, "G") == 0 || strcmp(end, "GiB") == 0)
		mult = 1024ULL * 1024 * 1024;
	else if (*end)
		return -1;
	if (erange || v > max / mult)
		return -2;
	*out = (size_t)(v * mult);
	return 0;
}

int sc__parse_int(const char *s, int min, int max, int *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)s[0]) && s[0] != '-')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || (errno && errno != ERANGE))
		return -1;
	if ((errno == ERANGE && v > 0) || v > max)
		return -2;
	if (errno || v < min)
		return -1;
	*out = (int)v;
	return 0;
}

/* ---- settings shared with the command line ---------------------------- */

static int add_setting(struct sc_setting **arr, size_t *n, const char *text,
		       int line, char *err, size_t errlen)
{
	struct sc_setting *s = sc__grow(arr, n, sizeof(**arr));

	if (!s || !(s->text = strdup(text)))
		return wc_say(err, errlen, "out of memory");
	s->line = line;
	return 0;
}

int sc_add_fault(struct scenario *sc, const char *arg, int line, char *err,
		 size_t errlen)
{
	struct fi_rule rule;
	char canon[FI_SPEC_MAX];

	if (fi_rule_parse(arg, &rule, err, errlen) < 0)
		return -1;
	fi_rule_format(&rule, canon, sizeof(canon));
	/* A rule identical to one the scenario has is still a rule of its
	 * own: only one rule per action fires on a call, and a due rule that
	 * was beaten fires on a later one (docs/scenario-language.md), so two
	 * `refuse-write EPIPE@2` refuse the 2nd and the 3rd writing calls. */
	return add_setting(&sc->faults, &sc->nfaults, canon, line, err, errlen);
}

int sc_add_clamp(struct scenario *sc, const char *arg, int line, char *err,
		 size_t errlen)
{
	char spec[64];
	size_t n;
	int rc;

	/* A byte count as everywhere else in a scenario: 4096, 64KiB, 1MiB. */
	if ((rc = sc__parse_size(arg, INT32_MAX, &n)) == -2)
		return wc_say(err, errlen, "clamp-send '%s': at most %d", arg, INT32_MAX);
	if (rc < 0 || n == 0)
		return wc_say(err, errlen,
			   "clamp-send '%s': expected a byte count of at least 1 (4096, 64KiB, 1MiB)",
			   arg);
	snprintf(spec, sizeof(spec), "write:short=%zu,repeat=forever", n);
	return sc_add_fault(sc, spec, line, err, errlen);
}

/* ERR, ERR@K (the K-th writing call), ERR@KxN (N calls from the K-th),
 * ERR@Kx* (every call from the K-th). ERR alone refuses every call. */
int sc_add_refuse(struct scenario *sc, const char *arg, int line, char *err,
		  size_t errlen)
{
	char name[32], spec[128], times[24] = "forever";
	const char *at = strchr(arg, '@');
	size_t nlen = at ? (size_t)(at - arg) : strlen(arg);
	int k = 1;

	if (nlen == 0 || nlen >= sizeof(name))
		return wc_say(err, errlen, "refuse-write '%s': expected ERRNO[@K[xN]]", arg);
	memcpy(name, arg, nlen);
	name[nlen] = '\0';
	if (fi_errno_parse(name) < 0) {
		const char *near = fi_errno_near(name);

		return wc_say(err, errlen, "refuse-write '%s': unknown errno '%s'%s%s%s",
			       arg, name, near ? " (did you mean " : "",
			       near ? near : "", near ? "?)" : "");
	}
	if (at) {
		char kbuf[24];
		const char *x = strchr(at + 1, 'x');
		size_t klen = x ? (size_t)(x - at - 1) : strlen(at + 1);

		if (klen == 0 || klen >= sizeof(kbuf))
			return wc_say(err, errlen, "refuse-write '%s': expected a call number after '@'", arg);
		memcpy(kbuf, at + 1, klen);
		kbuf[klen] = '\0';
		if (sc__parse_int(kbuf, 1, INT32_MAX, &k) == -2)
			return wc_say(err, errlen, "refuse-write '%s': call %s: at most %d", arg, kbuf, INT32_MAX);
		if (sc__parse_int(kbuf, 1, INT32_MAX, &k) < 0)
			return wc_say(err, errlen, "refuse-write '%s': '%s' is not a call number (1 is the first call)", arg, kbuf);
		if (!x) {
			snprintf(times, sizeof(times), "1");
		} else if (strcmp(x + 1, "*") != 0) {
			int n;

			if (sc__parse_int(x + 1, 1, INT32_MAX, &n) == -2)
				return wc_say(err, errlen, "refuse-write '%s': count %s: at most %d", arg, x + 1, INT32_MAX);
			if (sc__parse_int(x + 1, 1, INT32_MAX, &n) < 0)
				return wc_say(err, errlen, "refuse-write '%s': '%s' is not a count (or * for forever)", arg, x + 1);
			snprintf(times, sizeof(times), "%d", n);
		}
	}
	snprintf(spec, sizeof(spec), "write:errno=%s,after=%d,repeat=%s", name,
		 k - 1, times);
	return sc_add_fault(sc, spec, line, err, errlen);
}

/* SIG@SYSCALL:K (the gate raises SIG before the K-th such call), or
 * SIG@task:N[:self|:external] (at the end of task N's operations). */
int sc_add_signal(struct scenario *sc, const char *arg, int line, char *err,
		  size_t errlen)
{
	char buf[128], *at, *colon, *where, *third;
	int sig, k;

	if (strlen(arg) >= sizeof(buf))
		return wc_say(err, errlen, "signal '%s': too long", arg);
	strcpy(buf, arg);
	at = strchr(buf, '@');
	if (!at)
		return wc_say(err, errlen, "signal '%s': expected SIG@SYSCALL:K or SIG@task:N", arg);
	*at = '\0';
	where = at + 1;
	if ((sig = fi_signal_parse(buf)) < 0)
		return wc_say(err, errlen, "signal '%s': unknown signal '%s'", arg, buf);
	colon = strchr(where, ':');
	if (!colon)
		return wc_say(err, errlen, "signal '%s': expected ':' and a number after '%s'", arg, where);
	*colon = '\0';
	third = strchr(colon + 1, ':');
	if (third)
		*third++ = '\0';
	if (sc__parse_int(colon + 1, 1, INT32_MAX, &k) == -2)
		return wc_say(err, errlen, "signal '%s': '%s': at most %d", arg, colon + 1, INT32_MAX);
	if (sc__parse_int(colon + 1, 1, INT32_MAX, &k) < 0)
		return wc_say(err, errlen, "signal '%s': '%s' is not a number from 1", arg, colon + 1);
	if (strcmp(where, "task") == 0) {
		struct sc_task_signal *ts;
		int external = 0;

		if (third && strcmp(third, "external") == 0)
			external = 1;
		else if (third && strcmp(third, "self") != 0)
			return wc_say(err, errlen, "signal '%s': '%s' is neither self nor external", arg, third);
		ts = sc__grow(&sc->tsignals, &sc->ntsignals, sizeof(*ts));
		if (!ts)
			return wc_say(err, errlen, "out of memory");
		*ts = (struct sc_task_signal){ k, sig, external, line };
		return 0;
	}
	if (third)
		return wc_say(err, errlen, "signal '%s': unexpected ':%s'", arg, third);
	{
		char spec[128];

		snprintf(spec, sizeof(spec), "%s:signal=%d,after=%d", where, sig, k - 1);
		return sc_add_fault(sc, spec, line, err, errlen);
	}
}

int sc_add_variant(struct scenario *sc, const char *arg, int line, char *err,
		   size_t errlen)
{
	char name[64];
	const char *eq = strchr(arg, '=');
	int rc;

	if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof(name) || !eq[1])
		return wc_say(err, errlen, "variant '%s': expected NAME=VALUE", arg);
	memcpy(name, arg, (size_t)(eq - arg));
	name[eq - arg] = '\0';
	/* The stack knows the names and values; the scenario keeps its own
	 * configuration, so that no global changes. */
	rc = rs_variant_apply(&sc->config, name, eq + 1);
	if (rc == -ENOENT)
		return wc_say(err, errlen, "variant '%s': unknown variant '%s'", arg, name);
	if (rc < 0)
		return wc_say(err, errlen, "variant '%s': '%s' does not take the value '%s'", arg, name, eq + 1);
	for (size_t i = 0; i < sc->nvariants; i++) {
		if (strncmp(sc->variants[i].text, arg, (size_t)(eq - arg) + 1) == 0) {
			char *text = strdup(arg);

			if (!text)
				return wc_say(err, errlen, "out of memory");
			free(sc->variants[i].text);
			sc->variants[i].text = text;
			sc->variants[i].line = line;
			return 0;
		}
	}
	return add_setting(&sc->variants, &sc->nvariants, arg, line, err, errlen);
}

int sc_set_transport(struct scenario *sc, const char *arg, int line,
		     char *err, size_t errlen)
{
	(void)line;
	if (strcmp(arg, "tcp") == 0)
		sc->transport = SC_TCP;
	else if (strcmp(arg, "unix") == 0)
		sc->transport = SC_UNIX;
	else
		return wc_say(err, errlen, "transport '%s': expected tcp or unix", arg);
	return 0;
}

int sc_set_timeout(struct scenario *sc, const char *arg, int line,
		   char *err, size_t errlen)
{
	char *end;
	double v;

	(void)line;
	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v > 0) || v > 3600)
		return wc_say(err, errlen, "timeout '%s': expected seconds, more than 0 and at most 3600", arg);
	sc->timeout_ms = (int)(v * 1000);
	if (sc->timeout_ms < 1)
		sc->timeout_ms = 1;
	return 0;
}

int sc_set_connections(struct scenario *sc, const char *arg, int line,
		       char *err, size_t errlen)
{
	(void)line;
	if (sc__parse_int(arg, 1, SC_MAX_CONNECTIONS, &sc->connections) < 0)
		return wc_say(err, errlen, "connections '%s': expected 1 to %d", arg, SC_MAX_CONNECTIONS);
	return 0;
}


/* ---- ws-deflate -------------------------------------------------------- */

int sc__set_ws_deflate(struct scenario *sc, const char *arg, int line,
		       char *err, size_t errlen)
{
	static const char *const names[] = {
		NULL, "server_no_context_takeover", "client_no_context_takeover",
		"server_max_window_bits", "client_max_window_bits", "threshold",
	};
	long v[6] = { 1, 0, 0, 0, 0, 0 };
	char buf[256], *save = NULL;

	sc->ws_deflate_line = line;
	if (strcmp(arg, "no") == 0) {
		memset(sc->ws_deflate, 0, sizeof(sc->ws_deflate));
		return 0;
	}
	if (strcmp(arg, "yes") == 0) {
		memcpy(sc->ws_deflate, v, sizeof(v));
		return 0;
	}
	if (strlen(arg) >= sizeof(buf))
		return wc_say(err, errlen, "ws-deflate: the value is too long");
	strcpy(buf, arg);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		size_t k;
		int n;

		if (eq)
			*eq = '\0';
		for (k = 1; k < 6; k++)
			if (strcmp(t, names[k]) == 0)
				break;
		if (k == 6)
			return wc_say(err, errlen, "ws-deflate '%s': expected yes, no, or a comma "
				       "list of server_no_context_takeover[=B], "
				       "client_no_context_takeover[=B], server_max_window_bits=N|B, "
				       "client_max_window_bits=N|B, threshold=N (B: true or false)",
				       arg);
		/* npm ws's true and false (rs_ws_deflate_options: 1, -1). */
		if (eq && k != 5 && (strcmp(eq + 1, "true") == 0 ||
				     strcmp(eq + 1, "false") == 0)) {
			v[k] = eq[1] == 't' ? 1 : -1;
		} else if (k <= 2) {
			if (eq)
				return wc_say(err, errlen,
					       "ws-deflate: %s '%s': expected no value, true or false",
					       t, eq + 1);
			v[k] = 1;
		} else if (!eq) {
			return wc_say(err, errlen, "ws-deflate: %s needs =N, =true or =false", t);
		} else if (k == 5) {
			if (sc__parse_int(eq + 1, 0, 1 << 30, &n) < 0)
				return wc_say(err, errlen, "ws-deflate: threshold '%s': expected a byte count",
					       eq + 1);
			v[k] = n;
		} else {
			if (sc__parse_int(eq + 1, 8, 15, &n) < 0)
				return wc_say(err, errlen,
					       "ws-deflate: %s '%s': expected 8 to 15, true or false",
					       t, eq + 1);
			v[k] = n;
		}
	}
	memcpy(sc->ws_deflate, v, sizeof(v));
	return 0;
}
