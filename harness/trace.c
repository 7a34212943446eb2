/*
 * trace.c: the trace of one run (trace.h).
 */
#include "trace.h"

#include "fi_state.h"
#include "rs.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#define VALGRIND_ERROR_EXIT 97 /* run.c gives valgrind --error-exitcode=97 */

static json_t *exit_json(const struct wc_outcome *out)
{
	json_t *o = json_object();

	json_object_set_new(o, "timed_out", json_boolean(out->timed_out));
	if (!out->exited) {
		json_object_set_new(o, "code", json_null());
	} else if (WIFEXITED(out->status)) {
		int code = WEXITSTATUS(out->status);

		if (out->valgrind && code == VALGRIND_ERROR_EXIT)
			json_object_set_new(o, "valgrind", json_string("errors"));
		else if (out->valgrind)
			json_object_set_new(o, "valgrind", json_string("clean"));
		json_object_set_new(o, "code", json_integer(code));
	} else if (WIFSIGNALED(out->status)) {
		const char *name = fi_signal_name(WTERMSIG(out->status));

		json_object_set_new(o, "signal", name ? json_string(name)
						      : json_integer(WTERMSIG(out->status)));
		json_object_set_new(o, "core", json_boolean(WCOREDUMP(out->status)));
	}
	if (out->error)
		json_object_set_new(o, "error", json_string(out->error));
	return o;
}

static json_t *syscalls_json(const struct fi_counters *c, int timing)
{
	static const char *ops[4] = { NULL, "epoll_ctl.add", "epoll_ctl.del", "epoll_ctl.mod" };
	json_t *o = json_object();

	for (int k = 0; k < FI_SYS_COUNT; k++) {
		char key[48];

		if (timing) {
			snprintf(key, sizeof(key), "%s.wouldblock", fi_sys_name(k));
			if (c->wouldblock[k])
				json_object_set_new(o, key, json_integer((json_int_t)c->wouldblock[k]));
			continue;
		}
		if (k == FI_EPOLL_WAIT)
			continue;
		json_object_set_new(o, fi_sys_name(k),
				    json_integer((json_int_t)(fi_calls(c, k) - c->wouldblock[k])));
	}
	if (timing)
		json_object_set_new(o, "epoll_wait", json_integer((json_int_t)fi_calls(c, FI_EPOLL_WAIT)));
	else
		for (int op = 1; op < 4; op++)
			json_object_set_new(o, ops[op], json_integer((json_int_t)c->ctl_ops[op]));
	return o;
}

/* The calls a rule changed: how many (total), the refused ones by kind
 * (counted in syscalls too: the kernel never saw them), and the first
 * FI_FIRED_MAX with their rule, call, index, fd and byte offset. */
static json_t *fired_json(const struct scenario *sc, const struct fi_counters *c)
{
	const char *specs[FI_MAX_RULES];
	size_t n = sc->nfaults < FI_MAX_RULES ? sc->nfaults : FI_MAX_RULES;

	for (size_t i = 0; i < n; i++)
		specs[i] = sc->faults[i].text;
	return json_pack("{s:I,s:o,s:o}", "total", (json_int_t)c->fired_total,
			 "refused", fi_kinds_json(c->refused), "calls",
			 fi_fired_json(c, specs, n, FI_FIRED_MAX));
}

/* The scenario's configuration, its variants applied: the same lines the
 * subject applied to its own. */
static json_t *variant_json(const struct scenario *sc)
{
	json_t *variants = json_object();
	char desc[256], *line, *save = NULL;

	rs_config_describe(&sc->config, desc, sizeof(desc));
	for (line = strtok_r(desc, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');

		if (eq) {
			*eq = '\0';
			json_object_set_new(variants, line, json_string(eq + 1));
		}
	}
	return variants;
}

json_t *wc_trace_build(const struct scenario *sc, const struct wc_outcome *o,
		       json_t *peer, json_t *events, json_t *queue,
		       const struct fi_counters *counters)
{
	json_t *t = json_object(), *faults = json_array();

	if (!t || !faults) {
		json_decref(t);
		json_decref(faults);
		json_decref(peer);
		return NULL;
	}
	for (size_t i = 0; i < sc->nfaults; i++)
		json_array_append_new(faults, json_string(sc->faults[i].text));
	json_object_set_new(t, "scenario", json_string(sc->name));
	json_object_set_new(t, "transport", json_string(sc->transport == SC_UNIX ? "unix" : "tcp"));
	json_object_set_new(t, "variant", variant_json(sc));
	json_object_set_new(t, "faults", faults);
	json_object_set_new(t, "exit", exit_json(o));
	json_object_set_new(t, "peer", peer);
	json_object_set(t, "events", events);
	json_object_set_new(t, "syscalls", syscalls_json(counters, 0));
	json_object_set_new(t, "syscalls_timing", syscalls_json(counters, 1));
	json_object_set_new(t, "fired", fired_json(sc, counters));
	json_object_set(t, "queue", queue ? queue : json_null());
	return t;
}

int wc_trace_same(json_t *a, json_t *b, const char **what)
{
	static const char *fields[] = { "scenario", "variant", "faults", "transport",
					"exit", "peer", "events", "syscalls", "queue",
					"fired" };

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		json_t *x = json_object_get(a, fields[i]), *y = json_object_get(b, fields[i]);

		/* absent from both: syscalls and fired when the gate never
		 * attached (run.c) */
		if (!x && !y)
			continue;
		if (!json_equal(x, y)) {
			*what = fields[i];
			return 0;
		}
	}
	return 1;
}
