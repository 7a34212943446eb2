/*
 * fi_calls.c: the fault gate's calls (fi.h): the slow path of every
 * wrapper, and the wrappers that are not inline in fi.h (epoll_ctl, accept,
 * connect, shutdown, close). Each slow path counts the call, asks the plan
 * (fi__gate_begin, fi.c), applies the clamp and calls libc.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fi.h"
#include "fi_internal.h"

/*
 * The libc functions of the out-of-line wrappers, declared again as fi.h
 * declares those of the inline ones: called through their GOT entry, not a
 * PLT stub (see fi.h).
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
	!defined(FI_PRELOAD)
#define NO_PLT(f) extern __typeof__(f) f __attribute__((noplt))
NO_PLT(epoll_ctl);
NO_PLT(accept4);
NO_PLT(connect);
NO_PLT(shutdown);
NO_PLT(close);
#undef NO_PLT
#endif

/* epoll_ctl is also counted by op, for the ops the kernel knows. */
static inline void count_ctl(int op)
{
	if (op >= EPOLL_CTL_ADD && op <= EPOLL_CTL_MOD)
		FI__INC(fi__counters->ctl_ops[op]);
}

/* The per-fd counts of epoll_ctl's slow path (see fi_epoll_ctl). */
static void count_ctl_fd(int op, int fd)
{
	fi__count_fd(FI_EPOLL_CTL, fd);
	if ((unsigned)fd < FI_MAX_FD && op >= EPOLL_CTL_ADD &&
	    op <= EPOLL_CTL_MOD)
		FI__INC(fi__counters->per_fd_ctl[fd][op]);
}

/* ------------------------------------------------------------------------ */
/* Slow paths, one per wrapper.                                             */

/*
 * Kept out of line and out of the hot text: inlined, a slow path makes its
 * wrapper save registers and set up a frame on every call, which tripled
 * the disarmed gate's instructions per call (callgrind, bench/gate_cost.c).
 *
 * A wrapper calls its slow path when the gate is armed, and also, disarmed,
 * for an fd without per-fd counters (see fi__fast_fd_limit). So each slow
 * path first makes the count the wrapper left to it, and must behave as a
 * plain call when the gate is disarmed: it does, since then no rule is
 * armed, the pre-filter finds no failpoint to ask, and the plan is empty.
 */
#define SLOW_PATH __attribute__((noinline, cold))

SLOW_PATH
ssize_t fi__send_slow(int fd, const void *buf, size_t len, int flags)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_SEND, fd);
	if (fi__gate_begin(FI_SEND, fd, len, &p, &r))
		return r;
	len = fi__plan_clamp(&p, len);
	return fi__gate_end(&p, FI__REAL(send)(fd, buf, len, flags));
}

SLOW_PATH
ssize_t fi__sendto_slow(int fd, const void *buf, size_t len, int flags,
			   const struct sockaddr *addr, socklen_t addrlen)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_SENDTO, fd);
	if (fi__gate_begin(FI_SENDTO, fd, len, &p, &r))
		return r;
	len = fi__plan_clamp(&p, len);
	return fi__gate_end(&p,
			FI__REAL(sendto)(fd, buf, len, flags, addr, addrlen));
}

SLOW_PATH
ssize_t fi__sendmsg_slow(int fd, const struct msghdr *msg, int flags)
{
	struct iovec copy[IOV_MAX];
	struct msghdr m;
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_SENDMSG, fd);
	if (fi__gate_begin(FI_SENDMSG, fd, fi__msg_len(msg), &p, &r))
		return r;
	/* A NULL msg goes to the kernel as it is, to get its EFAULT. */
	if (msg == NULL)
		return fi__gate_end(&p, FI__REAL(sendmsg)(fd, msg, flags));
	m = *msg;
	/* The cast only restores what msghdr lacks: sendmsg() does not write
	 * through msg_iov, and the array is the caller's or our copy. */
	m.msg_iov = (struct iovec *)fi__plan_clamp_iov(&p, msg->msg_iov,
						   &m.msg_iovlen, copy);
	return fi__gate_end(&p, FI__REAL(sendmsg)(fd, &m, flags));
}

SLOW_PATH
ssize_t fi__write_slow(int fd, const void *buf, size_t len)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_WRITE, fd);
	if (fi__gate_begin(FI_WRITE, fd, len, &p, &r))
		return r;
	len = fi__plan_clamp(&p, len);
	return fi__gate_end(&p, FI__REAL(write)(fd, buf, len));
}

SLOW_PATH
ssize_t fi__writev_slow(int fd, const struct iovec *iov, int iovcnt)
{
	struct iovec copy[IOV_MAX];
	const struct iovec *v = iov;
	size_t cnt;
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_WRITEV, fd);
	if (fi__gate_begin(FI_WRITEV, fd, fi__iov_len(iov, iovcnt), &p,
			   &r))
		return r;
	/* A negative count goes to the kernel as it is, to get its EINVAL. */
	if (iovcnt >= 0) {
		cnt = (size_t)iovcnt;
		v = fi__plan_clamp_iov(&p, iov, &cnt, copy);
		iovcnt = (int)cnt;
	}
	return fi__gate_end(&p, FI__REAL(writev)(fd, v, iovcnt));
}

SLOW_PATH
ssize_t fi__recv_slow(int fd, void *buf, size_t len, int flags)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_RECV, fd);
	if (fi__gate_begin(FI_RECV, fd, len, &p, &r))
		return r;
	len = fi__plan_clamp(&p, len);
	return fi__gate_end(&p, FI__REAL(recv)(fd, buf, len, flags));
}

SLOW_PATH
ssize_t fi__read_slow(int fd, void *buf, size_t len)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_READ, fd);
	if (fi__gate_begin(FI_READ, fd, len, &p, &r))
		return r;
	len = fi__plan_clamp(&p, len);
	return fi__gate_end(&p, FI__REAL(read)(fd, buf, len));
}

SLOW_PATH
int fi__epoll_wait_slow(int epfd, struct epoll_event *evs, int maxevents,
			   int timeout)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_EPOLL_WAIT, epfd);
	if (fi__gate_begin(FI_EPOLL_WAIT, epfd, 0, &p, &r))
		return (int)r;
	/* A short epoll_wait returns at most N events: the rest wait for the
	 * next call, as when more sockets are ready than the array holds. */
	if (maxevents > 0)
		maxevents = (int)fi__plan_clamp(&p, (size_t)maxevents);
	return (int)fi__gate_end(&p,
			     FI__REAL(epoll_wait)(epfd, evs, maxevents, timeout));
}


/* The calls without a length: only signal, errno and zero apply. */

SLOW_PATH
static int epoll_ctl_slow(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct fi__plan p;
	ssize_t r;

	count_ctl_fd(op, fd);
	if (fi__gate_begin(FI_EPOLL_CTL, fd, 0, &p, &r))
		return (int)r;
	return (int)fi__gate_end(&p, FI__REAL(epoll_ctl)(epfd, op, fd, ev));
}

SLOW_PATH
static int accept_slow(int fd, struct sockaddr *addr, socklen_t *addrlen,
		       int flags)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_ACCEPT, fd);
	if (fi__gate_begin(FI_ACCEPT, fd, 0, &p, &r))
		return (int)r;
	return (int)fi__gate_end(&p, FI__REAL(accept4)(fd, addr, addrlen, flags));
}

SLOW_PATH
static int connect_slow(int fd, const struct sockaddr *addr,
			socklen_t addrlen)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_CONNECT, fd);
	if (fi__gate_begin(FI_CONNECT, fd, 0, &p, &r))
		return (int)r;
	return (int)fi__gate_end(&p, FI__REAL(connect)(fd, addr, addrlen));
}

SLOW_PATH
static int shutdown_slow(int fd, int how)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_SHUTDOWN, fd);
	if (fi__gate_begin(FI_SHUTDOWN, fd, 0, &p, &r))
		return (int)r;
	return (int)fi__gate_end(&p, FI__REAL(shutdown)(fd, how));
}

SLOW_PATH
static int close_slow(int fd)
{
	struct fi__plan p;
	ssize_t r;

	fi__count_fd(FI_CLOSE, fd);
	if (fi__gate_begin(FI_CLOSE, fd, 0, &p, &r)) {
		/* Linux releases the fd even when close() fails, so an injected
		 * failure still closes it: a gate that kept the fd open would
		 * model a kernel that does not exist (and leave epoll pointing
		 * at a socket the stack has freed). */
		(void)FI__REAL(close)(fd);
		fi_fd_forget(fd);
		return (int)r;
	}
	r = fi__gate_end(&p, FI__REAL(close)(fd));
	fi_fd_forget(fd);
	return (int)r;
}

/* ------------------------------------------------------------------------ */
/* The wrappers.                                                            */

/*
 * The wrappers of fi.h's inline fast path are in fi.h; these are the calls
 * a connection makes a few times in its life, or once per poll change.
 */

/*
 * The per-fd counters of epoll_ctl are the watched fd's, not the epoll
 * fd's: the question they answer is how often a socket's poll changed.
 * count_ctl counts the op; fi__count_fast counts the call on the watched
 * fd; the per-fd count of the op is done here on the fast path, and by
 * count_ctl_fd on the slow one.
 */
int fi_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	count_ctl(op);
	if (!fi__count_fast(FI_EPOLL_CTL, fd))
		return epoll_ctl_slow(epfd, op, fd, ev);
	if (op >= EPOLL_CTL_ADD && op <= EPOLL_CTL_MOD)
		FI__INC(fi__counters->per_fd_ctl[fd][op]);
	return (int)fi__result(FI_EPOLL_CTL, FI__REAL(epoll_ctl)(epfd, op, fd, ev));
}

/*
 * accept and connect number the connections (struct fi_rule's conn),
 * armed or not. An accepted fd is a new file whatever its number was: the
 * gate forgets what it knew of that number first.
 */
int fi_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
	int r;

	if (!fi__count_fast(FI_ACCEPT, fd))
		r = accept_slow(fd, addr, addrlen, flags);
	else
		r = (int)fi__result(FI_ACCEPT,
				    FI__REAL(accept4)(fd, addr, addrlen, flags));
	if (r >= 0) {
		fi_fd_forget(r);
		fi__conn_open(r);
	}
	return r;
}

/* A connect that succeeds at once or is in progress opens a connection;
 * one that failed opens none, and a repeat on a connecting socket gets
 * EALREADY or EISCONN, which keep its number. */
int fi_connect(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
	int r;

	if (!fi__count_fast(FI_CONNECT, fd))
		r = connect_slow(fd, addr, addrlen);
	else
		r = (int)fi__result(FI_CONNECT,
				    FI__REAL(connect)(fd, addr, addrlen));
	if (r == 0 || r == -EINPROGRESS)
		fi__conn_open(fd);
	return r;
}

int fi_shutdown(int fd, int how)
{
	if (!fi__count_fast(FI_SHUTDOWN, fd))
		return shutdown_slow(fd, how);
	return (int)fi__result(FI_SHUTDOWN, FI__REAL(shutdown)(fd, how));
}

/* Disarmed too, a close forgets what the gate knew of the fd (its
 * connection above all), so that a rule armed later does not take a new
 * file under that number for the old one. */
int fi_close(int fd)
{
	int r;

	if (!fi__count_fast(FI_CLOSE, fd))
		return close_slow(fd);
	r = (int)fi__result(FI_CLOSE, FI__REAL(close)(fd));
	fi_fd_forget(fd);
	return r;
}
