/*
 * run.c: one run of a scenario: the poll loop, the trace, set-up and
 * tear-down (the event pipe is read in run_events.c, the subject started
 * in run_spawn.c).
 *
 * The harness is single-threaded: one poll() loop over the subject's event
 * pipe, its pidfd, and the peer's listener and connections (peer.c). Time
 * is used for one thing only, the run's deadline: what the peer reads at a
 * point is decided by the subject's own count of bytes the kernel took
 * (the "sync" line), never by how long the peer waited.
 */
#include "run_int.h"

#include "event_line.h"
#include "fi.h"
#include "peer.h"
#include "proc.h"
#include "protocol.h"
#include "script.h"
#include "trace.h"
#include "wcutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define VALGRIND_SLOWDOWN 10  /* the timeout is multiplied by this */
#define PID_POLL_MS 20

/* ---- the main loop ------------------------------------------------------- */

/* Kills the subject, and under a wrapper (strace) what it runs. */
static void kill_subject(struct run *r)
{
	if (r->opts->strace)
		wc_proc_kill_tree(r->pid);
	else
		(void)kill(r->pid, SIGKILL);
}

static void on_timeout(struct run *r)
{
	r->timed_out = 1;
	/* Once reaped, the pid may belong to another process. */
	if (!r->exited)
		kill_subject(r);
	run__reap(r, 0);
	/* What the peer had by then, without waiting for more. */
	wc_peer_take_rest(&r->peer);
}

/* A line broke the protocol: the run ends here, as at the deadline, the
 * subject killed if it still runs. */
static void stop_on_protocol_error(struct run *r)
{
	free(r->script);
	r->script = NULL;
	if (!r->exited)
		kill_subject(r);
	run__reap(r, 0);
	r->ev_eof = 1;
	wc_peer_take_rest(&r->peer);
}

static int loop(struct run *r)
{
	struct pollfd *pfd = calloc(3 + (size_t)wc_peer_npollfds(&r->peer), sizeof(*pfd));

	if (!pfd)
		return run__fail(r, "out of memory");
	while (!(r->exited && r->ev_eof && wc_peer_finished(&r->peer))) {
		int k = 0, rc, left = wc_ms_left(r->deadline_ms);

		pfd[k++] = (struct pollfd){ .fd = r->ev_eof ? -1 : r->ev_fd, .events = POLLIN };
		pfd[k++] = (struct pollfd){ .fd = r->exited ? -1 : r->pid_fd, .events = POLLIN };
		pfd[k++] = (struct pollfd){ .fd = r->script ? r->ctl_fd : -1, .events = POLLOUT };
		k += wc_peer_pollfds(&r->peer, pfd + k);
		rc = poll(pfd, (nfds_t)k, ((r->pid_fd < 0 && !r->exited) || wc_peer_wants_tick(&r->peer)) &&
			  left > PID_POLL_MS ? PID_POLL_MS : left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (r->pid_fd < 0)
			run__reap(r, WNOHANG);
		wc_peer_tick(&r->peer);
		if (rc == 0 && wc_ms_left(r->deadline_ms) > 0)
			continue;
		if (rc < 0) {
			free(pfd);
			return run__fail(r, "poll: %s", strerror(errno));
		}
		if (rc == 0) {
			on_timeout(r);
			break;
		}
		if (pfd[0].revents && run__read_events(r) < 0) {
			free(pfd);
			return -1;
		}
		if (pfd[1].revents)
			run__reap(r, WNOHANG);
		if (r->exited && !r->ev_eof && run__drain_events(r) < 0) {
			free(pfd);
			return -1;
		}
		if (r->protocol_error) {
			stop_on_protocol_error(r);
			break;
		}
		if (pfd[2].revents)
			run__write_script(r);
		if (wc_peer_on_poll(&r->peer, pfd + 3) < 0) {
			free(pfd);
			return -1;
		}
	}
	free(pfd);
	return 0;
}

/*
 * Whether the subject's gate attached the counters' memfd (fd 5): the
 * reference subject maps it itself, the preload library (--subject-preload)
 * in its constructor; either writes FI_SHM_MAGIC. A stack run without the
 * preload leaves it as the harness made it, zeros, or with what it wrote
 * to fd 5 ("arm SPEC" lines meant for the preloaded gate). When the gate
 * did not attach, says so on stderr, with what fd 5 held, and returns 0.
 */
static int gate_attached(const struct run *r)
{
	const unsigned char *b = (const unsigned char *)r->shm;
	char held[16 * 4 + 1];
	size_t o = 0;

	if (r->shm->magic == FI_SHM_MAGIC && r->shm->version == FI_SHM_VERSION)
		return 1;
	for (size_t k = 0; k < 16 && b[k]; k++)
		o += (size_t)snprintf(held + o, sizeof(held) - o, b[k] >= 0x20 && b[k] < 0x7f
				      ? "%c" : "\\x%02x", b[k]);
	held[o] = '\0';
	fprintf(stderr, "wirecheck run: warning: the subject %s never attached the gate: its "
		"counters' memfd (fd 5) %s%s%s, so the trace has no syscalls and no fired calls%s. "
		"A stack not built against the gate runs with the gate preloaded: "
		"--subject-preload (docs/subjects.md, \"Faults and counters\")\n",
		r->opts->subject, o ? "holds other bytes (`" : "is still all zeros",
		o ? held : "", o ? "...`: what the subject wrote to fd 5, as `arm SPEC` lines "
				 "for a preloaded gate)" : "",
		r->sc->nfaults ? ", and none of the scenario's faults was applied" : "");
	return 0;
}

/* exit.error: a protocol error (with the subject's own fatal line, when
 * it wrote one), else the fatal line, else, when the gate never attached
 * and the scenario has fault rules, that they were not applied. NULL when
 * none; -1 and r->err without memory. */
static int exit_error(struct run *r, int attached, char **error)
{
	size_t n;

	*error = NULL;
	if (!r->protocol_error && !r->subject_error && !attached && r->sc->nfaults) {
		n = 256;
		if (!(*error = malloc(n)))
			return run__fail(r, "out of memory");
		snprintf(*error, n, "gate: the subject never attached the gate (fd 5): the "
			 "scenario's %zu fault rule%s not applied (a stack not built against "
			 "the gate runs with --subject-preload)", r->sc->nfaults,
			 r->sc->nfaults == 1 ? " was" : "s were");
		return 0;
	}
	if (!r->protocol_error) {
		*error = r->subject_error ? strdup(r->subject_error) : NULL;
		return r->subject_error && !*error ? run__fail(r, "out of memory") : 0;
	}
	n = strlen(r->protocol_error) + (r->subject_error ? strlen(r->subject_error) : 0) + 32;
	if (!(*error = malloc(n)))
		return run__fail(r, "out of memory");
	if (r->subject_error)
		snprintf(*error, n, "%s; its fatal line: %s", r->protocol_error, r->subject_error);
	else
		snprintf(*error, n, "%s", r->protocol_error);
	return 0;
}

static json_t *build_trace(struct run *r)
{
	struct wc_outcome o = { .exited = r->exited, .status = r->status,
				.timed_out = r->timed_out,
				.valgrind = r->opts->valgrind };
	static const struct fi_counters none;
	int attached = gate_attached(r);
	char *error;
	json_t *t;

	if (exit_error(r, attached, &error) < 0)
		return NULL;
	o.error = error;
	/* Counters the gate never wrote are not the subject's: none are
	 * reported (what fd 5 held may be any bytes). */
	t = wc_trace_build(r->sc, &o, wc_peer_json(&r->peer), r->events,
			   r->queue, attached ? &r->shm->counters : &none);
	free(error);
	if (t && !attached) {
		(void)json_object_del(t, "syscalls");
		(void)json_object_del(t, "syscalls_timing");
		(void)json_object_del(t, "fired");
	}
	return t;
}

/* ---- set-up and tear-down ------------------------------------------------ */

static int setup(struct run *r)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(r->tmpdir, sizeof(r->tmpdir), "%s/wirecheck.XXXXXX",
		 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
	if (!mkdtemp(r->tmpdir)) {
		run__fail(r, "mkdtemp %s: %s", r->tmpdir, strerror(errno));
		r->tmpdir[0] = '\0';
		return -1;
	}
	r->events = json_array();
	r->written = calloc((size_t)r->sc->connections, sizeof(*r->written));
	if (!r->events || !r->written)
		return run__fail(r, "out of memory");
	return wc_peer_init(&r->peer, r->sc, r->opts->handoff, r->tmpdir, r->deadline_ms,
			    r->err, r->errlen);
}

static void dump_valgrind_log(const struct run *r)
{
	char path[128], buf[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/valgrind.log", r->tmpdir);
	f = fopen(path, "r");
	if (!f)
		return;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		(void)fwrite(buf, 1, n, stderr);
	fclose(f);
	(void)unlink(path);
}

static void teardown(struct run *r)
{
	if (r->pid > 0 && !r->exited) {
		kill_subject(r);
		run__reap(r, 0);
	}
	if (r->opts->valgrind)
		dump_valgrind_log(r);
	wc_peer_free(&r->peer);
	free(r->script);
	free(r->subject_error);
	free(r->protocol_error);
	free(r->written);
	json_decref(r->events);
	json_decref(r->queue);
	if (r->shm)
		munmap(r->shm, sizeof(struct fi_shm));
	if (r->ctl_fd >= 0)
		close(r->ctl_fd);
	if (r->ev_fd >= 0)
		close(r->ev_fd);
	if (r->pid_fd >= 0)
		close(r->pid_fd);
	if (r->tmpdir[0])
		(void)rmdir(r->tmpdir);
}

int wc_run(const struct scenario *sc, const struct run_options *opts,
	   json_t **trace, char *err, size_t errlen)
{
	struct run r = { .sc = sc, .opts = opts, .err = err, .errlen = errlen,
			 .peer = { .listen_fd = -1 },
			 .ctl_fd = -1, .ev_fd = -1, .pid_fd = -1 };
	int64_t timeout = sc->timeout_ms;
	int rc;

	if (opts->valgrind)
		timeout *= VALGRIND_SLOWDOWN;
	r.deadline_ms = (opts->started_ms ? opts->started_ms : wc_now_ms()) + timeout;
	/* A subject that dies must not take the harness with it through a
	 * write to its pipe. */
	signal(SIGPIPE, SIG_IGN);
	rc = setup(&r);
	if (rc == 0)
		rc = run__spawn(&r);
	if (rc == 0)
		rc = loop(&r);
	if (rc == 0)
		rc = run__events_end(&r);
	if (rc == 0 && !(*trace = build_trace(&r)))
		rc = run__fail(&r, "out of memory");
	/* A program that does not speak the subject protocol (/bin/true, a
	 * server of one's own given as --subject) ends with no event and no
	 * error: its trace, and a golden made from it, would hold nothing. */
	if (rc == 0 && r.lines == 0 && r.exited && !r.timed_out)
		fprintf(stderr, "wirecheck run: warning: the subject %s wrote nothing on its event "
			"pipe (fd 4) before it ended: does it speak the subject protocol? "
			"(docs/subject-protocol.md; a program of one's own runs under "
			"`wirecheck exec`)\n", opts->subject);
	/* The peer read for bytes a sync line announced and never got: the
	 * run's timeout alone would not say where it stood. */
	if (rc == 0 && r.timed_out && wc_peer_waiting(&r.peer)[0] != '\0')
		fprintf(stderr, "wirecheck run: the run timed out %s (docs/subject-protocol.md, "
			"sync)\n", wc_peer_waiting(&r.peer));
	teardown(&r);
	return rc;
}
