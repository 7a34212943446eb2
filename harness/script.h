/*
 * script.h: a scenario as the script the harness writes to a subject's
 * control pipe (docs/subject-protocol.md, "The script"); the format of its
 * lines is protocol/script_write.h's.
 */
#ifndef WIRECHECK_SCRIPT_H
#define WIRECHECK_SCRIPT_H

#include "scenario.h"

/*
 * The whole script of sc, from its variants to "run\n", with address (a
 * "connect ..." or "listen ..." line without its newline) where the
 * subject finds its peer. Returns a new string (the caller frees it), or
 * NULL when out of memory.
 */
char *wc_script_build(const struct scenario *sc, const char *address);

#endif
