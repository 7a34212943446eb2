/*
 * listener.c: listening sockets. Each readable event accepts one
 * connection and hands it to the stream socket (socket.c) and then to the
 * owner's callback.
 */
#include "rs_internal.h"

#include <errno.h>
#include <stdlib.h>

struct rs_listener {
	struct rs__handle handle;
	rs_loop *loop;
	int fd;
	struct rs_socket_options opts;
	rs_connection_cb cb;
	void *arg;
	int closed;
};

/* An epoll event of the listener: one accept. A listener's struct
 * begins with its handle. */
static void listener_dispatch(struct rs__handle *h, uint32_t events)
{
	rs_listener *l = (rs_listener *)h;
	rs_socket *s;
	int fd;

	(void)events;
	if (l->closed)
		return;
	/* One accept per event: a peer not yet accepted keeps the listener
	 * readable, and the count of accept calls stays the count of
	 * connections whatever the timing. */
	fd = rs__io_accept(l->fd);
	if (fd < 0)
		return;
	if (rs__socket_accepted(l->loop, fd, &l->opts, &s) < 0)
		return;
	l->cb(l, s, l->arg);
}

static int listen_on(rs_loop *loop, int domain, const struct sockaddr *sa,
		     socklen_t salen, const struct rs_socket_options *opts,
		     rs_connection_cb cb, void *arg, rs_listener **out)
{
	rs_listener *l = calloc(1, sizeof(*l));
	int fd, rc;

	if (!l)
		return -ENOMEM;
	fd = rs__io_socket(domain);
	if (fd < 0) {
		free(l);
		return fd;
	}
	rc = rs__io_bind_listen(fd, sa, salen);
	if (rc == 0)
		rc = rs__io_epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, EPOLLIN,
				      &l->handle);
	if (rc < 0) {
		(void)rs__io_close(fd);
		free(l);
		return rc;
	}
	rs__handle_init(&l->handle, RS__LISTENER, listener_dispatch);
	l->loop = loop;
	l->fd = fd;
	if (opts)
		l->opts = *opts;
	l->cb = cb;
	l->arg = arg;
	loop->handles++;
	*out = l;
	return 0;
}

int rs_listen_tcp(rs_loop *loop, const char *host, int port,
		  const struct rs_socket_options *opts, rs_connection_cb cb,
		  void *arg, rs_listener **out)
{
	struct sockaddr_in sin;
	int rc = rs__address_tcp(host, port, &sin);

	if (rc < 0)
		return rc;
	return listen_on(loop, AF_INET, (struct sockaddr *)&sin, sizeof(sin),
			 opts, cb, arg, out);
}

int rs_listen_unix(rs_loop *loop, const char *path,
		   const struct rs_socket_options *opts, rs_connection_cb cb,
		   void *arg, rs_listener **out)
{
	struct sockaddr_un sun;
	int rc = rs__address_unix(path, &sun);

	if (rc < 0)
		return rc;
	return listen_on(loop, AF_UNIX, (struct sockaddr *)&sun, sizeof(sun),
			 opts, cb, arg, out);
}

int rs_listener_port(const rs_listener *l)
{
	return rs__io_local_port(l->fd);
}

void rs_listener_close(rs_listener *l)
{
	if (l->closed)
		return;
	l->closed = 1;
	(void)rs__io_epoll_ctl(l->loop->epfd, EPOLL_CTL_DEL, l->fd, 0, NULL);
	(void)rs__io_close(l->fd);
	l->loop->handles--;
	rs__loop_closed(l->loop, &l->handle);
}

void rs__listener_free(rs_listener *l)
{
	free(l);
}
