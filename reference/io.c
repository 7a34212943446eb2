/*
 * io.c: the only file of the reference stack that talks to the kernel about
 * sockets. Every call the fault gate knows goes through it (fi_*), so that it
 * is counted and can be clamped, refused or signalled. The calls the gate
 * does not cover (socket, bind, listen, getsockopt, setsockopt) are setup,
 * not traffic, and stay direct here.
 */
#include "rs_internal.h"

#include "fi.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

int rs__io_socket(int domain)
{
	int fd = socket(domain, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	return fd < 0 ? -errno : fd;
}

int rs__io_epoll_create(void)
{
	int fd = epoll_create1(EPOLL_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* MSG_NOSIGNAL: a peer that is gone must give EPIPE, not kill the process. */
ssize_t rs__io_send(int fd, const void *buf, size_t len)
{
	return fi_send(fd, buf, len, MSG_NOSIGNAL);
}

/* sendmsg, not writev, for the same reason: writev would raise SIGPIPE. */
ssize_t rs__io_sendv(int fd, const struct iovec *iov, int iovcnt)
{
	struct msghdr msg;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)iov;
	msg.msg_iovlen = (size_t)iovcnt;
	return fi_sendmsg(fd, &msg, MSG_NOSIGNAL);
}

ssize_t rs__io_recv(int fd, void *buf, size_t len)
{
	return fi_recv(fd, buf, len, 0);
}

int rs__io_epoll_ctl(int epfd, int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.events = events;
	ev.data.ptr = ptr;
	return fi_epoll_ctl(epfd, op, fd, &ev);
}

int rs__io_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	return fi_epoll_wait(epfd, evs, max, timeout);
}

int rs__io_accept(int fd)
{
	return fi_accept(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
}

int rs__io_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	return fi_connect(fd, addr, len);
}

/* The pending error of a connecting socket: 0, or a positive errno. */
int rs__io_socket_error(int fd)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return errno;
	return err;
}

int rs__io_setbuf(int fd, int rcvbuf, int sndbuf)
{
	if (rcvbuf > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
		return -errno;
	if (sndbuf > 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf)) < 0)
		return -errno;
	return 0;
}

int rs__io_bind_listen(int fd, const struct sockaddr *addr, socklen_t len)
{
	int one = 1;

	if (addr->sa_family != AF_UNIX &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		return -errno;
	if (bind(fd, addr, len) < 0)
		return -errno;
	/* 512: the harness connects up to a few hundred peers at once. */
	if (listen(fd, 512) < 0)
		return -errno;
	return 0;
}

int rs__io_local_port(int fd)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);

	if (getsockname(fd, (struct sockaddr *)&sin, &len) < 0)
		return -errno;
	return ntohs(sin.sin_port);
}

int rs__io_shutdown(int fd)
{
	return fi_shutdown(fd, SHUT_WR);
}

int rs__io_close(int fd)
{
	return fi_close(fd);
}

/* ---- chunked responses ------------------------------------------------ */

/* MSG_MORE on the head and chunk header of a large final chunk: the kernel
 * may hold them for the writev of body and terminator that follows. */
ssize_t rs__io_send_more(int fd, const void *buf, size_t len, int more)
{
	return fi_send(fd, buf, len, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
}

ssize_t rs__io_sendv_more(int fd, const struct iovec *iov, int iovcnt,
			  int more)
{
	struct msghdr msg;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = (struct iovec *)iov;
	msg.msg_iovlen = (size_t)iovcnt;
	return fi_sendmsg(fd, &msg, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
}

int rs__io_nodelay(int fd)
{
	int one = 1;

	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return errno == EOPNOTSUPP ? 0 : -errno;
	return 0;
}
