/*
 * socket_internal.h: what the files of the stream socket share and nothing
 * else sees: the socket's struct, and the helpers of socket.c that the
 * other files of the socket call.
 *
 * socket.c is the write path (with closing, the poll interest and the
 * dispatch of epoll events); socket_read.c the read side and the order of
 * the peer's FIN; socket_try.c the optional writes of chunked responses;
 * socket_open.c connect, accept and the free. They were one file until it
 * passed 1,200 lines.
 */
#ifndef WIRECHECK_SOCKET_INTERNAL_H
#define WIRECHECK_SOCKET_INTERNAL_H

#include "rs_internal.h"

/* A write with a callback, waiting until the kernel has its bytes. */
struct rs__wreq {
	uint64_t end;   /* the write's last byte, in seq */
	rs_write_cb cb;
	void *arg;
};

struct rs_socket {
	struct rs__handle handle;
	rs_loop *loop;
	int fd;
	struct rs_socket_events ev;
	void *arg;
	struct rs_socket_options opts;
	struct rs_queue queue;  /* accepted, not yet taken by the kernel */
	struct rs_queue cork;   /* collected while corked */
	struct rs_queue batch;  /* held until the end of the task */
	uint64_t write_task;    /* the loop task of the last write, or 0 */
	struct rs__batch_link batch_link;
	int corked;
	uint64_t seq;           /* bytes accepted by write() and end() */
	uint64_t written;       /* bytes the kernel took */
	struct rs__ring reqs;   /* of struct rs__wreq, in write order */
	uint32_t poll;          /* events registered with epoll */
	rs_write_cb end_cb;
	void *end_arg;
	unsigned connecting : 1;
	unsigned ending : 1;       /* end() was called */
	unsigned finished : 1;     /* our FIN is sent */
	unsigned peer_ended : 1;   /* the peer's FIN was read */
	unsigned paused : 1;
	unsigned destroyed : 1;
	/* Optional writes (rs__socket_try_sendv, chunked try_write): a send
	 * the kernel took in part marks the socket as wanting writable (the
	 * last write failed), and the next writable event with nothing
	 * queued calls on_writable once. Beside connecting and destroyed:
	 * a writable event tests the three in one byte. */
	unsigned want_writable : 1;
	unsigned need_drain : 1;
	unsigned settle_queued : 1;
	unsigned destroy_on_finish : 1;
	unsigned unregistered : 1; /* taken out of epoll after a hang-up */
	int error;              /* the error the socket closes with, or 0 */
	const char *error_syscall;
	/* The hook of the optional writes (want_writable above). */
	rs__writable_fn on_writable;
	void *writable_arg;
};

/*
 * socket.c's helpers, for the other files of the socket. Each is the static
 * function socket.c calls itself, called here out of line: socket.c keeps
 * its own calls static so that the compiler inlines them into the write
 * path as before (tests/perf/sender_instructions.sh holds those figures).
 */
/* Nothing when rc >= 0; else prints what and rc's message and aborts (out
 * of memory in a callback chain leaves no promise of the API to keep). */
void rs__socket_must(int rc, const char *what);
/* Destroys s with code (a positive errno) from syscall: pending callbacks
 * fail, then on_error and on_close, in a microtask. Nothing when s is
 * destroyed already. */
void rs__socket_fail(rs_socket *s, int code, const char *syscall);
/* Brings s's epoll interest in line with what it wants (reading, bytes to
 * send, a connect, a writable hook); fails s when epoll_ctl fails. */
void rs__socket_poll_update(rs_socket *s);
/* Queues s's settle microtask (drain, write callbacks, FIN and finish),
 * unless it is queued already or s is destroyed. */
void rs__socket_schedule_settle(rs_socket *s);
/* Counts n bytes the kernel took from s; schedules what they complete. */
void rs__socket_took(rs_socket *s, size_t n);
/* Whether rc, a send's or recv's -errno, is one after which the kernel
 * will take or give bytes later (EAGAIN, EWOULDBLOCK, ENOBUFS, EINTR). */
int rs__socket_retryable(ssize_t rc);
/* A write s cannot take, code a positive errno: cb (when set) fails with
 * -code, in a microtask of its own when s is closed already, else first of
 * the pending callbacks as s is destroyed with code. Returns -code. */
int rs__socket_write_refused(rs_socket *s, int code, rs_write_cb cb,
			     void *arg);

/* socket_read.c: one recv for a readable event (or a hang-up) of s: the
 * bytes go to on_data, the peer's FIN to on_end in the half-open order
 * (rs_config.halfopen), a fatal error fails s. */
void rs__socket_read(rs_socket *s);

/* socket_try.c: a writable event of s that wants one: once nothing is
 * queued, drops the want (and EPOLLOUT) and calls the writable hook. */
void rs__socket_writable_hook(rs_socket *s);

#endif
