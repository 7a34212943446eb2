/*
 * peer_exec.h: a real program as the peer (`peer exec`, docs/scenario-
 * language.md).
 *
 * The program runs in a process group of its own, without the gate (its
 * syscalls are not the subject's and are not counted), with stdin from
 * /dev/null and its stdout and stderr on pipes to the harness. What it
 * printed on stdout is the peer's stream in the trace (what a real client
 * decoded); its exit and the tail of its stderr are beside it. peer.c
 * drives it: it starts the program, waits for it to listen when the
 * subject is the client, and feeds it the run's poll() results.
 */
#ifndef WIRECHECK_PEER_EXEC_H
#define WIRECHECK_PEER_EXEC_H

#include "scenario.h"
#include "stream.h"

#include <jansson.h>
#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#define WC_PROG_ERR_TAIL 2048 /* stderr bytes kept: the last ones */
#define WC_PROG_NPOLL 3       /* stdout, stderr, pidfd */

struct wc_prog {
	const struct sc_peer_exec *spec;
	pid_t pid;            /* 0 before the start */
	int pid_fd;           /* -1 without pidfd_open */
	int out_fd, err_fd;   /* -1 at EOF */
	int exited, status;
	int timed_out;        /* killed at the run's deadline */
	int stopped;          /* sent spec->stop_sig after the subject exited */
	int listening;        /* subject the client: the program listened */
	struct wc_stream out; /* its stdout */
	char err_tail[WC_PROG_ERR_TAIL];
	size_t err_len;       /* bytes of stderr in all */
};

/*
 * Starts spec's program with its {name}s substituted for address a.
 * Returns 0, or -1 with a message in err (the substitution, or fork);
 * a program that cannot be executed exits 127 with the reason on its
 * stderr, which the trace shows. pg is then to be freed with
 * wc_prog_free, as after a success.
 */
int wc_prog_start(struct wc_prog *pg, const struct sc_peer_exec *spec,
		  const struct sc_exec_address *a, char *err, size_t errlen);

/*
 * Makes pg a program of spec that has not started: no process, no fds, so
 * that wc_prog_subject_exited, wc_prog_json and wc_prog_free are safe on it
 * (a subject may exit before its program starts: a foreign subject that
 * refuses the script). wc_prog_start does it too.
 */
void wc_prog_init(struct wc_prog *pg, const struct sc_peer_exec *spec);

/*
 * Waits until a socket of the program listens on a's port (tcp, read from
 * /proc/net/tcp and tcp6) or path (unix, /proc/net/unix), until the
 * program exits, or until deadline_ms (wc_now_ms's clock). Sets
 * pg->listening. The subject is started after it, so that its connect
 * finds the program ready.
 */
void wc_prog_wait_listening(struct wc_prog *pg, const struct sc_exec_address *a,
			    int64_t deadline_ms);

/* The fds to poll (WC_PROG_NPOLL entries, fd -1 when done with). */
void wc_prog_pollfds(const struct wc_prog *pg, struct pollfd *pfd);

/* Reads the pipes poll() found ready and reaps the program when it has
 * exited (also without pidfd: call it each round). */
void wc_prog_on_poll(struct wc_prog *pg, const struct pollfd *pfd);

/* 1 when the program needs a short poll timeout: it runs and no pidfd
 * tells when it exits. */
int wc_prog_wants_tick(const struct wc_prog *pg);

/* The subject has exited: sends stop=SIG to the program's group, if the
 * scenario gave one and the program still runs. */
void wc_prog_subject_exited(struct wc_prog *pg);

/* The deadline passed: SIGKILL to the program's group, then what the
 * pipes hold without waiting for more. */
void wc_prog_kill(struct wc_prog *pg);

/* 1 when the program has exited and both pipes are at EOF. */
int wc_prog_finished(const struct wc_prog *pg);

/* The trace's peer for a program: stdout as the peer's stream (bytes,
 * sha256, hex and text when short), and "program": argv as written, exit,
 * timed_out, stopped, stderr's tail. A new reference. */
json_t *wc_prog_json(struct wc_prog *pg);

/* Kills and reaps a program still running, closes and frees. */
void wc_prog_free(struct wc_prog *pg);

#endif
