/*
 * fi_internal.h: what the gate (fi.c) and the spec parser (fi_spec.c) share.
 *
 * A rule names a target: one syscall kind, or a group of kinds. Targets are
 * numbered so that the first FI_SYS_COUNT of them are the kinds themselves
 * (target FI_SEND is "send"), followed by the groups. Both files take every
 * name from the one table in fi_spec.c, so a failpoint name can never differ
 * between the rule that enables it and the call that asks for it.
 */
#ifndef WIRECHECK_FI_INTERNAL_H
#define WIRECHECK_FI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fi.h"

enum fi__target {
	/* 0 .. FI_SYS_COUNT - 1: one kind each, same numbers as enum fi_sys. */
	FI__TARGET_WRITE = FI_SYS_COUNT, /* group "write": every writing call */
	FI__TARGET_READ,                 /* group "read": recv and read */
	FI__TARGET_ALL,                  /* group "all": every kind */
	FI__TARGET_COUNT
};

/* Every kind, as a mask. */
#define FI__ALL_KINDS ((1u << FI_SYS_COUNT) - 1u)

/* The largest errno a rule may carry (the kernel's MAX_ERRNO). */
#define FI__ERRNO_MAX 4095

/* Returns the target called name[0, len), or -1 when there is none. */
int fi__target_find(const char *name, size_t len);
/* Returns a target's name ("send", "syswrite", "write"), or "?" if unknown. */
const char *fi__target_name(int target);
/* Returns the kinds a target covers, or 0 when the target is unknown. */
unsigned fi__target_mask(int target);
/* Returns "wirecheck/<target>/<action>", or NULL when either is unknown. */
const char *fi__failpoint_name(int target, enum fi_action action);

/* Returns an action's name ("short"), or "?" when out of range. */
const char *fi__action_name(enum fi_action action);
/* Returns the kinds an action can change: short only those with a length. */
unsigned fi__action_kinds(enum fi_action action);
/* Returns 1 when param is a usable parameter of the action, else 0. */
int fi__param_valid(enum fi_action action, long param);

/* ------------------------------------------------------------------------ */
/* The slow path's steps, shared with fi_forms.c (the preload's forms).     */

#define FI__ACT_BIT(a) (1u << (a))

/* What the slow path will do to one call. */
struct fi__plan {
	unsigned actions;           /* bit per enum fi_action */
	long param[FI_ACT_COUNT];
	uint8_t rule[FI_ACT_COUNT]; /* the rule of each action, or 255 (none) */
	int changed;                /* an action changed the call */
	int clamped;                /* the clamp cut the call */
	enum fi_sys kind;
	int fd;
	size_t len;                 /* the bytes the call asks to move */
	int no_bytes;               /* the result is no byte count (sendmmsg) */
};

/* Counts a call of the slow path: per fd (and since the fd was opened),
 * or on the fds without per-fd counters. */
void fi__count_fd(enum fi_sys kind, int fd) FI__HIDDEN;

/* fd is a new connection (accepted, or connecting): it gets the next
 * connection number (struct fi_rule's conn). */
void fi__conn_open(int fd) FI__HIDDEN;

/*
 * Decides a call of len bytes (what it asks to move: 0 for the kinds
 * without bytes; rules with byte= match on it) and applies what comes
 * before it: the signal, then errno or zero, which replace the call. Fills
 * *p. While the signal runs, the call (counted by fi__count_fd before) and
 * the fired counts of its other rules are taken back, so that a signal
 * that ends the process leaves them as the kernel saw them. Returns 1 with
 * *ret set (the gate's result) when the kernel must not be called, else 0:
 * the caller then applies the clamp (fi__plan_clamp*), makes the call,
 * and passes its result to fi__gate_end.
 */
int fi__gate_begin(enum fi_sys kind, int fd, size_t len, struct fi__plan *p,
		   ssize_t *ret) FI__HIDDEN;

/* The bytes an iovec array asks to move: 0 when the kernel would refuse
 * it (NULL, a count below 1 or past IOV_MAX), whose entries are not read;
 * and those of a msghdr's array (0 for NULL). */
size_t fi__iov_len(const struct iovec *iov, long cnt) FI__HIDDEN;
size_t fi__msg_len(const struct msghdr *msg) FI__HIDDEN;

/* Ends a call the kernel made (r is its result, errno still its own):
 * logs and counts what the plan changed, counts the bytes, and returns
 * the gate's result (the value, or -errno). */
ssize_t fi__gate_end(const struct fi__plan *p, ssize_t r) FI__HIDDEN;

/* Returns len, or the clamp when the plan has a smaller one (and records
 * that it cut the call). */
size_t fi__plan_clamp(struct fi__plan *p, size_t len) FI__HIDDEN;

/*
 * Applies a clamp to an iovec array: returns the array to pass to the
 * kernel (iov, or copy, which holds at least IOV_MAX entries, trimmed to
 * the clamp) and sets *cnt to its count. iov is not changed.
 */
const struct iovec *fi__plan_clamp_iov(struct fi__plan *p,
				       const struct iovec *iov, size_t *cnt,
				       struct iovec *copy) FI__HIDDEN;

#endif
