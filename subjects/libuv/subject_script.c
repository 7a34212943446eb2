/*
 * subject_script.c: what of a script libuv-subject can run, and the script's
 * faults armed in the preloaded gate (subject.h). A script it cannot run
 * as written ends the subject before it connects, with the reason
 * (docs/subjects.md, "Unsupported operations").
 */
#include "subject.h"

#include "protocol.h"
#include "subject_pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A command to the preloaded gate (faultinject/preload.c): 0 or -1. */
int uvs_gate_command(const char *text)
{
	ssize_t n;

	if (!getenv("WIRECHECK_SHM_FD"))
		return strcmp(text, "disarm") == 0 ? 0 : -1;
	n = write(WC_FD_SHM, text, strlen(text));
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* The first op or handler event of the blocks that this subject does not
 * perform, or NULL: cork and uncork (libuv has none), and the HTTP and
 * WebSocket ops and events, which belong to the reference stack's layers. */
static const char *unsupported_in(const struct sr_script *sc, const struct sr_block *b,
				  size_t n, int *is_cork)
{
	for (size_t i = 0; i < n; i++) {
		if (b != sc->tasks && b[i].event > SR_EV_END_CB)
			return sr_ev_names[b[i].event];
		for (size_t k = 0; k < b[i].nops; k++) {
			enum sr_op_kind kind = b[i].ops[k].kind;

			*is_cork = kind == SR_OP_CORK || kind == SR_OP_UNCORK;
			if (*is_cork || kind >= SR_OP_RES_WRITE)
				return sr_op_names[kind];
		}
	}
	return NULL;
}

/* An operation libuv has no equivalent for: the run stops before it
 * connects, and says why (docs/subjects.md, "Unsupported operations"). */
void uvs_refuse_unsupported(const struct sr_script *sc)
{
	const char *what;
	int cork = 0;

	if (sc->websocket)
		sp_fatal("unsupported websocket: WebSocket framing (websocket yes) is a layer "
		      "of the reference stack (its own code above the socket); the libuv "
		      "subject drives libuv streams only");
	if (sc->http)
		sp_fatal("unsupported http: HTTP/1.1 serving (http yes) is a layer of the "
		      "reference stack (its own code above the socket); the libuv subject "
		      "drives libuv streams only");
	what = unsupported_in(sc, sc->tasks, sc->ntasks, &cork);
	if (!what)
		what = unsupported_in(sc, sc->handlers, sc->nhandlers, &cork);
	if (what && cork)
		sp_fatal("unsupported %s: libuv streams have no cork (uv_write sends at "
		      "once; TCP_CORK is not node's user-space cork)", what);
	if (what)
		sp_fatal("unsupported %s: an operation this subject does not perform yet "
		      "(docs/subjects.md)", what);
}

/* A script whose every fault is on a call libuv never makes (it reads with
 * read(2) and writes with write(2)/writev(2)) would run fault-free and wait
 * for an error that cannot come: declared unsupported, with the reason. */
void uvs_refuse_unreached_faults(const struct sr_script *sc)
{
	const unsigned unreached = FI_MASK(FI_SEND) | FI_MASK(FI_SENDTO) |
				   FI_MASK(FI_SENDMSG) | FI_MASK(FI_RECV);
	char targets[128] = "";
	size_t off = 0;

	for (size_t i = 0; i < sc->nfaults; i++) {
		if (sc->faults[i].sys_mask & ~unreached)
			return;
		off += (size_t)snprintf(targets + off, sizeof(targets) - off, "%s%.*s",
					i ? "," : "", (int)sizeof(sc->faults[i].target),
					sc->faults[i].target);
		if (off >= sizeof(targets))
			off = sizeof(targets) - 1;
	}
	if (sc->nfaults > 0)
		sp_fatal("unsupported fault %s: libuv never calls send(2), sendto(2), "
		      "sendmsg(2) or recv(2) (it reads with read(2), writes with "
		      "write(2)/writev(2)), so the scenario would run without its faults",
		      targets);
}

/* Arms the script's faults in the preloaded gate, each in its canonical
 * spec (faultinject/fi.h, fi_rule_format). */
void uvs_arm_faults(const struct sr_script *sc)
{
	for (size_t i = 0; i < sc->nfaults; i++) {
		char spec[256], cmd[300];

		(void)fi_rule_format(&sc->faults[i], spec, sizeof(spec));
		snprintf(cmd, sizeof(cmd), "arm %s", spec);
		if (uvs_gate_command(cmd) < 0)
			sp_fatal("cannot arm '%s' (is the gate preloaded? "
			      "wirecheck run --subject libuv sets it)", spec);
	}
}
