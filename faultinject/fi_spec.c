/*
 * fi_spec.c: the names the gate knows, and rule specs to and from text.
 *
 * A spec is "TARGET:ACTION[,after=K][,repeat=N|forever][,fd=N][,fds=any]
 * [,conn=C][,byte=N]".
 * The parser works on spans of the caller's string and copies nothing, so
 * that the error message can quote the spec exactly as it was given.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fi.h"
#include "fi_internal.h"

/* NSIG is a common extension; 65 is Linux's value, for libcs that lack it. */
#ifndef NSIG
#define NSIG 65
#endif

/* ------------------------------------------------------------------------ */
/* Targets and actions.                                                     */

/*
 * The failpoint names are string literals built by the preprocessor, so the
 * slow path never formats a name and every name lives for the whole run.
 */
#define TARGET(name, mask)                                                   \
	{                                                                    \
		name, mask,                                                  \
		{                                                            \
			[FI_ACT_SHORT] = "wirecheck/" name "/short",         \
			[FI_ACT_ERRNO] = "wirecheck/" name "/errno",         \
			[FI_ACT_ZERO] = "wirecheck/" name "/zero",           \
			[FI_ACT_SIGNAL] = "wirecheck/" name "/signal",       \
		}                                                            \
	}

struct target_info {
	const char *name;
	unsigned mask;
	const char *failpoint[FI_ACT_COUNT];
};

/* write(2) and read(2) alone are "syswrite"/"sysread": "write" and "read"
 * are the groups, the names a rule about "any write" naturally uses. */
static const struct target_info targets[FI__TARGET_COUNT] = {
	[FI_SEND] = TARGET("send", FI_MASK(FI_SEND)),
	[FI_SENDTO] = TARGET("sendto", FI_MASK(FI_SENDTO)),
	[FI_SENDMSG] = TARGET("sendmsg", FI_MASK(FI_SENDMSG)),
	[FI_WRITE] = TARGET("syswrite", FI_MASK(FI_WRITE)),
	[FI_WRITEV] = TARGET("writev", FI_MASK(FI_WRITEV)),
	[FI_RECV] = TARGET("recv", FI_MASK(FI_RECV)),
	[FI_READ] = TARGET("sysread", FI_MASK(FI_READ)),
	[FI_EPOLL_CTL] = TARGET("epoll_ctl", FI_MASK(FI_EPOLL_CTL)),
	[FI_EPOLL_WAIT] = TARGET("epoll_wait", FI_MASK(FI_EPOLL_WAIT)),
	[FI_ACCEPT] = TARGET("accept", FI_MASK(FI_ACCEPT)),
	[FI_CONNECT] = TARGET("connect", FI_MASK(FI_CONNECT)),
	[FI_SHUTDOWN] = TARGET("shutdown", FI_MASK(FI_SHUTDOWN)),
	[FI_CLOSE] = TARGET("close", FI_MASK(FI_CLOSE)),
	[FI__TARGET_WRITE] = TARGET("write", FI_GROUP_WRITE),
	[FI__TARGET_READ] = TARGET("read", FI_GROUP_READ),
	[FI__TARGET_ALL] = TARGET("all", FI__ALL_KINDS),
};

/* The kinds' own names, as counters and traces print them. */
static const char *const sys_names[FI_SYS_COUNT] = {
	[FI_SEND] = "send",
	[FI_SENDTO] = "sendto",
	[FI_SENDMSG] = "sendmsg",
	[FI_WRITE] = "write",
	[FI_WRITEV] = "writev",
	[FI_RECV] = "recv",
	[FI_READ] = "read",
	[FI_EPOLL_CTL] = "epoll_ctl",
	[FI_EPOLL_WAIT] = "epoll_wait",
	[FI_ACCEPT] = "accept",
	[FI_CONNECT] = "connect",
	[FI_SHUTDOWN] = "shutdown",
	[FI_CLOSE] = "close",
};

static const char *const form_names[FI_FORM_COUNT] = {
	[FI_FORM_SENDFILE] = "sendfile",
	[FI_FORM_SPLICE] = "splice",
	[FI_FORM_SENDMMSG] = "sendmmsg",
	[FI_FORM_RECVMMSG] = "recvmmsg",
	[FI_FORM_IO_URING_SETUP] = "io_uring_setup",
};

const char *fi_form_name(enum fi_form form)
{
	if ((unsigned)form >= FI_FORM_COUNT)
		return "?";
	return form_names[form];
}

static const char *const action_names[FI_ACT_COUNT] = {
	[FI_ACT_SHORT] = "short",
	[FI_ACT_ERRNO] = "errno",
	[FI_ACT_ZERO] = "zero",
	[FI_ACT_SIGNAL] = "signal",
};

/* The kinds with a length to clamp (epoll_wait's is maxevents). */
#define SHORT_KINDS                                                           \
	(FI_GROUP_WRITE | FI_GROUP_READ | FI_MASK(FI_EPOLL_WAIT))

const char *fi_sys_name(enum fi_sys sys)
{
	if ((unsigned)sys >= FI_SYS_COUNT)
		return "?";
	return sys_names[sys];
}

int fi__target_find(const char *name, size_t len)
{
	for (int t = 0; t < FI__TARGET_COUNT; t++) {
		if (strlen(targets[t].name) == len &&
		    memcmp(targets[t].name, name, len) == 0)
			return t;
	}
	return -1;
}

const char *fi__target_name(int target)
{
	if (target < 0 || target >= FI__TARGET_COUNT)
		return "?";
	return targets[target].name;
}

unsigned fi__target_mask(int target)
{
	if (target < 0 || target >= FI__TARGET_COUNT)
		return 0;
	return targets[target].mask;
}

const char *fi__failpoint_name(int target, enum fi_action action)
{
	if (target < 0 || target >= FI__TARGET_COUNT ||
	    (unsigned)action >= FI_ACT_COUNT)
		return NULL;
	return targets[target].failpoint[action];
}

const char *fi__action_name(enum fi_action action)
{
	if ((unsigned)action >= FI_ACT_COUNT)
		return "?";
	return action_names[action];
}

unsigned fi__action_kinds(enum fi_action action)
{
	switch (action) {
	case FI_ACT_SHORT:
		return SHORT_KINDS;
	case FI_ACT_ZERO:
		/* accept() returning 0 would hand the caller fd 0: zero has
		 * no meaning there, unlike EOF for a read or a timeout for
		 * epoll_wait. */
		return FI__ALL_KINDS & ~FI_MASK(FI_ACCEPT);
	case FI_ACT_ERRNO:
	case FI_ACT_SIGNAL:
		return FI__ALL_KINDS;
	default:
		return 0;
	}
}

int fi__param_valid(enum fi_action action, long param)
{
	switch (action) {
	case FI_ACT_SHORT:
		return param >= 1;
	case FI_ACT_ERRNO:
		return param >= 1 && param <= FI__ERRNO_MAX;
	case FI_ACT_ZERO:
		return 1;
	case FI_ACT_SIGNAL:
		return param >= 1 && param < NSIG;
	default:
		return 0;
	}
}

/* ------------------------------------------------------------------------ */
/* Errno and signal names.                                                  */

struct named_number {
	int value;
	const char *name;
};

/* EAGAIN comes before EWOULDBLOCK: on Linux they are one number, and the
 * name printed for it should be the one the kernel documents. */
static const struct named_number errno_names[] = {
	{EAGAIN, "EAGAIN"},
	{EWOULDBLOCK, "EWOULDBLOCK"},
	{EPIPE, "EPIPE"},
	{ECONNRESET, "ECONNRESET"},
	{ENOBUFS, "ENOBUFS"},
	{EINTR, "EINTR"},
	{ENOMEM, "ENOMEM"},
	{EBADF, "EBADF"},
	{EINVAL, "EINVAL"},
	{ENOTCONN, "ENOTCONN"},
	{ETIMEDOUT, "ETIMEDOUT"},
	{ECONNREFUSED, "ECONNREFUSED"},
	{EMSGSIZE, "EMSGSIZE"},
	{EIO, "EIO"},
	{EACCES, "EACCES"},
	{EPERM, "EPERM"},
	{ENOSPC, "ENOSPC"},
	{EHOSTUNREACH, "EHOSTUNREACH"},
	{ENETDOWN, "ENETDOWN"},
	{ENETUNREACH, "ENETUNREACH"},
	{ECONNABORTED, "ECONNABORTED"},
	{EADDRINUSE, "EADDRINUSE"},
	{EADDRNOTAVAIL, "EADDRNOTAVAIL"},
	{EINPROGRESS, "EINPROGRESS"},
	{EALREADY, "EALREADY"},
	{EISCONN, "EISCONN"},
	{ENOTSOCK, "ENOTSOCK"},
	{EFAULT, "EFAULT"},
	{EMFILE, "EMFILE"},
	{ENFILE, "ENFILE"},
	{ESHUTDOWN, "ESHUTDOWN"},
	{EPROTO, "EPROTO"},
	{EOPNOTSUPP, "EOPNOTSUPP"},
	{ENOENT, "ENOENT"},
	{EEXIST, "EEXIST"},
	{EHOSTDOWN, "EHOSTDOWN"},
	{ENETRESET, "ENETRESET"},
};

/* Signal names without their "SIG" prefix, which fi_signal_parse accepts
 * either way; the name printed always has it. */
static const struct named_number signal_names[] = {
	{SIGHUP, "SIGHUP"}, {SIGINT, "SIGINT"}, {SIGQUIT, "SIGQUIT"},
	{SIGILL, "SIGILL"}, {SIGTRAP, "SIGTRAP"}, {SIGABRT, "SIGABRT"},
	{SIGBUS, "SIGBUS"}, {SIGFPE, "SIGFPE"}, {SIGKILL, "SIGKILL"},
	{SIGUSR1, "SIGUSR1"}, {SIGSEGV, "SIGSEGV"}, {SIGUSR2, "SIGUSR2"},
	{SIGPIPE, "SIGPIPE"}, {SIGALRM, "SIGALRM"}, {SIGTERM, "SIGTERM"},
	{SIGCHLD, "SIGCHLD"}, {SIGCONT, "SIGCONT"}, {SIGSTOP, "SIGSTOP"},
	{SIGTSTP, "SIGTSTP"}, {SIGTTIN, "SIGTTIN"}, {SIGTTOU, "SIGTTOU"},
	{SIGURG, "SIGURG"}, {SIGXCPU, "SIGXCPU"}, {SIGXFSZ, "SIGXFSZ"},
	{SIGVTALRM, "SIGVTALRM"}, {SIGPROF, "SIGPROF"}, {SIGWINCH, "SIGWINCH"},
	{SIGIO, "SIGIO"}, {SIGSYS, "SIGSYS"},
};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char *number_name(const struct named_number *table, size_t n,
			       int value)
{
	for (size_t i = 0; i < n; i++) {
		if (table[i].value == value)
			return table[i].name;
	}
	return NULL;
}

static int number_find(const struct named_number *table, size_t n,
		       const char *name, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		if (strlen(table[i].name) == len &&
		    memcmp(table[i].name, name, len) == 0)
			return table[i].value;
	}
	return -1;
}

/* The edit distance (insert, delete, replace one letter) between a and b,
 * letters compared whatever their case (epipe is EPIPE's), capped:
 * anything past 3 is 4. Names here are short; a longer input is no
 * near miss of any. */
static size_t near_distance(const char *a, size_t an, const char *b, size_t bn)
{
	size_t row[33], prev, cur;

	if (an > 32 || bn > 32 || (an > bn ? an - bn : bn - an) > 3)
		return 4;
	for (size_t j = 0; j <= bn; j++)
		row[j] = j;
	for (size_t i = 1; i <= an; i++) {
		prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= bn; j++) {
			size_t best = prev + (toupper((unsigned char)a[i - 1]) !=
					      toupper((unsigned char)b[j - 1]));

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			cur = row[j];
			row[j] = best;
			prev = cur;
		}
	}
	return row[bn] < 4 ? row[bn] : 4;
}

/* The table's name nearest to name[0, len), one edit away (EPIPEE), or
 * two for a name of 6 letters or more (ECONRESET), or NULL: a short name
 * two edits away is a guess (EFOO is not EIO). */
static const char *number_near(const struct named_number *table, size_t n,
			       const char *name, size_t len)
{
	const char *best = NULL;
	size_t best_d = len >= 6 ? 3 : 2;

	for (size_t i = 0; i < n; i++) {
		size_t d = near_distance(name, len, table[i].name,
					 strlen(table[i].name));

		if (d < best_d) {
			best_d = d;
			best = table[i].name;
		}
	}
	return best;
}

/* Reads a decimal number that fills s[0, len) exactly and is at most max.
 * Returns 0, or -1 for anything else (sign, garbage, overflow). */
static int decimal_read(const char *s, size_t len, unsigned long max,
			unsigned long *out)
{
	unsigned long v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned d = (unsigned)(s[i] - '0');

		if (s[i] < '0' || s[i] > '9' || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int errno_find(const char *s, size_t len)
{
	unsigned long v;

	if (len > 0 && s[0] >= '0' && s[0] <= '9') {
		if (decimal_read(s, len, FI__ERRNO_MAX, &v) != 0 || v == 0)
			return -1;
		return (int)v;
	}
	return number_find(errno_names, COUNT_OF(errno_names), s, len);
}

static int signal_find(const char *s, size_t len)
{
	unsigned long v;

	if (len > 0 && s[0] >= '0' && s[0] <= '9') {
		if (decimal_read(s, len, NSIG - 1, &v) != 0 || v == 0)
			return -1;
		return (int)v;
	}
	if (len > 3 && memcmp(s, "SIG", 3) == 0) {
		s += 3;
		len -= 3;
	}
	for (size_t i = 0; i < COUNT_OF(signal_names); i++) {
		const char *bare = signal_names[i].name + 3;

		if (strlen(bare) == len && memcmp(bare, s, len) == 0)
			return signal_names[i].value;
	}
	return -1;
}

int fi_errno_parse(const char *s)
{
	if (s == NULL)
		return -1;
	return errno_find(s, strlen(s));
}

const char *fi_errno_near(const char *s)
{
	if (s == NULL)
		return NULL;
	return number_near(errno_names, COUNT_OF(errno_names), s, strlen(s));
}

const char *fi_errno_name(int e)
{
	return number_name(errno_names, COUNT_OF(errno_names), e);
}

int fi_signal_parse(const char *s)
{
	if (s == NULL)
		return -1;
	return signal_find(s, strlen(s));
}

const char *fi_signal_name(int sig)
{
	return number_name(signal_names, COUNT_OF(signal_names), sig);
}

/* ------------------------------------------------------------------------ */
/* Parsing a spec.                                                          */

/* A piece of the spec: not NUL-terminated, so it is printed with %.*s. */
struct span {
	const char *p;
	size_t n;
};

/* One "key" or "key=value" item between commas. */
struct item {
	struct span all;
	struct span key;
	struct span value;
	int has_value;
};

enum option_bit {
	OPT_AFTER = 1,
	OPT_REPEAT = 2,
	OPT_FD = 4,
	OPT_FDS = 8,
	OPT_CONN = 16,
	OPT_BYTE = 32
};

struct parser {
	const char *spec;
	char *err;
	size_t errlen;
	struct fi_rule *rule;
	unsigned options_seen;
};

#define SPAN_ARG(s) (int)(s).n, (s).p

static int span_is(struct span s, const char *word)
{
	return strlen(word) == s.n && memcmp(s.p, word, s.n) == 0;
}

/* Writes 'spec "<spec>": <message>' into the caller's buffer and returns
 * -EINVAL, so that every error path is one return statement. */
__attribute__((format(printf, 2, 3))) static int
parse_fail(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ps->err == NULL || ps->errlen == 0)
		return -EINVAL;
	n = snprintf(ps->err, ps->errlen, "spec \"%s\": ", ps->spec);
	if (n < 0 || (size_t)n >= ps->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	/* A failed or truncated message still leaves a terminated string. */
	(void)vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static struct item item_split(struct span all)
{
	struct item it = {.all = all, .key = all};
	const char *eq = memchr(all.p, '=', all.n);

	if (eq != NULL) {
		it.key.n = (size_t)(eq - all.p);
		it.value.p = eq + 1;
		it.value.n = all.n - it.key.n - 1;
		it.has_value = 1;
	}
	return it;
}

/*
 * Reads the number of an item such as "after=3", at most max. Every way a
 * number can be wrong gets its own message, since "invalid value" alone
 * leaves the user guessing which of them it was.
 */
static int parse_number(struct parser *ps, const struct item *it,
			unsigned long max, unsigned long *out)
{
	struct span v = it->value;
	size_t digits = 0;

	if (!it->has_value || v.n == 0)
		return parse_fail(ps,
				  "missing value in \"%.*s\" (expected %.*s=N)",
				  SPAN_ARG(it->all), SPAN_ARG(it->key));
	if (v.p[0] == '-')
		return parse_fail(ps, "negative value in \"%.*s\"",
				  SPAN_ARG(it->all));
	while (digits < v.n && v.p[digits] >= '0' && v.p[digits] <= '9')
		digits++;
	if (digits == 0)
		return parse_fail(ps,
				  "non-numeric value in \"%.*s\" (expected a "
				  "decimal number)",
				  SPAN_ARG(it->all));
	if (digits < v.n)
		return parse_fail(ps,
				  "trailing garbage \"%.*s\" after the number "
				  "in \"%.*s\"",
				  (int)(v.n - digits), v.p + digits,
				  SPAN_ARG(it->all));
	if (decimal_read(v.p, v.n, max, out) != 0)
		return parse_fail(ps, "value out of range in \"%.*s\" "
				  "(at most %lu)",
				  SPAN_ARG(it->all), max);
	return 0;
}

static int parse_target(struct parser *ps, struct span s)
{
	char list[200];
	size_t used = 0;
	int t = fi__target_find(s.p, s.n);

	if (s.n == 0)
		return parse_fail(ps, "missing target before ':'");
	if (t >= 0) {
		/* The name fits: the longest target name is 10 characters. */
		memcpy(ps->rule->target, s.p, s.n);
		ps->rule->target[s.n] = '\0';
		ps->rule->sys_mask = fi__target_mask(t);
		return 0;
	}
	list[0] = '\0';
	for (int i = 0; i < FI__TARGET_COUNT && used < sizeof(list); i++) {
		int n = snprintf(list + used, sizeof(list) - used, "%s%s",
				 i ? ", " : "", targets[i].name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	return parse_fail(ps, "unknown target \"%.*s\" (expected one of: %s)",
			  SPAN_ARG(s), list);
}

/* Reads the value of errno=E or signal=S: a name, or a decimal number. */
static int parse_named(struct parser *ps, const struct item *it,
		       int (*find)(const char *, size_t), unsigned long max)
{
	unsigned long v;
	int r;

	if (!it->has_value || it->value.n == 0)
		return parse_fail(ps, "missing value in \"%.*s\" (expected "
				  "%.*s=NAME or %.*s=NUMBER)",
				  SPAN_ARG(it->all), SPAN_ARG(it->key),
				  SPAN_ARG(it->key));
	if (it->value.p[0] == '-' ||
	    (it->value.p[0] >= '0' && it->value.p[0] <= '9')) {
		r = parse_number(ps, it, max, &v);
		if (r != 0)
			return r;
		if (v == 0)
			return parse_fail(ps, "\"%.*s\": 0 is not %s",
					  SPAN_ARG(it->all),
					  find == errno_find ? "an errno"
							     : "a signal");
		return (int)v;
	}
	r = find(it->value.p, it->value.n);
	if (r < 0 && find == errno_find) {
		const char *near = number_near(errno_names, COUNT_OF(errno_names),
					       it->value.p, it->value.n);

		return parse_fail(ps, "unknown errno name \"%.*s\" (%s%s%sa name "
				  "such as EAGAIN or EPIPE, or a number)",
				  SPAN_ARG(it->value), near ? "did you mean " : "",
				  near ? near : "", near ? "? " : "");
	}
	if (r < 0)
		return parse_fail(ps, "unknown signal name \"%.*s\"",
				  SPAN_ARG(it->value));
	return r;
}

static int parse_short(struct parser *ps, const struct item *it)
{
	unsigned long v;
	int r = parse_number(ps, it, LONG_MAX, &v);

	if (r != 0)
		return r;
	if (v == 0)
		return parse_fail(ps, "\"%.*s\": a clamp to 0 bytes is no "
				  "short write (use zero, or short=1 or more)",
				  SPAN_ARG(it->all));
	ps->rule->param = (long)v;
	return 0;
}

static int parse_action_named(struct parser *ps, const struct item *it,
			      enum fi_action action)
{
	int v;

	if (action == FI_ACT_ERRNO)
		v = parse_named(ps, it, errno_find, FI__ERRNO_MAX);
	else
		v = parse_named(ps, it, signal_find, NSIG - 1);
	if (v < 0)
		return v;
	ps->rule->action = action;
	ps->rule->param = v;
	return 0;
}

static int is_option_key(struct span key)
{
	return span_is(key, "after") || span_is(key, "repeat") ||
	       span_is(key, "fd") || span_is(key, "fds") ||
	       span_is(key, "conn") || span_is(key, "byte");
}

static int parse_action(struct parser *ps, struct span s)
{
	struct item it = item_split(s);

	if (s.n == 0)
		return parse_fail(ps, "missing action after ':' (expected "
				  "short=N, errno=E, zero or signal=S)");
	if (span_is(it.key, "short")) {
		ps->rule->action = FI_ACT_SHORT;
		return parse_short(ps, &it);
	}
	if (span_is(it.key, "errno"))
		return parse_action_named(ps, &it, FI_ACT_ERRNO);
	if (span_is(it.key, "signal"))
		return parse_action_named(ps, &it, FI_ACT_SIGNAL);
	if (span_is(it.key, "zero")) {
		if (it.has_value)
			return parse_fail(ps, "\"%.*s\": zero takes no value",
					  SPAN_ARG(s));
		ps->rule->action = FI_ACT_ZERO;
		return 0;
	}
	if (is_option_key(it.key))
		return parse_fail(ps, "missing action: \"%.*s\" is an option, "
				  "and the action comes first after ':'",
				  SPAN_ARG(s));
	return parse_fail(ps, "unknown action \"%.*s\" (expected short=N, "
			  "errno=E, zero or signal=S)",
			  SPAN_ARG(it.key));
}

static int parse_repeat(struct parser *ps, const struct item *it)
{
	unsigned long v;
	int r;

	if (it->has_value && span_is(it->value, "forever")) {
		ps->rule->repeat = FI_REPEAT_FOREVER;
		return 0;
	}
	r = parse_number(ps, it, LONG_MAX, &v);
	if (r != 0)
		return r;
	if (v == 0)
		return parse_fail(ps, "\"%.*s\": a rule that fires 0 times "
				  "does nothing (use repeat=1 or more, or "
				  "forever)",
				  SPAN_ARG(it->all));
	ps->rule->repeat = (long)v;
	return 0;
}

static int parse_option_value(struct parser *ps, const struct item *it,
			      enum option_bit bit)
{
	unsigned long v;
	int r;

	switch (bit) {
	case OPT_AFTER:
		return parse_number(ps, it, ULONG_MAX, &ps->rule->after);
	case OPT_REPEAT:
		return parse_repeat(ps, it);
	case OPT_FD:
		r = parse_number(ps, it, INT_MAX, &v);
		if (r == 0)
			ps->rule->fd = (int)v;
		return r;
	case OPT_FDS:
		if (it->has_value && span_is(it->value, "any")) {
			ps->rule->any_fd = 1;
			return 0;
		}
		if (it->has_value && span_is(it->value, "sockets")) {
			ps->rule->any_fd = 0;
			return 0;
		}
		return parse_fail(ps, "\"%.*s\": expected fds=sockets (the "
				  "default) or fds=any",
				  SPAN_ARG(it->all));
	case OPT_CONN:
		r = parse_number(ps, it, INT_MAX, &v);
		if (r == 0)
			ps->rule->conn = (int)v;
		return r;
	case OPT_BYTE:
		r = parse_number(ps, it, LONG_MAX, &v);
		if (r == 0)
			ps->rule->byte = (long)v;
		return r;
	}
	return -EINVAL;
}

static int parse_option(struct parser *ps, struct span s)
{
	struct item it = item_split(s);
	enum option_bit bit;

	if (s.n == 0)
		return parse_fail(ps, "empty option (a stray ',')");
	if (span_is(it.key, "after"))
		bit = OPT_AFTER;
	else if (span_is(it.key, "repeat"))
		bit = OPT_REPEAT;
	else if (span_is(it.key, "fd"))
		bit = OPT_FD;
	else if (span_is(it.key, "fds"))
		bit = OPT_FDS;
	else if (span_is(it.key, "conn"))
		bit = OPT_CONN;
	else if (span_is(it.key, "byte"))
		bit = OPT_BYTE;
	else if (span_is(it.key, "short") || span_is(it.key, "errno") ||
		 span_is(it.key, "zero") || span_is(it.key, "signal"))
		return parse_fail(ps, "second action \"%.*s\": a rule has one "
				  "action (arm one rule per action)",
				  SPAN_ARG(s));
	else
		return parse_fail(ps, "unknown key \"%.*s\" (expected after=K, "
				  "repeat=N|forever, fd=N, fds=any, conn=C or "
				  "byte=N)",
				  SPAN_ARG(it.key));
	if (ps->options_seen & bit)
		return parse_fail(ps, "duplicate key \"%.*s\" (given twice)",
				  SPAN_ARG(it.key));
	ps->options_seen |= bit;
	return parse_option_value(ps, &it, bit);
}

/* Returns the item that starts at *pos and moves *pos past its comma, or
 * to NULL after the last item. */
static struct span next_item(const char **pos)
{
	struct span s = {.p = *pos};
	const char *comma = strchr(*pos, ',');

	if (comma == NULL) {
		s.n = strlen(*pos);
		*pos = NULL;
	} else {
		s.n = (size_t)(comma - *pos);
		*pos = comma + 1;
	}
	return s;
}

static int parse_body(struct parser *ps, const char *colon)
{
	const char *pos = colon + 1;
	int r = parse_action(ps, next_item(&pos));

	while (r == 0 && pos != NULL)
		r = parse_option(ps, next_item(&pos));
	if (r != 0)
		return r;
	if ((fi__action_kinds(ps->rule->action) & ps->rule->sys_mask) == 0)
		return parse_fail(ps, "action %s does not apply to target %s",
				  fi__action_name(ps->rule->action),
				  ps->rule->target);
	/* Only writing and reading calls carry bytes: a byte= on any other
	 * target would never fire. */
	if (ps->rule->byte >= 0 &&
	    (ps->rule->sys_mask & (FI_GROUP_WRITE | FI_GROUP_READ)) == 0)
		return parse_fail(ps, "byte=%ld: target %s carries no bytes "
				  "(byte= applies to writing and reading "
				  "calls)",
				  ps->rule->byte, ps->rule->target);
	/* fd=N aims at that fd whatever it is: fds= adds nothing to it. */
	if (ps->rule->fd >= 0)
		ps->rule->any_fd = 0;
	return 0;
}

int fi_rule_parse(const char *spec, struct fi_rule *out, char *err,
		  size_t errlen)
{
	struct fi_rule rule = {.repeat = 1, .fd = -1, .conn = -1, .byte = -1};
	struct parser ps = {spec, err, errlen, &rule, 0};
	const char *colon;
	int r;

	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if (spec == NULL || out == NULL) {
		ps.spec = "(null)";
		return parse_fail(&ps, "no spec to parse");
	}
	if (spec[0] == '\0')
		return parse_fail(&ps, "empty spec (expected TARGET:ACTION"
				  "[,after=K][,repeat=N|forever][,fd=N]"
				  "[,conn=C][,byte=N])");
	colon = strchr(spec, ':');
	if (colon == NULL)
		return parse_fail(&ps, "missing ':' between target and action "
				  "(expected TARGET:ACTION)");
	r = parse_target(&ps, (struct span){spec, (size_t)(colon - spec)});
	if (r == 0)
		r = parse_body(&ps, colon);
	if (r == 0)
		*out = rule;
	return r;
}

/* ------------------------------------------------------------------------ */
/* Formatting.                                                              */

static void format_action(const struct fi_rule *rule, char *buf, size_t len)
{
	const char *name = NULL;

	if (rule->action == FI_ACT_ERRNO && rule->param <= INT_MAX)
		name = fi_errno_name((int)rule->param);
	else if (rule->action == FI_ACT_SIGNAL && rule->param <= INT_MAX)
		name = fi_signal_name((int)rule->param);
	if (rule->action == FI_ACT_ZERO)
		(void)snprintf(buf, len, "zero");
	else if (name != NULL)
		(void)snprintf(buf, len, "%s=%s",
			       fi__action_name(rule->action), name);
	else
		(void)snprintf(buf, len, "%s=%ld",
			       fi__action_name(rule->action), rule->param);
}

int fi_rule_format(const struct fi_rule *rule, char *buf, size_t len)
{
	char action[48], after[32] = "", repeat[32] = "", fd[24] = "";
	char conn[24] = "", byte[32] = "";
	const char *fds = "";

	/* The pieces are bounded (numbers and fixed names), so these small
	 * buffers never truncate; only the final snprintf can. */
	format_action(rule, action, sizeof(action));
	if (rule->after != 0)
		(void)snprintf(after, sizeof(after), ",after=%lu", rule->after);
	if (rule->repeat == FI_REPEAT_FOREVER)
		(void)snprintf(repeat, sizeof(repeat), ",repeat=forever");
	else if (rule->repeat != 1)
		(void)snprintf(repeat, sizeof(repeat), ",repeat=%ld",
			       rule->repeat);
	if (rule->fd >= 0)
		(void)snprintf(fd, sizeof(fd), ",fd=%d", rule->fd);
	else if (rule->any_fd)
		fds = ",fds=any";
	if (rule->conn >= 0)
		(void)snprintf(conn, sizeof(conn), ",conn=%d", rule->conn);
	if (rule->byte >= 0)
		(void)snprintf(byte, sizeof(byte), ",byte=%ld", rule->byte);
	return snprintf(buf, len, "%.*s:%s%s%s%s%s%s%s",
			(int)sizeof(rule->target), rule->target, action, after,
			repeat, fd, fds, conn, byte);
}
