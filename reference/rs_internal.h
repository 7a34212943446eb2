/*
 * rs_internal.h: what the files of librefstack share and nothing else sees.
 * Internal non-static names start with rs__.
 */
#ifndef WIRECHECK_RS_INTERNAL_H
#define WIRECHECK_RS_INTERNAL_H

#include "rs.h"

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

/* io.c: the one file that talks to the kernel, through the fault gate. Each
 * returns the syscall's result or -errno. */
int rs__io_socket(int domain);
int rs__io_epoll_create(void);
ssize_t rs__io_send(int fd, const void *buf, size_t len);
ssize_t rs__io_sendv(int fd, const struct iovec *iov, int iovcnt);
ssize_t rs__io_recv(int fd, void *buf, size_t len);
int rs__io_epoll_ctl(int epfd, int op, int fd, uint32_t events, void *ptr);
int rs__io_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout);
int rs__io_accept(int fd);
int rs__io_connect(int fd, const struct sockaddr *addr, socklen_t len);
int rs__io_socket_error(int fd);
int rs__io_setbuf(int fd, int rcvbuf, int sndbuf);
int rs__io_bind_listen(int fd, const struct sockaddr *addr, socklen_t len);
int rs__io_local_port(int fd);
int rs__io_shutdown(int fd);
int rs__io_close(int fd);

/* What an epoll registration points at: a socket or a listener. */
enum rs__handle_kind { RS__SOCKET, RS__LISTENER };
struct rs__handle {
	enum rs__handle_kind kind;
	uint64_t order;   /* creation order: the loop dispatches by it */
};
/* Gives h the next creation number. */
void rs__handle_init(struct rs__handle *h, enum rs__handle_kind kind);

/* loop.c */
struct rs__task {
	rs_task_fn fn;
	void *arg;
};
struct rs__task_queue {
	struct rs__task *items;
	size_t head;
	size_t len;
	size_t cap;
};
struct rs_loop {
	int epfd;
	uint64_t task;          /* number of the last task started */
	int in_task;
	int handles;            /* open sockets and listeners */
	struct rs__task_queue posted;
	struct rs__task_queue micro;
	rs_task_hook hook;
	void *hook_arg;
	rs_socket *closed;      /* freed at the end of the iteration */
	rs_listener *closed_listeners;
};
/* Runs fn(arg) as one task: hook, body, microtasks, end-of-task work. */
void rs__loop_task(rs_loop *loop, rs_task_fn fn, void *arg);
/* socket.c: dispatches an epoll event to a socket or listener (a task). */
void rs__handle_dispatch(rs_loop *loop, struct rs__handle *h, uint32_t events);
/* socket.c: sends the batch of every socket of the loop that has one (the
 * end-of-task work). Returns how many batches it sent. */
int rs__batches_flush(rs_loop *loop);
/* socket.c: frees what was closed during the iteration. */
void rs__loop_reap(rs_loop *loop);

#endif
