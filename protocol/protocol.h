/*
 * protocol.h: what the harness and a subject share (docs/subject-protocol.md).
 *
 * The harness writes the script to the subject's control pipe, one line per
 * item, ending with "run"; then it answers "go" to each "sync" and "kill"
 * line the subject writes on its event pipe. The subject's gate counters live
 * in a shared mapping so that they survive a crash (fi_shm.h, the gate's
 * own ABI, since the preload library writes it too).
 */
#ifndef WIRECHECK_PROTOCOL_H
#define WIRECHECK_PROTOCOL_H

#include "fi_shm.h"

#include <stdint.h>

/* The fds a subject finds open when it starts. */
#define WC_FD_CTL 3     /* harness -> subject: the script, then "go" lines */
#define WC_FD_EVENTS 4  /* subject -> harness: events, sync and kill lines */
#define WC_FD_SHM 5     /* a memfd holding struct fi_shm */

/*
 * The generated stream: byte x of a connection's stream (x counted from 0
 * over every byte written on it) when a write gives a count and no fill.
 * Neither periodic at any small period nor constant, so that lost, doubled or
 * reordered bytes change the stream's digest.
 */
static inline unsigned char wc_pattern(uint64_t x)
{
	return (unsigned char)(0x21 + (((uint32_t)x * 2654435761u) >> 16) % 94);
}

#endif
