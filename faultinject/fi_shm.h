/*
 * fi_shm.h: the gate's counters in a shared mapping, the layout a subject's
 * gate writes and the harness reads (docs/subject-protocol.md, "The
 * counters"). The mapping outlives the subject, so its syscall counts reach
 * the trace also after a crash. Both gates write it: the one linked into
 * refstack-subject and the preload library in a foreign subject.
 */
#ifndef WIRECHECK_FI_SHM_H
#define WIRECHECK_FI_SHM_H

#include "fi.h"

#include <stdint.h>

#define FI_SHM_MAGIC 0x7763686bu /* "wchk" */
/* The layout's version: a reader takes counters only of its own version,
 * so a change to struct fi_shm or struct fi_counters raises it. */
#define FI_SHM_VERSION 1

struct fi_shm {
	uint32_t magic;
	uint32_t version;
	struct fi_counters counters;
};

/*
 * Maps fd (a memfd of at least sizeof(struct fi_shm) bytes) shared, writes
 * FI_SHM_MAGIC and FI_SHM_VERSION, and makes its counters the ones the gate
 * counts in (fi_counters_attach). Returns 0, or -errno when fd cannot be
 * mapped: the gate then keeps counting in its own counters.
 */
int fi_shm_attach(int fd);

#endif
