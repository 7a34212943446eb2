/*
 * floor.h: the floor sender of sender_cpu and sender_instr, the least any
 * stack can do to send the same bytes: send(MSG_NOSIGNAL) of what is left
 * on a non-blocking socket, epoll_wait(EPOLLOUT) on EAGAIN, then
 * shutdown(SHUT_WR). The senders of the reference stack are judged against
 * it. The loop is FLOOR_SEND (a statement, for the reason given there) and
 * floor_send() (the same loop as a function); floor.c has the rest.
 */
#ifndef WIRECHECK_BENCH_FLOOR_H
#define WIRECHECK_BENCH_FLOOR_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "fi.h"

/* What the loop counted; the caller zeroes it before the run. */
struct floor_counts {
	uint64_t sends;  /* send calls, EAGAIN included */
	uint64_t eagain; /* of which the kernel refused */
	uint64_t waits;  /* epoll_wait calls */
};

/* How the loop sends. */
struct floor_io {
	/* Nonzero: every call through the fault gate (fi_send, fi_epoll_wait,
	 * fi_shutdown), so that the floor pays the gate's cost per call and a
	 * gate rule clamps it as it clamps the stack. Zero: the syscalls
	 * themselves. */
	int gate;
	/* The most bytes one send asks for, or 0 for all that is left. */
	size_t clamp;
	/* Called on every EAGAIN, before the wait, with the bytes the kernel
	 * has taken so far (sender_instr's peer reads them then); NULL for
	 * none. */
	void (*on_eagain)(uint64_t off, struct floor_counts *c, void *arg);
	void *arg;
};

/* A connected socket of the floor and its epoll set. */
struct floor_sock {
	int fd;                /* non-blocking */
	int ep;                /* epoll, fd registered for EPOLLOUT */
	struct epoll_event ev; /* the registration, then each wait's event */
};

/*
 * Connects a blocking stream socket to the unix socket at unix_path (or,
 * when it is NULL, to 127.0.0.1:port), then makes it non-blocking and
 * registers it for EPOLLOUT in a new epoll set. Level-triggered is right:
 * the loop waits only after EAGAIN, when the socket is not writable. No
 * call goes through the gate. Dies (bc_die) on failure.
 */
struct floor_sock floor_open(const char *unix_path, int port);

/* Closes the socket and its epoll set. Dies (bc_die) on failure. */
void floor_close(struct floor_sock *s);

/* send and epoll_wait through the gate or not (io->gate). */
static inline ssize_t floor_send1(int gate, int fd, const char *p, size_t n)
{
	if (gate)
		return fi_send(fd, p, n, MSG_NOSIGNAL);
	return send(fd, p, n, MSG_NOSIGNAL);
}

static inline int floor_wait1(int gate, int ep, struct epoll_event *ev)
{
	if (gate)
		return fi_epoll_wait(ep, ev, 1, -1);
	return epoll_wait(ep, ev, 1, -1);
}

/*
 * FLOOR_SEND(io, fd, ep, ev, buf, len, c, rc): sends the len bytes of buf
 * on the non-blocking socket fd, waiting in ep (fd registered for EPOLLOUT;
 * the event lands in *ev) after every EAGAIN, then shuts fd down for
 * writing. A send or wait interrupted by a signal is made again; an error
 * or hang-up wakes the wait too, and the next send reports it. Adds to *c
 * (struct floor_counts *) as it goes; io is a const struct floor_io *. Sets
 * the int lvalue rc to 0 once every byte was taken and the shutdown made,
 * else to the errno value of the call that failed (EIO for a send that took
 * nothing or a wait that returned no event). Each argument is evaluated once
 * per use: pass plain variables.
 *
 * A statement, not a function, on purpose: sender_instr counts the loop's
 * instructions with callgrind, so its figures hold only while the compiled
 * loop does not change. GCC estimates the branch probabilities of a
 * function before it inlines it: in an inline function the error exits are
 * returns, not the caller's bc_die, so they are laid out as likely paths
 * and the loop compiles differently (one instruction fewer per gated
 * epoll_wait, measured); out of line, a call and a fresh register
 * allocation change it more. Expanded in place, the loop is compiled with
 * the caller's knowledge that an error ends the run. floor_send() in
 * floor.c is the same loop as a function, for callers that do not count
 * instructions.
 */
#define FLOOR_SEND(io, fd, ep, ev, buf, len, c, rc)                          \
	do {                                                                  \
		int floor_gate_ = (io)->gate;                                 \
		size_t floor_clamp_ = (io)->clamp;                            \
		size_t floor_off_ = 0;                                        \
                                                                              \
		(rc) = 0;                                                     \
		while (floor_off_ < (len)) {                                  \
			size_t floor_want_ = (len) - floor_off_;              \
			ssize_t floor_n_;                                     \
                                                                              \
			if (floor_clamp_ > 0 && floor_want_ > floor_clamp_)   \
				floor_want_ = floor_clamp_;                   \
			floor_n_ = floor_send1(floor_gate_, (fd),             \
					       (buf) + floor_off_,            \
					       floor_want_);                  \
			(c)->sends++;                                         \
			if (floor_n_ > 0) {                                   \
				floor_off_ += (size_t)floor_n_;               \
				continue;                                     \
			}                                                     \
			/* A send of at least one byte never returns 0. */    \
			if (floor_n_ == 0 ||                                  \
			    (errno != EAGAIN && errno != EWOULDBLOCK &&       \
			     errno != EINTR)) {                               \
				(rc) = floor_n_ == 0 ? EIO : errno;           \
				break;                                        \
			}                                                     \
			if (errno == EINTR)                                   \
				continue;                                     \
			(c)->eagain++;                                        \
			if ((io)->on_eagain != NULL)                          \
				(io)->on_eagain(floor_off_, (c), (io)->arg);  \
			for (;;) {                                            \
				int floor_k_ = floor_wait1(floor_gate_, (ep), \
							   (ev));             \
                                                                              \
				(c)->waits++;                                 \
				if (floor_k_ > 0)                             \
					break;                                \
				if (floor_k_ < 0 && errno == EINTR)           \
					continue;                             \
				(rc) = floor_k_ < 0 ? errno : EIO;            \
				break;                                        \
			}                                                     \
			if ((rc) != 0)                                        \
				break;                                        \
		}                                                             \
		if ((rc) == 0) {                                              \
			if ((floor_gate_ ? fi_shutdown((fd), SHUT_WR)         \
					 : shutdown((fd), SHUT_WR)) != 0)     \
				(rc) = errno;                                 \
		}                                                             \
	} while (0)

/* FLOOR_SEND as a function: returns rc. */
int floor_send(const struct floor_io *io, int fd, int ep,
	       struct epoll_event *ev, const char *buf, size_t len,
	       struct floor_counts *c);

#endif /* WIRECHECK_BENCH_FLOOR_H */
