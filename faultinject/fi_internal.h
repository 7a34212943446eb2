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

#endif
