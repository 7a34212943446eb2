/*
 * peer.h: the harness's built-in peer, the other end of every connection
 * of the subject (docs/ARCHITECTURE.md, "A run").
 *
 * The peer listens when the subject is the client and connects when the
 * subject is the server. It reads either continuously or only at the
 * points the subject announces (a "sync" line), and then exactly the bytes
 * the subject says the kernel took, so that what it holds never depends on
 * timing. It sends, shuts down and resets at points, and acts on the end
 * of the streams (`peer on-eof`) once the subject's script is over. Its
 * part of the trace is what it received on each connection.
 *
 * With `peer exec`, a real program is the peer instead (peer_exec.h):
 * these functions then start it, tell the subject where it listens, and
 * feed it the poll() results; it has no actions at points.
 *
 * The peer owns its sockets and its buffers; it does not know the subject's
 * pipes: the run (run.c) feeds it the subject's points and its poll()
 * results. Every wait is bounded by the run's deadline.
 */
#ifndef WIRECHECK_PEER_H
#define WIRECHECK_PEER_H

#include "peer_exec.h"
#include "scenario.h"
#include "stream.h"

#include <jansson.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>

/* One connection of the peer. */
struct wc_peer_conn {
	int fd;               /* -1 before accept and after close */
	struct wc_stream in;  /* what the peer received */
	int eof;
	int reset;            /* the subject reset the connection */
	json_t *reads;        /* bytes read at each read point */
	/* handoff: the subject's answer to the Upgrade request, gathered up
	 * to its blank line and kept out of the stream when it is a 101 */
	int in_answer;
	size_t answer_len;
	unsigned char answer[512];
};

struct wc_peer {
	const struct scenario *sc;
	int64_t deadline_ms;
	char *err;
	size_t errlen;
	int listen_fd;        /* role client: the peer's listener, else -1 */
	char path[100];       /* transport unix: the peer's or the subject's
				* socket path (unlinked at the end), or "" */
	struct wc_peer_conn *conns; /* [sc->connections] */
	int accepted;         /* connections made (accepted or connected) */
	int continuous;       /* the peer reads whenever bytes arrive */
	int over;             /* the subject's script is over, or it exited */
	unsigned char *bytes_done; /* [npeer * connections]: "at bytes" acted */
	int eof_acted;        /* the peer acted on the end of every stream */
	unsigned char *readbuf;
	int port;             /* peer exec, subject the client: the program's */
	struct wc_prog prog;  /* peer exec: the program */
	int handoff;          /* WC_HANDOFF_*: the peer connects, and opens
			       * each connection with an HTTP request */
	const char *point;    /* the sync point being acted on, or NULL */
	char waiting[192];    /* what the peer waited for when the deadline
			       * passed at a point (wc_peer_waiting), or "" */
};

/*
 * How the subject gets its connections (docs/subjects.md, "Handed-off
 * sockets"). WC_HANDOFF_UPGRADE: whatever the scenario's role, the subject
 * listens with an HTTP server and runs the scenario on the socket that
 * server hands to its 'upgrade' listener; the peer connects, sends an
 * Upgrade request first, and leaves the subject's 101 answer out of what
 * it received (an answer other than a 101 stays in the stream).
 */
#define WC_HANDOFF_NONE 0
#define WC_HANDOFF_UPGRADE 1

/*
 * Sets the peer up for one run of sc, its connections made as handoff
 * (WC_HANDOFF_*) says: its buffers, and when the subject is the client
 * (and handoff is WC_HANDOFF_NONE) its listening socket (TCP on
 * 127.0.0.1:0, or tmpdir/peer.sock);
 * with peer exec, the program, started and waited for until it listens.
 * The program that does not listen by the deadline is reported in the
 * trace (the subject's connect then fails).
 * deadline_ms (wc_now_ms's clock) bounds every wait; err receives messages.
 * Returns 0, or -1 with a message in err; pe is then still to be freed
 * with wc_peer_free (as it is after a success).
 */
int wc_peer_init(struct wc_peer *pe, const struct scenario *sc, int handoff,
		 const char *tmpdir, int64_t deadline_ms, char *err,
		 size_t errlen);

/* Closes what the peer holds and frees it; pe may be zeroed or half set
 * up by a failed wc_peer_init. */
void wc_peer_free(struct wc_peer *pe);

/*
 * The script line that tells the subject where the peer is ("connect tcp
 * 127.0.0.1 PORT", "connect unix PATH") or where to listen ("listen tcp
 * 127.0.0.1 0", "listen unix PATH"), without a newline, into line. With a
 * handoff, a line "handoff upgrade connect|accept" (the event the
 * scenario's role reports) comes before the listen line.
 */
void wc_peer_address_line(const struct wc_peer *pe, char *line, size_t len);

/*
 * The subject listens (role server) on port (ignored for unix): connects
 * every connection of the peer. Returns 0; -2 with a message when nothing
 * listens there (ECONNREFUSED, or ENOENT for a unix path: the subject's
 * `listening` line was wrong); -1 with a message for any other failure.
 */
int wc_peer_connect(struct wc_peer *pe, int port);

/*
 * The subject reached point ("start", "task:N", "checkpoint:N", "done")
 * with written[i] bytes taken by the kernel on connection i: the peer
 * accepts what it has not yet (role client), then does the scenario's
 * actions at that point. At "done" the script is over: the peer reads
 * continuously from then on. Returns 0, or 1 when the deadline passed
 * before every connection was accepted (nothing was done: the run then
 * times out).
 */
int wc_peer_at_point(struct wc_peer *pe, const char *point,
		     const uint64_t *written);

/* The subject exited: nobody will ask for reads at points any more; a
 * program peer gets its stop=SIG. */
void wc_peer_subject_exited(struct wc_peer *pe);

/*
 * What the peer was waiting for when the deadline passed inside a sync
 * point ("at checkpoint:1 the peer waited for byte 999999 of connection 0,
 * which the subject's sync line said it had written, and had 5"), or ""
 * when the deadline did not pass there. For the run's stderr: it depends on
 * timing, so no trace holds it.
 */
const char *wc_peer_waiting(const struct wc_peer *pe);

/* How many pollfd entries wc_peer_pollfds writes. */
int wc_peer_npollfds(const struct wc_peer *pe);

/* The fds the peer waits on, into pfd (wc_peer_npollfds entries): the
 * listener, then each connection (fd -1 where there is nothing to wait
 * for); or a program's pipes and pidfd. Returns how many it wrote. */
int wc_peer_pollfds(const struct wc_peer *pe, struct pollfd *pfd);

/* Acts on what poll() said of the entries wc_peer_pollfds wrote: accepts,
 * reads, and acts on the end of the streams. Returns 0, or -1 with a
 * message when accept failed. */
int wc_peer_on_poll(struct wc_peer *pe, const struct pollfd *pfd);

/* Each round of the poll loop, whatever poll() said: reaps a program
 * that has no pidfd. */
void wc_peer_tick(struct wc_peer *pe);

/* 1 when the loop must wake up every few milliseconds for wc_peer_tick. */
int wc_peer_wants_tick(const struct wc_peer *pe);

/* At the deadline: reads what is there by then, without waiting; kills a
 * program peer. */
void wc_peer_take_rest(struct wc_peer *pe);

/* 1 when no connection has more to read (or none was ever made). */
int wc_peer_finished(const struct wc_peer *pe);

/* The trace's "peer": an object for one connection, an array for several.
 * A new reference; call it once, at the end of the run. */
json_t *wc_peer_json(struct wc_peer *pe);

#endif
