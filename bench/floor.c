/*
 * floor.c: the floor sender's set-up, tear-down, and its loop as a
 * function (floor.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "floor.h"

struct floor_sock floor_open(const char *unix_path, int port)
{
	struct floor_sock s = { .ev = { .events = EPOLLOUT } };
	int flags;

	s.fd = bc_connect(unix_path, port);
	flags = fcntl(s.fd, F_GETFL);
	if (flags < 0 || fcntl(s.fd, F_SETFL, flags | O_NONBLOCK) != 0)
		bc_die("floor: fcntl: %s", strerror(errno));
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	if (s.ep < 0)
		bc_die("floor: epoll_create1: %s", strerror(errno));
	s.ev.data.fd = s.fd;
	if (epoll_ctl(s.ep, EPOLL_CTL_ADD, s.fd, &s.ev) != 0)
		bc_die("floor: epoll_ctl: %s", strerror(errno));
	return s;
}

void floor_close(struct floor_sock *s)
{
	if (close(s->ep) != 0 || close(s->fd) != 0)
		bc_die("floor: close: %s", strerror(errno));
	s->ep = s->fd = -1;
}

int floor_send(const struct floor_io *io, int fd, int ep,
	       struct epoll_event *ev, const char *buf, size_t len,
	       struct floor_counts *c)
{
	int rc;

	FLOOR_SEND(io, fd, ep, ev, buf, len, c, rc);
	return rc;
}
