/*
 * fi_forms.c: the preload library's other forms of the gate's kinds
 * (fi.h, FI_PRELOAD): recvfrom and recvmsg as recv, readv as read,
 * epoll_pwait as epoll_wait, and the forms of fi_form (sendfile, splice,
 * sendmmsg, recvmmsg). Each goes through the gate's slow path (fi.c) as
 * the kind it is ruled as. Built into the preload library only.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "fi.h"
#include "fi_internal.h"

/*
 * The preload library's other forms of a kind: the same count and rules as
 * the kind's wrapper (fast path when disarmed), another libc call. A short
 * clamp cuts the length, or the iovecs' total.
 */
ssize_t fi__recvfrom(int fd, void *buf, size_t len, int flags,
		     struct sockaddr *addr, socklen_t *addrlen)
{
	struct fi__plan p;
	ssize_t r;

	if (fi__count_fast(FI_RECV, fd))
		return fi__result(FI_RECV, fi__libc.recvfrom(fd, buf, len, flags,
							     addr, addrlen));
	fi__count_fd(FI_RECV, fd);
	if (fi__gate_begin(FI_RECV, fd, len, &p, &r)) {
		/* An injected end of file says what a real one says: no
		 * address (a connected stream's recvfrom reports none). */
		if (r == 0 && addr != NULL && addrlen != NULL)
			*addrlen = 0;
		return r;
	}
	len = fi__plan_clamp(&p, len);
	return fi__gate_end(&p,
			fi__libc.recvfrom(fd, buf, len, flags, addr, addrlen));
}

ssize_t fi__recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct iovec copy[IOV_MAX];
	struct msghdr m;
	struct fi__plan p;
	ssize_t r;

	if (fi__count_fast(FI_RECV, fd))
		return fi__result(FI_RECV, fi__libc.recvmsg(fd, msg, flags));
	fi__count_fd(FI_RECV, fd);
	if (fi__gate_begin(FI_RECV, fd, fi__msg_len(msg), &p, &r)) {
		/* An injected end of file fills the header as a real one does:
		 * no address, no control data, no flags. A refused call leaves
		 * it alone, as the kernel does. */
		if (r == 0 && msg != NULL) {
			msg->msg_namelen = 0;
			msg->msg_controllen = 0;
			msg->msg_flags = 0;
		}
		return r;
	}
	if (msg == NULL)
		return fi__gate_end(&p, fi__libc.recvmsg(fd, msg, flags));
	m = *msg;
	m.msg_iov = (struct iovec *)fi__plan_clamp_iov(&p, msg->msg_iov,
						   &m.msg_iovlen, copy);
	r = fi__libc.recvmsg(fd, &m, flags);
	/* What the kernel writes back into the header goes to the caller's. */
	msg->msg_namelen = m.msg_namelen;
	msg->msg_controllen = m.msg_controllen;
	msg->msg_flags = m.msg_flags;
	return fi__gate_end(&p, r);
}

ssize_t fi__readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct iovec copy[IOV_MAX];
	const struct iovec *v = iov;
	struct fi__plan p;
	size_t cnt;
	ssize_t r;

	if (fi__count_fast(FI_READ, fd))
		return fi__result(FI_READ, fi__libc.readv(fd, iov, iovcnt));
	fi__count_fd(FI_READ, fd);
	if (fi__gate_begin(FI_READ, fd, fi__iov_len(iov, iovcnt), &p, &r))
		return r;
	if (iovcnt >= 0) {
		cnt = (size_t)iovcnt;
		v = fi__plan_clamp_iov(&p, iov, &cnt, copy);
		iovcnt = (int)cnt;
	}
	return fi__gate_end(&p, fi__libc.readv(fd, v, iovcnt));
}

int fi__epoll_pwait(int epfd, struct epoll_event *evs, int maxevents,
		    int timeout, const sigset_t *sigmask)
{
	struct fi__plan p;
	ssize_t r;

	if (fi__count_fast(FI_EPOLL_WAIT, epfd))
		return (int)fi__result(FI_EPOLL_WAIT,
				       fi__libc.epoll_pwait(epfd, evs, maxevents,
							    timeout, sigmask));
	fi__count_fd(FI_EPOLL_WAIT, epfd);
	if (fi__gate_begin(FI_EPOLL_WAIT, epfd, 0, &p, &r))
		return (int)r;
	if (maxevents > 0)
		maxevents = (int)fi__plan_clamp(&p, (size_t)maxevents);
	return (int)fi__gate_end(&p,
			     fi__libc.epoll_pwait(epfd, evs, maxevents, timeout,
						  sigmask));
}

/*
 * The forms of fi_form: counted as their form, then through the gate as
 * the kind they are ruled as (fi.h).
 */
ssize_t fi__sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	struct fi__plan p;
	ssize_t r;

	FI__INC(fi__counters->forms[FI_FORM_SENDFILE]);
	if (fi__count_fast(FI_WRITE, out_fd))
		return fi__result(FI_WRITE, fi__libc.sendfile(out_fd, in_fd,
							      offset, count));
	fi__count_fd(FI_WRITE, out_fd);
	if (fi__gate_begin(FI_WRITE, out_fd, count, &p, &r))
		return r;
	count = fi__plan_clamp(&p, count);
	return fi__gate_end(&p, fi__libc.sendfile(out_fd, in_fd, offset, count));
}

ssize_t fi__splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out,
		   size_t len, unsigned flags)
{
	struct fi__plan p;
	ssize_t r;

	FI__INC(fi__counters->forms[FI_FORM_SPLICE]);
	if (fi__count_fast(FI_WRITE, fd_out))
		return fi__result(FI_WRITE, fi__libc.splice(fd_in, off_in, fd_out,
							    off_out, len, flags));
	fi__count_fd(FI_WRITE, fd_out);
	if (fi__gate_begin(FI_WRITE, fd_out, len, &p, &r))
		return r;
	len = fi__plan_clamp(&p, len);
	return fi__gate_end(&p, fi__libc.splice(fd_in, off_in, fd_out, off_out,
					    len, flags));
}

/*
 * A clamp on sendmmsg or recvmmsg: the first message alone, its iovecs
 * cut to the clamp, when the clamp cuts it; otherwise the whole vector.
 * Returns the message to use (one, or NULL for the whole vector).
 */
static struct mmsghdr *mmsg_clamp(struct fi__plan *p, const struct mmsghdr *vec,
				  unsigned vlen, struct mmsghdr *one,
				  struct iovec *copy)
{
	size_t cnt;

	if (!(p->actions & FI__ACT_BIT(FI_ACT_SHORT)) || vec == NULL || vlen == 0)
		return NULL;
	*one = vec[0];
	cnt = one->msg_hdr.msg_iovlen;
	one->msg_hdr.msg_iov = (struct iovec *)fi__plan_clamp_iov(
		p, vec[0].msg_hdr.msg_iov, &cnt, copy);
	one->msg_hdr.msg_iovlen = cnt;
	return p->clamped ? one : NULL;
}

int fi__sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags)
{
	struct iovec copy[IOV_MAX];
	struct mmsghdr one, *m;
	struct fi__plan p;
	ssize_t r;

	FI__INC(fi__counters->forms[FI_FORM_SENDMMSG]);
	if (fi__count_fast(FI_SENDMSG, fd))
		return (int)fi__result(FI_SENDMSG,
				       fi__libc.sendmmsg(fd, vec, vlen, flags));
	fi__count_fd(FI_SENDMSG, fd);
	/* Its bytes are not counted (no_bytes): no byte= rule matches it. */
	if (fi__gate_begin(FI_SENDMSG, fd, 0, &p, &r))
		return (int)r;
	p.no_bytes = 1; /* its result is a count of messages */
	m = mmsg_clamp(&p, vec, vlen, &one, copy);
	if (m == NULL)
		return (int)fi__gate_end(&p, fi__libc.sendmmsg(fd, vec, vlen, flags));
	r = fi__libc.sendmmsg(fd, m, 1, flags);
	if (r == 1)
		vec[0].msg_len = m->msg_len;
	return (int)fi__gate_end(&p, r);
}

int fi__recvmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags,
		 struct timespec *timeout)
{
	struct iovec copy[IOV_MAX];
	struct mmsghdr one, *m;
	struct fi__plan p;
	ssize_t r;

	FI__INC(fi__counters->forms[FI_FORM_RECVMMSG]);
	if (fi__count_fast(FI_RECV, fd))
		return (int)fi__result(FI_RECV, fi__libc.recvmmsg(fd, vec, vlen,
								 flags, timeout));
	fi__count_fd(FI_RECV, fd);
	if (fi__gate_begin(FI_RECV, fd, 0, &p, &r))
		return (int)r;
	p.no_bytes = 1;
	m = mmsg_clamp(&p, vec, vlen, &one, copy);
	if (m == NULL)
		return (int)fi__gate_end(&p, fi__libc.recvmmsg(fd, vec, vlen, flags,
							   timeout));
	r = fi__libc.recvmmsg(fd, m, 1, flags, timeout);
	if (r == 1) {
		/* What the kernel wrote into the header goes to the caller's. */
		vec[0].msg_len = m->msg_len;
		vec[0].msg_hdr.msg_namelen = m->msg_hdr.msg_namelen;
		vec[0].msg_hdr.msg_controllen = m->msg_hdr.msg_controllen;
		vec[0].msg_hdr.msg_flags = m->msg_hdr.msg_flags;
	}
	return (int)fi__gate_end(&p, r);
}
