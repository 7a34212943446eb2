/*
 * fi_state.c: a process's state (fi_state.h) as JSON, for the preload
 * library's counts file and for `wirecheck exec`'s report.
 */
#include "fi_state.h"

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>

#include "fi_internal.h"

int fi_state_valid(const void *s, size_t len)
{
	const struct fi_state *st = s;

	return s != NULL && len == sizeof(*st) &&
	       memcmp(st->magic, FI_STATE_MAGIC, sizeof(st->magic)) == 0 &&
	       st->size == sizeof(*st);
}

/* Sets key to n when n is not zero; returns 0, or -1 without memory. */
static int set_count(json_t *o, const char *key, uint64_t n)
{
	if (n == 0)
		return 0;
	return json_object_set_new(o, key, json_integer((json_int_t)n));
}

json_t *fi_kinds_json(const uint64_t *v)
{
	json_t *o = json_object();

	for (int k = 0; k < FI_SYS_COUNT && o != NULL; k++) {
		if (set_count(o, fi_sys_name((enum fi_sys)k), v[k]) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* The calls of each kind that the kernel saw: every call less those the
 * gate answered itself. */
static json_t *syscalls_json(const struct fi_counters *c)
{
	uint64_t v[FI_SYS_COUNT];

	for (int k = 0; k < FI_SYS_COUNT; k++) {
		uint64_t all = fi_calls(c, (enum fi_sys)k);

		v[k] = all >= c->refused[k] ? all - c->refused[k] : 0;
	}
	return fi_kinds_json(v);
}

static json_t *forms_json(const struct fi_counters *c)
{
	json_t *o = json_object();

	for (int f = 0; f < FI_FORM_COUNT && o != NULL; f++) {
		if (set_count(o, fi_form_name((enum fi_form)f), c->forms[f]) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* A bounded string as JSON; bytes that are not UTF-8 become '?'. */
static json_t *text_json(const char *s, size_t max)
{
	char copy[FI_WHAT_LEN > FI_SPEC_LEN ? FI_WHAT_LEN : FI_SPEC_LEN];
	size_t n = strnlen(s, max < sizeof(copy) ? max : sizeof(copy) - 1);

	memcpy(copy, s, n);
	copy[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)copy[i] >= 0x80 || copy[i] < 0x20)
			copy[i] = '?';
	return json_string(copy);
}

/* Every fd with a count or a description, by number. */
static json_t *fds_json(const struct fi_state *s)
{
	const struct fi_counters *c = &s->counters;
	json_t *list = json_array();

	for (int fd = 0; fd < FI_MAX_FD && list != NULL; fd++) {
		const struct fi_fd_what *w = &s->fds[fd];
		uint64_t calls[FI_SYS_COUNT], any = 0;
		json_t *what, *e;
		uint32_t kept;

		for (int k = 0; k < FI_SYS_COUNT; k++) {
			calls[k] = c->fd_calls[k][fd];
			any |= calls[k];
		}
		if (any == 0 && w->n == 0)
			continue;
		what = json_array();
		kept = w->n < FI_WHAT_MAX ? w->n : FI_WHAT_MAX;
		for (uint32_t i = 0; what != NULL && i < kept; i++)
			if (json_array_append_new(what, text_json(w->what[i],
								   FI_WHAT_LEN)) != 0)
				what = NULL;
		e = json_pack("{s:i,s:o,s:o}", "fd", fd, "what", what, "calls",
			      fi_kinds_json(calls));
		if (e != NULL && w->n > FI_WHAT_MAX &&
		    json_object_set_new(e, "what_total",
					json_integer((json_int_t)w->n)) != 0) {
			json_decref(e);
			e = NULL;
		}
		if (e == NULL || json_array_append_new(list, e) != 0) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

/* An action with its parameter, as a rule spec writes it: "errno=EPIPE". */
static json_t *action_json(const struct fi_fired *f)
{
	const char *name = NULL;
	char buf[64];

	if (f->action == FI_ACT_ZERO)
		return json_string("zero");
	if (f->action == FI_ACT_ERRNO && f->param > 0 && f->param <= FI__ERRNO_MAX)
		name = fi_errno_name((int)f->param);
	else if (f->action == FI_ACT_SIGNAL && f->param > 0 && f->param < 256)
		name = fi_signal_name((int)f->param);
	if (name != NULL)
		(void)snprintf(buf, sizeof(buf), "%s=%s",
			       fi__action_name((enum fi_action)f->action), name);
	else
		(void)snprintf(buf, sizeof(buf), "%s=%lld",
			       fi__action_name((enum fi_action)f->action),
			       (long long)f->param);
	return json_string(buf);
}

json_t *fi_fired_json(const struct fi_counters *c, const char *const *specs,
		      size_t nspecs, size_t max)
{
	uint64_t n = c->fired_total < FI_FIRED_MAX ? c->fired_total : FI_FIRED_MAX;
	json_t *list = json_array();

	if (n > max)
		n = max;
	for (uint64_t i = 0; i < n && list != NULL; i++) {
		const struct fi_fired *f = &c->fired[i];
		json_t *rule = f->rule < nspecs ? text_json(specs[f->rule], FI_SPEC_LEN)
						: json_null();
		json_t *conn = f->conn >= 0 ? json_integer(f->conn) : json_null();
		json_t *e = json_pack("{s:o,s:s,s:I,s:i,s:I,s:o,s:b,s:o,s:I}",
				      "rule", rule, "call",
				      fi_sys_name((enum fi_sys)f->kind), "index",
				      (json_int_t)f->call, "fd", (int)f->fd,
				      "offset", (json_int_t)f->offset, "action",
				      action_json(f), "refused", f->refused != 0,
				      "conn", conn, "length",
				      (json_int_t)f->length);

		if (e == NULL || json_array_append_new(list, e) != 0) {
			json_decref(list);
			list = NULL;
		}
	}
	return list;
}

static json_t *fired_json(const struct fi_state *s)
{
	const char *specs[FI_MAX_RULES];
	uint32_t n = s->nrules < FI_MAX_RULES ? s->nrules : FI_MAX_RULES;

	for (uint32_t i = 0; i < n; i++)
		specs[i] = s->rules[i];
	return fi_fired_json(&s->counters, specs, n, FI_FIRED_MAX);
}

static json_t *rules_json(const struct fi_state *s)
{
	json_t *list = json_array();
	uint32_t n = s->nrules < FI_MAX_RULES ? s->nrules : FI_MAX_RULES;

	for (uint32_t i = 0; i < n && list != NULL; i++)
		if (json_array_append_new(list, text_json(s->rules[i],
							  FI_SPEC_LEN)) != 0) {
			json_decref(list);
			list = NULL;
		}
	return list;
}

static json_t *rules_fired_json(const struct fi_state *s)
{
	json_t *list = json_array();
	uint32_t n = s->nrules < FI_MAX_RULES ? s->nrules : FI_MAX_RULES;

	for (uint32_t i = 0; i < n && list != NULL; i++)
		if (json_array_append_new(list, json_integer((json_int_t)
							     s->counters.rule_fired[i])) != 0) {
			json_decref(list);
			list = NULL;
		}
	return list;
}

json_t *fi_state_json(const struct fi_state *s)
{
	const struct fi_counters *c = &s->counters;
	json_t *ctl = json_pack("{s:I,s:I,s:I}",
				"add", (json_int_t)c->ctl_ops[EPOLL_CTL_ADD],
				"mod", (json_int_t)c->ctl_ops[EPOLL_CTL_MOD],
				"del", (json_int_t)c->ctl_ops[EPOLL_CTL_DEL]);

	/* json_pack's "o" takes each reference, also of a NULL it then
	 * refuses, so nothing leaks on failure. */
	return json_pack("{s:I,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:o}",
			 "pid", (json_int_t)s->pid, "exited", s->exited != 0,
			 "faults", rules_json(s), "rules_fired",
			 rules_fired_json(s), "syscalls", syscalls_json(c),
			 "refused", fi_kinds_json(c->refused), "injected",
			 fi_kinds_json(c->injected), "wouldblock",
			 fi_kinds_json(c->wouldblock), "epoll_ctl_ops", ctl,
			 "forms", forms_json(c), "fds", fds_json(s),
			 "fired_total", (json_int_t)c->fired_total, "fired",
			 fired_json(s));
}
