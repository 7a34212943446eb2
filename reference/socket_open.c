/*
 * socket_open.c: how a stream socket begins and ends in memory: connect
 * (TCP, unix), a connection the listener accepted, its events, and the
 * free of the sockets that closed, at the end of the loop's iteration.
 * Split from socket.c when it passed 1,200 lines: none of it runs on a
 * write.
 */
#include "socket_internal.h"

#include <errno.h>
#include <stdlib.h>

void rs_socket_set_events(rs_socket *s, const struct rs_socket_events *ev,
			  void *arg)
{
	s->ev = *ev;
	s->arg = arg;
}

/* A new socket of loop on fd, with opts, not yet in epoll. NULL without
 * memory. */
static rs_socket *sock_new(rs_loop *loop, int fd,
			   const struct rs_socket_options *opts)
{
	rs_socket *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	rs__handle_init(&s->handle, RS__SOCKET, rs__socket_dispatch);
	s->loop = loop;
	s->fd = fd;
	s->opts = *opts;
	rs_queue_init(&s->queue, rs_config.queue);
	rs_queue_init(&s->cork, rs_config.queue);
	rs_queue_init(&s->batch, rs_config.queue);
	rs__ring_init(&s->reqs, sizeof(struct rs__wreq), 8);
	s->batch_link.socket = s;
	s->batch_link.loop = loop;
	return s;
}

int rs__socket_accepted(rs_loop *loop, int fd,
			const struct rs_socket_options *opts, rs_socket **out)
{
	rs_socket *s = sock_new(loop, fd, opts);
	int rc;

	if (!s) {
		(void)rs__io_close(fd);
		return -ENOMEM;
	}
	rc = rs__io_setbuf(fd, s->opts.rcvbuf, s->opts.sndbuf);
	if (rc == 0 && s->opts.nodelay)
		rc = rs__io_nodelay(fd);
	if (rc == 0)
		rc = rs__io_epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, EPOLLIN,
				      &s->handle);
	if (rc < 0) {
		(void)rs__io_close(fd);
		free(s);
		return rc;
	}
	s->poll = EPOLLIN;
	loop->handles++;
	*out = s;
	return 0;
}

static int sock_connect(rs_loop *loop, int domain, const struct sockaddr *sa,
			socklen_t salen, const struct rs_socket_options *opts,
			const struct rs_socket_events *ev, void *arg,
			rs_socket **out)
{
	static const struct rs_socket_options defaults;
	rs_socket *s;
	int fd, rc;

	fd = rs__io_socket(domain);
	if (fd < 0)
		return fd;
	s = sock_new(loop, fd, opts ? opts : &defaults);
	if (!s) {
		(void)rs__io_close(fd);
		return -ENOMEM;
	}
	if (ev)
		s->ev = *ev;
	s->arg = arg;
	rc = rs__io_setbuf(fd, s->opts.rcvbuf, s->opts.sndbuf);
	if (rc == 0)
		rc = rs__io_connect(fd, sa, salen);
	/* EAGAIN from connect is a failure (a unix listener's backlog is
	 * full, or no TCP port is left), not a connect in progress. A connect
	 * that completed at once (a unix socket) waits for its writable event
	 * like one in progress: on_connect then runs in a task of its own,
	 * never inside this call, and nothing outside the socket's own poll
	 * refers to it (a posted task could outlive a destroyed socket). */
	if (rc == 0 || rc == -EINPROGRESS) {
		s->connecting = 1;
		s->poll = EPOLLIN | EPOLLOUT;
		rc = rs__io_epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, s->poll,
				      &s->handle);
	}
	if (rc < 0) {
		(void)rs__io_close(fd);
		free(s);
		return rc;
	}
	loop->handles++;
	*out = s;
	return 0;
}

int rs_connect_tcp(rs_loop *loop, const char *host, int port,
		   const struct rs_socket_options *opts,
		   const struct rs_socket_events *ev, void *arg,
		   rs_socket **out)
{
	struct sockaddr_in sin;
	int rc = rs__address_tcp(host, port, &sin);

	if (rc < 0)
		return rc;
	return sock_connect(loop, AF_INET, (struct sockaddr *)&sin, sizeof(sin),
			    opts, ev, arg, out);
}

int rs_connect_unix(rs_loop *loop, const char *path,
		    const struct rs_socket_options *opts,
		    const struct rs_socket_events *ev, void *arg,
		    rs_socket **out)
{
	struct sockaddr_un sun;
	int rc = rs__address_unix(path, &sun);

	if (rc < 0)
		return rc;
	return sock_connect(loop, AF_UNIX, (struct sockaddr *)&sun, sizeof(sun),
			    opts, ev, arg, out);
}

void rs__socket_free(rs_socket *s)
{
	rs_stats.bytes_moved += s->queue.bytes_moved + s->cork.bytes_moved + s->batch.bytes_moved;
	rs_stats.allocations += s->queue.allocations + s->cork.allocations + s->batch.allocations;
	rs_stats.bytes_copied += rs_socket_bytes_copied(s);
	rs_queue_free(&s->queue);
	rs_queue_free(&s->cork);
	rs_queue_free(&s->batch);
	rs__ring_free(&s->reqs);
	free(s);
}
