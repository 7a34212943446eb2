/*
 * fi.c: the fault gate's counters, what it knows of each fd, its rules and
 * its libfiu failpoints, and the plan each call follows. The out-of-line
 * wrappers and the slow paths of every wrapper are fi_calls.c's.
 *
 * Every wrapper makes one compare of the fd against a limit that is 0 while
 * the gate is armed (fi__fast_fd_limit), then counts its call per fd. The
 * hot ones are inline in fi.h. With no rule
 * armed that is all the gate costs: the compare almost always passes, and
 * libfiu (a lock and a hash lookup per fiu_fail) is never asked. With rules
 * armed, the slow path asks libfiu only about the failpoints fi_arm enabled
 * that have a rule matching the call's kind and fd, so a rule on recv, or
 * on send to another fd, costs a send no fiu_fail. Under remote control
 * (fiu-ctrl) it asks about every failpoint that can apply to the call.
 *
 * A rule is a libfiu failpoint "wirecheck/<target>/<action>" enabled with an
 * external callback. libfiu decides nothing itself: the callback evaluates
 * the gate's rules against the call in progress (kind and fd, which
 * fiu_fail cannot pass along, so they wait in `call`). The action's
 * parameter travels back through fiu_failinfo(), the same way it does for a
 * failpoint that fiu-ctrl enabled with failinfo=N, so one code path serves
 * both. libfiu 1.1 copies the failinfo an external callback sets into the
 * value fiu_failinfo() returns (fiu_fail passes the callback a pointer to
 * the failpoint's own failinfo); tests/unit/test_gate.c checks it.
 */
#include <errno.h>
#include <limits.h>
#ifdef FI_PRELOAD
#include <pthread.h>
#endif
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* The real libfiu functions, not the no-op macros fiu.h gives by default. */
#define FIU_ENABLE 1
#include <fiu-control.h>
#include <fiu.h>

#include "fi.h"
#include "fi_internal.h"


/* ------------------------------------------------------------------------ */
/* State. Single-threaded by contract (fi.h), so plain statics.             */

static struct fi_counters own_counters;
struct fi_counters *fi__counters = &own_counters;

/* Non-zero after fi_remote_control(): ask libfiu about every failpoint that
 * could apply, since only libfiu knows what fiu-ctrl enabled. */
static int gate_remote;

/* See fi.h: FI_MAX_FD while disarmed, 0 while armed. */
unsigned fi__fast_fd_limit = FI_MAX_FD;

static struct fi_rule rules[FI_MAX_RULES];
static const char *rule_failpoint[FI_MAX_RULES];
/* rule_fp_bit[i] is FP_BIT of the failpoint of rule i: the pre-filter of
 * the slow path ORs these instead of comparing failpoint names. */
static uint64_t rule_fp_bit[FI_MAX_RULES];
static int rule_count;

/* One bit per failpoint the gate can enable, that is per action and
 * target, so that every failpoint of a call fits in one 64-bit mask. */
#define FP_BIT(target, action)                                              \
	((uint64_t)1                                                         \
	 << ((unsigned)(action) * FI__TARGET_COUNT + (unsigned)(target)))
_Static_assert(FI__TARGET_COUNT * FI_ACT_COUNT <= 64,
	       "every (action, target) failpoint needs a bit of a uint64_t");

/* enabled[action] has bit t set when fi_arm enabled the failpoint of target
 * t and that action in libfiu. */
static unsigned enabled[FI_ACT_COUNT];

/* No rule: a failpoint fiu-ctrl enabled fired (struct fi_fired). */
#define RULE_NONE 255

/* The call being decided: what the external callback matches rules against,
 * the actions already decided for it (one parameter per action), and the
 * rule that decided each. */
static struct {
	enum fi_sys kind;
	int fd;
	int socket;                 /* 1 socket, 0 not, -1 not looked at yet */
	size_t len;                 /* the bytes the call asks to move */
	unsigned decided;
	uint8_t rule[FI_ACT_COUNT];
} call;


/*
 * What the gate knows of each fd below FI_MAX_FD: FD_UNKNOWN until a rule
 * that aims at sockets only must know, then FD_SOCKET or FD_OTHER (fstat),
 * until the fd is closed or replaced (fi_fd_forget). Bytes, accessed with
 * relaxed atomics in the preload build, whose host may have threads.
 */
enum { FD_UNKNOWN, FD_SOCKET, FD_OTHER };
static uint8_t fd_type[FI_MAX_FD];

/* fd_conn[fd] is the connection number the gate gave fd plus 1, or 0 for
 * none (struct fi_rule's conn); conn_next the next number to give. Both
 * are kept armed or not: connect and accept are rare, and a rule armed
 * later still finds the connections numbered from the first. */
static uint32_t fd_conn[FI_MAX_FD];
static uint32_t conn_next;

/* The kinds whose fd may be anything, which a rule without fd=N or
 * fds=any applies to only when the fd is a socket. epoll_ctl's fd is the
 * watched one; epoll_wait's is the epoll instance, aimed at by nature. */
#define FD_TYPED_KINDS                                                       \
	(FI_MASK(FI_WRITE) | FI_MASK(FI_WRITEV) | FI_MASK(FI_READ) |         \
	 FI_MASK(FI_CLOSE) | FI_MASK(FI_EPOLL_CTL))

#define ACT_BIT(a) FI__ACT_BIT(a)

/* ------------------------------------------------------------------------ */
/* Counters.                                                                */

struct fi_counters *fi_counters(void)
{
	return fi__counters;
}

void fi_counters_attach(struct fi_counters *shared)
{
	fi__counters = shared != NULL ? shared : &own_counters;
}

void fi_counters_reset(void)
{
	memset(fi__counters, 0, sizeof(*fi__counters));
}

/* Arms the gate when a rule is armed or fiu-ctrl may enable failpoints,
 * since then every call must take the slow path; disarms it otherwise. */
static void gate_set_armed(int armed)
{
	fi__fast_fd_limit = armed ? 0 : FI_MAX_FD;
}

/* The count of the slow path, for any fd: an fd out of range, such as -1
 * or one above FI_MAX_FD, has no per-fd counters. */
static int kind_group(enum fi_sys kind);

void fi__count_fd(enum fi_sys kind, int fd)
{
	if ((unsigned)fd < FI_MAX_FD) {
		FI__INC(fi__counters->fd_calls[kind][fd]);
		FI__INC(fi__counters->fd_ops[fd][kind_group(kind)]);
	} else {
		FI__INC(fi__counters->other_fd_calls[kind]);
	}
}

uint64_t fi_calls(const struct fi_counters *c, enum fi_sys kind)
{
	uint64_t n;

	if ((unsigned)kind >= FI_SYS_COUNT)
		return 0;
	n = c->other_fd_calls[kind];
	for (size_t fd = 0; fd < FI_MAX_FD; fd++)
		n += c->fd_calls[kind][fd];
	return n;
}

/* See fi.h. EAGAIN is counted here since it is the one failure the stack
 * expects, and the only one whose count depends on timing. */
ssize_t fi__failed(enum fi_sys kind)
{
	int e = errno;

	if (e == EAGAIN || e == EWOULDBLOCK)
		FI__INC(fi__counters->wouldblock[kind]);
	return -e;
}

/* ------------------------------------------------------------------------ */
/* What an fd is.                                                           */

void fi_fd_forget(int fd)
{
	if ((unsigned)fd >= FI_MAX_FD)
		return;
	__atomic_store_n(&fd_type[fd], (uint8_t)FD_UNKNOWN, __ATOMIC_RELAXED);
	__atomic_store_n(&fd_conn[fd], 0, __ATOMIC_RELAXED);
	for (int d = 0; d < 2; d++)
		__atomic_store_n(&fi__counters->fd_bytes[fd][d], 0,
				 __ATOMIC_RELAXED);
	for (int g = 0; g < 3; g++)
		__atomic_store_n(&fi__counters->fd_ops[fd][g], 0,
				 __ATOMIC_RELAXED);
}

int fi_fd_conn(int fd)
{
	if ((unsigned)fd >= FI_MAX_FD)
		return -1;
	return (int)__atomic_load_n(&fd_conn[fd], __ATOMIC_RELAXED) - 1;
}

/* fd is a new connection: it gets the next number. */
void fi__conn_open(int fd)
{
	uint32_t n;

	if ((unsigned)fd >= FI_MAX_FD)
		return;
	n = __atomic_fetch_add(&conn_next, 1, __ATOMIC_RELAXED);
	/* Past 2^31 - 2 connections a rule could not name them (conn is an
	 * int): the fd then has no number. */
	__atomic_store_n(&fd_conn[fd], n < INT32_MAX ? n + 1 : 0,
			 __ATOMIC_RELAXED);
}

/* Returns 1 when fd is a socket, from the cache or fstat. An fd fstat
 * cannot see (closed, out of range of nothing) is no socket: the call
 * will fail with EBADF whatever a rule says. */
static int fd_is_socket(int fd)
{
	struct stat st;
	uint8_t t = FD_UNKNOWN;

	if ((unsigned)fd < FI_MAX_FD)
		t = __atomic_load_n(&fd_type[fd], __ATOMIC_RELAXED);
	if (t != FD_UNKNOWN)
		return t == FD_SOCKET;
	if (fstat(fd, &st) != 0)
		return 0;
	t = S_ISSOCK(st.st_mode) ? FD_SOCKET : FD_OTHER;
	if ((unsigned)fd < FI_MAX_FD)
		__atomic_store_n(&fd_type[fd], t, __ATOMIC_RELAXED);
	return t == FD_SOCKET;
}

/* Whether the call in progress is on a socket, looked at once per call. */
static int call_on_socket(void)
{
	if (call.socket < 0)
		call.socket = fd_is_socket(call.fd);
	return call.socket;
}

/* The direction of a kind's bytes in fd_bytes: 0 written, 1 read. */
static int kind_dir(enum fi_sys kind)
{
	return (FI_GROUP_READ & FI_MASK(kind)) != 0;
}

/* Whether the call in progress would carry byte `byte` of its fd's stream
 * in its direction: off <= byte < off + len. */
static int call_carries(long byte)
{
	uint64_t off;

	if ((unsigned)call.fd >= FI_MAX_FD ||
	    !((FI_GROUP_WRITE | FI_GROUP_READ) & FI_MASK(call.kind)))
		return 0;
	off = __atomic_load_n(&fi__counters->fd_bytes[call.fd][kind_dir(call.kind)],
			      __ATOMIC_RELAXED);
	return off <= (uint64_t)byte && (uint64_t)byte - off < call.len;
}

/* Whether a rule's fd, connection, byte and type filters let the call in
 * progress through (its kind is checked apart). A connection's fd is a
 * socket by nature. */
static int rule_fd_matches(const struct fi_rule *rule)
{
	if (rule->byte >= 0 && !call_carries(rule->byte))
		return 0;
	if (rule->conn >= 0 && fi_fd_conn(call.fd) != rule->conn)
		return 0;
	if (rule->fd >= 0)
		return rule->fd == call.fd;
	if (rule->conn >= 0 || rule->any_fd ||
	    !(FD_TYPED_KINDS & FI_MASK(call.kind)))
		return 1;
	return call_on_socket();
}

/* ------------------------------------------------------------------------ */
/* Rules.                                                                   */

int fi_rule_count(void)
{
	return rule_count;
}

const struct fi_rule *fi_rule_get(int i)
{
	if (i < 0 || i >= rule_count)
		return NULL;
	return &rules[i];
}

static int rule_matches(const struct fi_rule *rule)
{
	return (rule->sys_mask & FI_MASK(call.kind)) != 0 &&
	       rule_fd_matches(rule);
}

static int rule_due(const struct fi_rule *rule)
{
	return rule->seen > rule->after &&
	       (rule->repeat == FI_REPEAT_FOREVER ||
		rule->fired < (unsigned long)rule->repeat);
}

/* The actions that replace the call, so that another action decided for
 * it would not be applied: errno and zero replace a clamp, and errno (which
 * fi__gate_begin applies first) replaces zero. plan_make decides them
 * before the actions they replace. */
static unsigned action_replaced_by(enum fi_action a)
{
	switch (a) {
	case FI_ACT_SHORT:
		return ACT_BIT(FI_ACT_ERRNO) | ACT_BIT(FI_ACT_ZERO);
	case FI_ACT_ZERO:
		return ACT_BIT(FI_ACT_ERRNO);
	default:
		return 0;
	}
}

/*
 * libfiu's external callback, run inside fiu_fail() with libfiu's lock held
 * (so it must not call libfiu). Every rule of this failpoint that matches the
 * call sees it, so `after` counts calls whatever the other rules do. Only one
 * rule can fire per call and action, since a call takes one errno or one
 * clamp: the first due rule fires, and a due rule that another rule (or an
 * earlier failpoint of the same action) beat to this call fires on a later
 * one. A rule whose action another decided action replaces (a clamp on a
 * call an errno rule refuses) does not fire either: it fires on a later
 * call. Thus `fired` is the number of times a rule's action was applied
 * (fi__gate_begin takes back, while a signal it raises runs, the calls of
 * the rules whose action comes after the signal).
 */
static int gate_callback(const char *name, int *failnum, void **failinfo,
			 unsigned *flags)
{
	int fire = 0;

	(void)failnum;
	(void)flags;
	for (int i = 0; i < rule_count; i++) {
		struct fi_rule *rule = &rules[i];

		if (strcmp(rule_failpoint[i], name) != 0 || !rule_matches(rule))
			continue;
		rule->seen++;
		if (fire ||
		    (call.decided & (ACT_BIT(rule->action) |
				     action_replaced_by(rule->action))) ||
		    !rule_due(rule))
			continue;
		rule->fired++;
		FI__INC(fi__counters->rule_fired[i]);
		call.rule[rule->action] = (uint8_t)i;
		*failinfo = (void *)(intptr_t)rule->param;
		fire = 1;
	}
	return fire;
}

/* Returns the target of a rule, or -1 when its fields do not agree. */
static int rule_target(const struct fi_rule *rule)
{
	int t;

	if (memchr(rule->target, '\0', sizeof(rule->target)) == NULL)
		return -1;
	t = fi__target_find(rule->target, strlen(rule->target));
	if (t < 0 || fi__target_mask(t) != rule->sys_mask)
		return -1;
	if ((unsigned)rule->action >= FI_ACT_COUNT ||
	    !fi__param_valid(rule->action, rule->param) ||
	    (fi__action_kinds(rule->action) & rule->sys_mask) == 0)
		return -1;
	if (rule->repeat == 0 || rule->repeat < FI_REPEAT_FOREVER)
		return -1;
	if (rule->any_fd != 0 && rule->any_fd != 1)
		return -1;
	if (rule->conn < -1 || rule->byte < -1 ||
	    (rule->byte >= 0 &&
	     (rule->sys_mask & (FI_GROUP_WRITE | FI_GROUP_READ)) == 0))
		return -1;
	return t;
}

/* Enables a failpoint in libfiu once, however many rules share it. */
static int failpoint_enable(int target, enum fi_action action)
{
	if (enabled[action] & (1u << target))
		return 0;
	if (fiu_enable_external(fi__failpoint_name(target, action), 1, NULL, 0,
				gate_callback) != 0)
		return -EINVAL;
	enabled[action] |= 1u << target;
	return 0;
}

int fi_arm(const struct fi_rule *rule)
{
	int t, r;

	if (rule == NULL)
		return -EINVAL;
	if (rule_count == FI_MAX_RULES)
		return -ENOSPC;
	t = rule_target(rule);
	if (t < 0)
		return -EINVAL;
	/* fiu_init() may be called any number of times; a rule armed before
	 * fi_init() must still find libfiu ready. */
	if (fiu_init(0) != 0)
		return -EINVAL;
	r = failpoint_enable(t, rule->action);
	if (r != 0)
		return r;
	rules[rule_count] = *rule;
	rules[rule_count].seen = 0;
	rules[rule_count].fired = 0;
	rule_failpoint[rule_count] = fi__failpoint_name(t, rule->action);
	rule_fp_bit[rule_count] = FP_BIT(t, rule->action);
	/* Disarmed, the fast path closed fds without telling the cache. */
	if (rule_count == 0 && !gate_remote)
		memset(fd_type, 0, sizeof(fd_type));
	gate_set_armed(1);
	return rule_count++;
}

void fi_disarm_all(void)
{
	for (enum fi_action a = FI_ACT_SHORT; a < FI_ACT_COUNT; a++) {
		for (int t = 0; t < FI__TARGET_COUNT; t++) {
			if (!(enabled[a] & (1u << t)))
				continue;
			/* A failure means the point is no longer enabled
			 * (fiu-ctrl disabled it): the goal is reached. */
			(void)fiu_disable(fi__failpoint_name(t, a));
		}
		enabled[a] = 0;
	}
	rule_count = 0;
	gate_set_armed(gate_remote);
}

/* ------------------------------------------------------------------------ */
/* Initialisation and remote control.                                       */

#define FAULTS_VAR "WIRECHECK_FAULTS"
/* A spec is short ("writev:short=4096,after=10,repeat=forever,fd=12" is 48
 * characters); a longer one is a mistake worth reporting. */
#define SPEC_MAX 256

static int is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

/* Copies the spec that starts at s (up to ';') without its surrounding
 * blanks, which a variable written over several lines has. Returns the
 * length of the spec in s, blanks included. */
static size_t spec_take(const char *s, char *out, size_t outlen, int *toolong)
{
	size_t len = strcspn(s, ";");
	size_t b = 0, e = len;

	while (b < e && is_blank(s[b]))
		b++;
	while (e > b && is_blank(s[e - 1]))
		e--;
	*toolong = e - b >= outlen;
	if (!*toolong) {
		memcpy(out, s + b, e - b);
		out[e - b] = '\0';
	}
	return len;
}

/* Reports a spec of the variable that is too long, quoting its start. */
static int faults_too_long(const char *s, size_t len)
{
	int shown = len > SPEC_MAX ? SPEC_MAX : (int)len;

	fprintf(stderr, "%s: spec \"%.*s...\" is longer than %d characters\n",
		FAULTS_VAR, shown, s, SPEC_MAX - 1);
	return -EINVAL;
}

/* Parses every spec of the variable before arming any, so that a typo in
 * the last spec leaves no half-armed gate behind. */
static int faults_parse(const char *value, struct fi_rule *out, int *count)
{
	char spec[SPEC_MAX], err[512];
	int toolong;

	*count = 0;
	for (const char *s = value; *s != '\0';) {
		size_t len = spec_take(s, spec, sizeof(spec), &toolong);

		if (toolong)
			return faults_too_long(s, len);
		s += len;
		if (*s == ';')
			s++;
		/* Empty pieces ("a;;b", a trailing ';') are separators. */
		if (spec[0] == '\0')
			continue;
		if (*count == FI_MAX_RULES) {
			fprintf(stderr, "%s: spec \"%s\": more than %d rules\n",
				FAULTS_VAR, spec, FI_MAX_RULES);
			return -EINVAL;
		}
		if (fi_rule_parse(spec, &out[*count], err, sizeof(err)) != 0) {
			fprintf(stderr, "%s: %s\n", FAULTS_VAR, err);
			return -EINVAL;
		}
		(*count)++;
	}
	return 0;
}

int fi_init(void)
{
	struct fi_rule parsed[FI_MAX_RULES];
	const char *value;
	char spec[SPEC_MAX];
	int count, r;

	if (fiu_init(0) != 0) {
		fprintf(stderr, "wirecheck: fiu_init failed\n");
		return -EINVAL;
	}
	value = getenv(FAULTS_VAR);
	if (value == NULL)
		return 0;
	r = faults_parse(value, parsed, &count);
	if (r != 0)
		return r;
	for (int i = 0; i < count; i++) {
		r = fi_arm(&parsed[i]);
		if (r < 0) {
			(void)fi_rule_format(&parsed[i], spec, sizeof(spec));
			fprintf(stderr, "%s: spec \"%s\": cannot arm: %s\n",
				FAULTS_VAR, spec, strerror(-r));
			return -EINVAL;
		}
	}
	return 0;
}

int fi_remote_control(const char *basename)
{
	if (basename == NULL)
		return -EINVAL;
	if (fiu_init(0) != 0)
		return -EINVAL;
	errno = 0;
	if (fiu_rc_fifo(basename) != 0)
		return errno != 0 ? -errno : -EIO;
	if (rule_count == 0)
		memset(fd_type, 0, sizeof(fd_type));
	gate_remote = 1;
	gate_set_armed(1);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The slow path: deciding, then applying.                                  */

/* The targets whose failpoints can apply to a kind: its own name, its
 * group, and "all" (numbered in that order, see fi_internal.h). */
static unsigned kind_targets(enum fi_sys kind)
{
	unsigned t = (1u << kind) | (1u << FI__TARGET_ALL);

	if (FI_GROUP_WRITE & FI_MASK(kind))
		t |= 1u << FI__TARGET_WRITE;
	if (FI_GROUP_READ & FI_MASK(kind))
		t |= 1u << FI__TARGET_READ;
	return t;
}

/* Reports, once per failpoint, a parameter that its action cannot use. */
static void param_warn(int target, enum fi_action a, long param)
{
	static unsigned warned[FI_ACT_COUNT];

	if (warned[a] & (1u << target))
		return;
	warned[a] |= 1u << target;
	fprintf(stderr, "wirecheck: %s fired with failinfo %ld, which %s "
		"cannot use: ignored\n",
		fi__failpoint_name(target, a), param, fi__action_name(a));
}

/*
 * Asks libfiu about one action's failpoints, in target order (own name,
 * group, "all"): the first that fires wins. A parameter that is no use
 * (fiu-ctrl reads a mistyped failinfo as 0) is reported and ignored, since
 * applying it would fake a success.
 */
static void plan_action(struct fi__plan *p, enum fi_action a, unsigned targets)
{
	/* Lowest bit first: the targets' numbers are their order. */
	for (; targets != 0; targets &= targets - 1) {
		int t = __builtin_ctz(targets);
		void *info;
		long param;

		if (fiu_fail(fi__failpoint_name(t, a)) == 0)
			continue;
		info = fiu_failinfo();
		param = (long)(intptr_t)info;
		if (p->actions & ACT_BIT(a))
			continue;
		if (!fi__param_valid(a, param)) {
			param_warn(t, a, param);
			continue;
		}
		p->actions |= ACT_BIT(a);
		p->param[a] = param;
		p->rule[a] = call.rule[a];
		call.decided |= ACT_BIT(a);
	}
}

/*
 * The pre-filter: returns the failpoints (FP_BIT) worth asking libfiu about
 * for a call. Without remote control, those with a rule that matches the
 * call's kind and fd: for any other, libfiu would take its lock, find the
 * failpoint and run gate_callback, which finds no rule that matches, changes
 * nothing and says no. So a rule on another fd costs a call no fiu_fail.
 * Under remote control, every failpoint, since fiu-ctrl may have enabled
 * any of them (or replaced one of ours) with settings only libfiu knows.
 */
static uint64_t failpoints_live(void)
{
	uint64_t live = 0;

	/* fiu-ctrl's failpoints aim at sockets, as a rule without fds=any. */
	if (gate_remote && (!(FD_TYPED_KINDS & FI_MASK(call.kind)) ||
			    call_on_socket()))
		return ~(uint64_t)0;
	for (int i = 0; i < rule_count; i++) {
		const struct fi_rule *rule = &rules[i];

		if ((rule->sys_mask & FI_MASK(call.kind)) != 0 &&
		    rule_fd_matches(rule))
			live |= rule_fp_bit[i];
	}
	return live;
}

/* The order plan_make decides the actions in: an action before those it
 * replaces (action_replaced_by), so that a rule whose action would not be
 * applied does not fire. */
static const enum fi_action plan_order[] = {
	FI_ACT_ERRNO, FI_ACT_ZERO, FI_ACT_SIGNAL, FI_ACT_SHORT,
};
_Static_assert(sizeof(plan_order) / sizeof(plan_order[0]) == FI_ACT_COUNT,
	       "plan_order lists every action once");

static void plan_make(struct fi__plan *p, enum fi_sys kind, int fd,
		      size_t len)
{
	uint64_t live;
	unsigned targets;

	memset(p, 0, sizeof(*p));
	memset(p->rule, RULE_NONE, sizeof(p->rule));
	p->kind = kind;
	p->fd = fd;
	p->len = len;
	call.kind = kind;
	call.fd = fd;
	call.len = len;
	call.socket = -1;
	call.decided = 0;
	memset(call.rule, RULE_NONE, sizeof(call.rule));
	live = failpoints_live();
	if (live == 0)
		return;
	targets = kind_targets(kind);
	for (size_t i = 0; i < sizeof(plan_order) / sizeof(plan_order[0]);
	     i++) {
		enum fi_action a = plan_order[i];
		/* A failpoint live without remote control is one fi_arm
		 * enabled, so this also keeps to enabled[a] there. */
		unsigned asked = targets &
				 (unsigned)(live >> (a * FI__TARGET_COUNT)) &
				 ((1u << FI__TARGET_COUNT) - 1u);

		if (asked != 0 && (fi__action_kinds(a) & FI_MASK(kind)))
			plan_action(p, a, asked);
	}
}

/*
 * The rules' state and `call` are shared by every thread of a program the
 * LD_PRELOAD build is loaded into, so there the plan is made under a lock;
 * recursive, so that a signal handler that calls the gate in the same
 * thread cannot deadlock. The stack's own build is single-threaded by
 * contract and takes no lock.
 */
#ifdef FI_PRELOAD
static pthread_mutex_t plan_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

/*
 * fork() in a threaded host: a thread that held the lock at the fork is
 * not in the child, which would wait for it forever at its first armed
 * call. So the forking thread takes the lock before the fork (no thread is
 * then inside plan_make, nor inside libfiu for the gate), the parent
 * releases it, and the child makes it anew: its owner's thread id is the
 * parent's, which the child's unlock would not match.
 */
void fi__fork_prepare(void)
{
	if (pthread_mutex_lock(&plan_lock) != 0)
		abort();
}

void fi__fork_parent(void)
{
	if (pthread_mutex_unlock(&plan_lock) != 0)
		abort();
}

void fi__fork_child(void)
{
	pthread_mutexattr_t a;

	if (pthread_mutexattr_init(&a) != 0 ||
	    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) != 0 ||
	    pthread_mutex_init(&plan_lock, &a) != 0 ||
	    pthread_mutexattr_destroy(&a) != 0)
		abort();
}

static void plan_make_locked(struct fi__plan *p, enum fi_sys kind, int fd,
			     size_t len)
{
	/* Locking an initialised recursive mutex fails only past its
	 * recursion limit, which a gate that never recurses more than once
	 * cannot reach; a failure there would be a bug, not a state. */
	if (pthread_mutex_lock(&plan_lock) != 0)
		abort();
	plan_make(p, kind, fd, len);
	if (pthread_mutex_unlock(&plan_lock) != 0)
		abort();
}
#else
#define plan_make_locked plan_make
#endif

/* A kind's group in fd_ops: 0 writing, 1 reading, 2 other. */
static int kind_group(enum fi_sys kind)
{
	if (FI_GROUP_WRITE & FI_MASK(kind))
		return 0;
	return (FI_GROUP_READ & FI_MASK(kind)) ? 1 : 2;
}

/* Logs a fault that changed (or replaced) a call in the counters, so that
 * a crash of the process right after it does not lose it. */
static void fired_log(const struct fi__plan *p, enum fi_action a, int refused)
{
	uint64_t i = __atomic_fetch_add(&fi__counters->fired_total, 1,
					__ATOMIC_RELAXED);
	struct fi_fired *f;

	if (i >= FI_FIRED_MAX)
		return;
	f = &fi__counters->fired[i];
	f->rule = p->rule[a];
	f->kind = (uint8_t)p->kind;
	f->action = (uint8_t)a;
	f->refused = (uint8_t)refused;
	f->fd = p->fd;
	if ((unsigned)p->fd < FI_MAX_FD) {
		f->call = fi__counters->fd_ops[p->fd][kind_group(p->kind)];
		f->offset = fi__counters->fd_bytes[p->fd][kind_dir(p->kind)];
	} else {
		f->call = fi__counters->other_fd_calls[p->kind];
		f->offset = 0;
	}
	f->param = p->param[a];
	f->conn = fi_fd_conn(p->fd);
	f->length = p->len;
}

static void count_add(uint64_t *x, int delta)
{
	if (delta > 0)
		(void)__atomic_fetch_add(x, 1, __ATOMIC_RELAXED);
	else
		(void)__atomic_fetch_sub(x, 1, __ATOMIC_RELAXED);
}

/*
 * Adds delta (1 or -1) to the counts a call with a signal makes before the
 * signal is raised: the call's own (fi__count_fd) and the fired count of
 * each rule whose action comes after the signal (errno, zero, clamp). They
 * are taken back while the signal runs, since a signal that ends the process
 * ends it before the kernel (or the gate) answered the call, and the parent
 * reads the counters after the death: syscalls are the calls the kernel
 * saw, a rule's fired the calls it was applied to. Given back when the
 * signal returns. The signal's own entry in fired, logged before, keeps
 * the call's index; a call the signal's handler makes on the same fd gets
 * the same index.
 */
static void plan_count_add(const struct fi__plan *p, int delta)
{
	if ((unsigned)p->fd < FI_MAX_FD) {
		count_add(&fi__counters->fd_calls[p->kind][p->fd], delta);
		count_add(&fi__counters->fd_ops[p->fd][kind_group(p->kind)],
			  delta);
	} else {
		count_add(&fi__counters->other_fd_calls[p->kind], delta);
	}
	for (enum fi_action a = FI_ACT_SHORT; a < FI_ACT_COUNT; a++) {
		if (a == FI_ACT_SIGNAL || !(p->actions & ACT_BIT(a)) ||
		    p->rule[a] >= FI_MAX_RULES)
			continue;
		count_add(&fi__counters->rule_fired[p->rule[a]], delta);
	}
}

/*
 * Decides a call and applies what comes before it: the signal, then errno
 * or zero, which replace the call. Returns 1 with *ret set when the kernel
 * must not be called, else 0 (the caller then applies the clamp).
 */
int fi__gate_begin(enum fi_sys kind, int fd, size_t len, struct fi__plan *p,
		   ssize_t *ret)
{
	plan_make_locked(p, kind, fd, len);
	if (p->actions == 0)
		return 0;
	/* A signal handler may call the gate again, which overwrites `call`:
	 * every fiu_fail of this call has already been made. Logged first:
	 * the signal may end the process. */
	if (p->actions & ACT_BIT(FI_ACT_SIGNAL)) {
		int raised;

		fired_log(p, FI_ACT_SIGNAL, 0);
		plan_count_add(p, -1);
		raised = raise((int)p->param[FI_ACT_SIGNAL]) == 0;
		plan_count_add(p, 1);
		if (raised)
			p->changed = 1;
	}
	if (p->actions & (ACT_BIT(FI_ACT_ERRNO) | ACT_BIT(FI_ACT_ZERO))) {
		enum fi_action a = (p->actions & ACT_BIT(FI_ACT_ERRNO))
					   ? FI_ACT_ERRNO
					   : FI_ACT_ZERO;

		FI__INC(fi__counters->injected[kind]);
		FI__INC(fi__counters->refused[kind]);
		fired_log(p, a, 1);
		*ret = a == FI_ACT_ERRNO ? -(ssize_t)p->param[FI_ACT_ERRNO] : 0;
		return 1;
	}
	return 0;
}

/* Ends a call the kernel made: logs and counts it as injected if an action
 * changed it, counts the bytes it moved, and converts the result. */
ssize_t fi__gate_end(const struct fi__plan *p, ssize_t r)
{
	/* EAGAIN: the kernel took nothing, whatever the clamp was, and how
	 * often it answers so depends on timing. Neither is logged, so that
	 * a fired fault's index and a run's log are the same every run. */
	int wouldblock = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);

	if (p->changed)
		FI__INC(fi__counters->injected[p->kind]);
	if (wouldblock && (unsigned)p->fd < FI_MAX_FD)
		(void)__atomic_fetch_sub(
			&fi__counters->fd_ops[p->fd][kind_group(p->kind)], 1,
			__ATOMIC_RELAXED);
	if (p->clamped && !wouldblock)
		fired_log(p, FI_ACT_SHORT, 0);
	if (r > 0 && !p->no_bytes && (unsigned)p->fd < FI_MAX_FD &&
	    ((FI_GROUP_WRITE | FI_GROUP_READ) & FI_MASK(p->kind)))
		(void)__atomic_fetch_add(
			&fi__counters->fd_bytes[p->fd][kind_dir(p->kind)],
			(uint64_t)r, __ATOMIC_RELAXED);
	return fi__result(p->kind, r);
}

size_t fi__plan_clamp(struct fi__plan *p, size_t len)
{
	size_t n;

	if (!(p->actions & ACT_BIT(FI_ACT_SHORT)))
		return len;
	n = (size_t)p->param[FI_ACT_SHORT];
	if (n >= len)
		return len;
	p->changed = 1;
	p->clamped = 1;
	return n;
}

/*
 * Trims an iovec array to its first `max` bytes, into copy (at least cnt
 * entries), keeping the order of the entries. The caller's array is not
 * changed: it may be const, and the caller still needs it to account for
 * what was sent. Returns the number of entries in copy.
 */
static size_t iov_clamp(const struct iovec *iov, size_t cnt, size_t max,
			struct iovec *copy)
{
	size_t i;

	for (i = 0; i < cnt && max > 0; i++) {
		copy[i] = iov[i];
		if (copy[i].iov_len > max)
			copy[i].iov_len = max;
		max -= copy[i].iov_len;
	}
	return i;
}

static size_t iov_total(const struct iovec *iov, size_t cnt)
{
	size_t total = 0;

	for (size_t i = 0; i < cnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - total)
			return SIZE_MAX;
		total += iov[i].iov_len;
	}
	return total;
}

size_t fi__iov_len(const struct iovec *iov, long cnt)
{
	/* An array the kernel would refuse (NULL, a negative count, more than
	 * IOV_MAX entries) is not read: the call carries nothing. */
	if (iov == NULL || cnt <= 0 || cnt > IOV_MAX)
		return 0;
	return iov_total(iov, (size_t)cnt);
}

size_t fi__msg_len(const struct msghdr *msg)
{
	if (msg == NULL || msg->msg_iovlen > IOV_MAX)
		return 0;
	return fi__iov_len(msg->msg_iov, (long)msg->msg_iovlen);
}

/*
 * Applies a short clamp to an iovec array: returns the array to pass to the
 * kernel (the caller's, or the trimmed copy of IOV_MAX entries) and sets
 * *cnt to its count. An array the kernel would refuse (more than IOV_MAX
 * entries) goes unclamped, so that the caller gets the kernel's EINVAL.
 */
const struct iovec *fi__plan_clamp_iov(struct fi__plan *p,
					  const struct iovec *iov, size_t *cnt,
					  struct iovec *copy)
{
	size_t total, max;

	if (!(p->actions & ACT_BIT(FI_ACT_SHORT)) || iov == NULL ||
	    *cnt > IOV_MAX)
		return iov;
	total = iov_total(iov, *cnt);
	max = fi__plan_clamp(p, total);
	if (max == total)
		return iov;
	*cnt = iov_clamp(iov, *cnt, max, copy);
	return copy;
}
