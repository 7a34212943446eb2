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
#include <sys/un.h>
#include <netinet/in.h>

/* Keeps a function out of its caller: the rare branch of a hot function
 * (the queue's walk over owned segments) then costs the common branch no
 * saved registers or frame, which inlined it does (docs/queue-model.md,
 * "Sender cost"). */
#define RS__OUT_OF_LINE __attribute__((noinline))

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
/* Chunked responses: send and sendmsg with MSG_MORE when more
 * is set (the kernel may hold the bytes for the ones that follow). */
ssize_t rs__io_send_more(int fd, const void *buf, size_t len, int more);
/* TCP_NODELAY on fd; 0 also for a socket that is not TCP (a unix one). */
int rs__io_nodelay(int fd);
ssize_t rs__io_sendv_more(int fd, const struct iovec *iov, int iovcnt,
			  int more);

/* ring.c: a FIFO of fixed-size items (the loop's task queues, a socket's
 * write requests). A zeroed ring is not ready: rs__ring_init first.
 *
 * The first items live inside the ring itself (RS__RING_INLINE bytes), so
 * that a socket's first write request and a loop's first microtask
 * allocate nothing: those two mallocs were most of the fixed cost of an
 * end(P) (docs/queue-model.md, "Sender cost"). The capacity is a power of
 * two, so that an index is a mask and not a division. A ring holds a
 * pointer into itself: it is never copied or moved once initialised. */
#define RS__RING_INLINE 64
struct rs__ring {
	unsigned char *items; /* the inline slots, or a heap array */
	size_t item_size;
	size_t first_cap;  /* items of the first heap allocation */
	size_t head;
	size_t len;        /* items held */
	size_t cap;        /* a power of two */
	unsigned char slots[RS__RING_INLINE]
		__attribute__((aligned(sizeof(void *) * 2)));
};
/* An empty ring of item_size-byte items (at most RS__RING_INLINE) that
 * allocates nothing yet; first_cap (a power of two) is the capacity of its
 * first heap array, once the inline slots are full. */
void rs__ring_init(struct rs__ring *r, size_t item_size, size_t first_cap);
/* Frees the items; the ring is empty and ready again. */
void rs__ring_free(struct rs__ring *r);
/* Makes room for one more item, so that the next push cannot fail.
 * Returns 0, or -ENOMEM with the ring unchanged. */
int rs__ring_reserve(struct rs__ring *r);
/* Copies *item in at the back (push) or the front (push_front). Returns 0,
 * or -ENOMEM with the ring unchanged. */
int rs__ring_push(struct rs__ring *r, const void *item);
int rs__ring_push_front(struct rs__ring *r, const void *item);
/* The item i places from the front (i < len); valid until the next push. */
void *rs__ring_at(const struct rs__ring *r, size_t i);
/* rs__ring_at without the call (and without its assert): the pending-write
 * queue reads its segments on every send. */
static inline void *rs__ring_item(const struct rs__ring *r, size_t i)
{
	return r->items + ((r->head + i) & (r->cap - 1)) * r->item_size;
}
/* The front item (len > 0) as a T *, T the ring's item type: head is
 * always below cap, so no mask, and sizeof(T) is a constant where
 * rs__ring_item reads item_size (the writable event's settle test reads
 * the front write request). */
#define RS__RING_FRONT(r, T) ((T *)(void *)(r)->items + (r)->head)
/* Copies the front item to *out and drops it (len > 0). */
void rs__ring_pop(struct rs__ring *r, void *out);
/* The front item (len > 0), dropped: the caller reads it before the next
 * push. rs__ring_pop without the copy, for the loop's tasks and the
 * socket's write requests, which read their items in place. */
static inline void *rs__ring_take(struct rs__ring *r)
{
	void *item = rs__ring_item(r, 0);

	r->head = (r->head + 1) & (r->cap - 1);
	r->len--;
	return item;
}
/* The slot at the back, counted as held (len < cap): the caller fills it
 * before anything else reads the ring. rs__ring_push's common case. */
static inline void *rs__ring_back(struct rs__ring *r)
{
	return rs__ring_item(r, r->len++);
}

/*
 * queue.c, on the write path: rs_queue_peekv and rs_queue_consume with their
 * common case inline. sock_flush calls the pair once per writable event
 * (once per send under the memmove strategy), sock_send_raw once per
 * write; as calls into queue.c they cost about 30 instructions where the
 * plain send loop's whole work per send is about 24 (docs/queue-model.md,
 * "Sender cost").
 * Inline here is only a queue without owned bytes (one run of buf) and, for
 * consume, a partial send under the cursor strategy (head moves, nothing
 * else) or of the one owned run (its start moves); everything else is the
 * functions themselves, so the two never disagree.
 */
static inline int rs__queue_peekv(const struct rs_queue *q, struct iovec *iov,
				  int max)
{
	if (q->owned_len || max <= 0)
		return rs_queue_peekv(q, iov, max);
	if (q->head == q->tail)
		return 0;
	iov[0].iov_base = q->buf + q->head;
	iov[0].iov_len = q->tail - q->head;
	return 1;
}

static inline void rs__queue_consume(struct rs_queue *q, size_t n)
{
	if (!q->owned_len && q->strategy == RS_QUEUE_CURSOR &&
	    n < q->tail - q->head) {
		q->head += n;
	} else if (q->owned_len && !q->segs && n < q->owned_len) {
		q->owned_at += n;  /* the one owned run, sent in part */
		q->owned_len -= n;
	} else {
		rs_queue_consume(q, n);
	}
}

/* rs_queue_len inline: the write path asks it of three queues per write. */
static inline size_t rs__queue_len(const struct rs_queue *q)
{
	return q->tail - q->head + q->owned_len;
}

/* rs_queue_append_owned with its common case inline: an empty queue (no
 * ring either: the ring lives only while owned bytes do) takes the run as
 * its one owned run, as the function does. The owned write's first send
 * leaves its rest here. */
static inline int rs__queue_append_owned(struct rs_queue *q, const void *data,
					 size_t len)
{
	if (len == 0 || rs__queue_len(q) != 0)
		return rs_queue_append_owned(q, data, len);
	q->owned_at = data;
	q->owned_len = len;
	return 0;
}

/*
 * Room for len (> 0) more copied bytes at the end of q, as rs_queue_append
 * of len bytes would make it (growth, compaction, counters, the copied run
 * among owned ones): returns where the caller writes exactly len bytes,
 * before any other call on q, or NULL with q unchanged (-ENOMEM). It is
 * rs_queue_append without the copy, so that a caller that builds its bytes
 * (a WebSocket frame's header and payload) builds them in place.
 */
char *rs__queue_room_slow(struct rs_queue *q, size_t len);
/* rs__queue_room with the common case inline: a queue of copied bytes
 * alone whose buffer has the room and nothing to compact (head 0). */
static inline char *rs__queue_room(struct rs_queue *q, size_t len)
{
	char *p;

	if (q->owned_len || q->head != 0 || len > q->cap - q->tail)
		return rs__queue_room_slow(q, len);
	p = q->buf + q->tail;
	q->tail += len;
	q->bytes_copied += len;
	return p;
}

/* What an epoll registration points at: a socket or a listener, whose
 * struct begins with it. */
enum rs__handle_kind { RS__SOCKET, RS__LISTENER };
struct rs__handle {
	enum rs__handle_kind kind;
	/* Runs an epoll event of the handle, as one task of its loop. */
	void (*dispatch)(struct rs__handle *h, uint32_t events);
	uint64_t order;   /* creation order: the loop dispatches by it */
	struct rs__handle *next_closed;  /* in the loop's closed list */
};
/* Sets h's kind and dispatch, and gives it the next creation number. */
void rs__handle_init(struct rs__handle *h, enum rs__handle_kind kind,
		     void (*dispatch)(struct rs__handle *h, uint32_t events));

/* loop.c */
struct rs__task {
	rs_task_fn fn;
	void *arg;
};
struct rs_loop {
	int epfd;
	uint64_t task;          /* number of the last task started */
	int in_task;
	int handles;            /* open sockets and listeners */
	struct rs__ring posted; /* of struct rs__task */
	struct rs__ring micro;  /* of struct rs__task */
	rs_task_hook hook;
	void *hook_arg;
	/* The sockets and listeners closed during the iteration, freed at
	 * its end: one list, so that the loop tests one field. */
	struct rs__handle *closed;
};
/* Puts a closed socket's or listener's handle on the loop's list, to be
 * freed at the end of the iteration. */
static inline void rs__loop_closed(rs_loop *loop, struct rs__handle *h)
{
	h->next_closed = loop->closed;
	loop->closed = h;
}
/* Runs fn(arg) as one task: its body, microtasks and end-of-task work,
 * then the task hook. */
void rs__loop_task(rs_loop *loop, rs_task_fn fn, void *arg);
/* A task at the back of q (a loop's posted or micro ring): in a free slot
 * in place, else through rs__ring_push, which grows the ring. Returns 0 or
 * -ENOMEM. Inline: the write path queues its settle microtask with it at
 * every writable event. */
static inline int rs__task_push(struct rs__ring *q, rs_task_fn fn, void *arg)
{
	struct rs__task t = { fn, arg };

	if (q->len < q->cap) {
		((struct rs__task *)q->items)[(q->head + q->len++) &
					      (q->cap - 1)] = t;
		return 0;
	}
	return rs__ring_push(q, &t);
}
/* The front task of q (len > 0), dropped. */
static inline struct rs__task rs__task_pop(struct rs__ring *q)
{
	struct rs__task t = ((struct rs__task *)q->items)[q->head];

	q->head = (q->head + 1) & (q->cap - 1);
	q->len--;
	return t;
}
/* rs_microtask, inline (rs.h has its contract). */
static inline int rs__microtask(rs_loop *loop, rs_task_fn fn, void *arg)
{
	return rs__task_push(loop->in_task ? &loop->micro : &loop->posted, fn,
			     arg);
}

/* address.c: a numeric IPv4 host and a port (-EINVAL for anything else),
 * or a unix path (-ENAMETOOLONG when it does not fit). Return 0 or -errno. */
int rs__address_tcp(const char *host, int port, struct sockaddr_in *sin);
int rs__address_unix(const char *path, struct sockaddr_un *sun);

/* socket.c and its other files (socket_internal.h): the stream socket. */
/* An epoll event of socket h, as one task of its loop (socket.c; the
 * socket's handle's dispatch). */
void rs__socket_dispatch(struct rs__handle *h, uint32_t events);
/*
 * Takes fd, a connection the listener of loop accepted, as a socket with
 * opts: registered for reading, counted among the loop's handles. Returns 0
 * and sets *out, or -errno with fd closed (socket_open.c).
 */
int rs__socket_accepted(rs_loop *loop, int fd,
			const struct rs_socket_options *opts, rs_socket **out);
/* Sends the batch of s (batch.c calls it for each listed socket). */
void rs__socket_batch_flush(rs_socket *s);
/* Frees a socket that closed (the loop, at the end of the iteration;
 * socket_open.c). */
void rs__socket_free(rs_socket *s);
/*
 * A write of hlen (at most 4) header bytes, the first in the low byte of
 * head, followed by len bytes of data, hlen + len at most RS__PAIR_MAX,
 * without a callback: the same bytes, calls and syscalls as
 * rs_socket_write(s, header and data in one buffer, NULL, NULL). When that
 * write would be held in the batch, the bytes are built there in place (no
 * buffer of the caller's, one copy) and it returns RS__WRITE_BATCHED: the
 * write queued nothing (rs_socket_writable_length is unchanged, 0).
 * Otherwise it returns what rs_socket_write returned (1, 0, or -errno),
 * or -EINVAL for a header or payload over the limits.
 */
#define RS__PAIR_MAX 256
#define RS__WRITE_BATCHED 2
int rs__socket_write_pair(rs_socket *s, uint32_t head, size_t hlen,
			  const void *data, size_t len);

/* socket_try.c: optional writes, for chunked responses. */
/* Called on a writable event after rs__socket_want_writable, once nothing
 * is queued: runs inside that event's task. */
typedef void (*rs__writable_fn)(rs_socket *s, void *arg);
/* The loop of s. */
rs_loop *rs__socket_loop(const rs_socket *s);
/* Sets the writable hook of s (NULL to remove). */
void rs__socket_on_writable(rs_socket *s, rs__writable_fn fn, void *arg);
/* Asks for one writable hook call (the poll gains EPOLLOUT). */
void rs__socket_want_writable(rs_socket *s);
/* Whether an optional write can go to the kernel now: open, connected,
 * not corked, not ended, nothing queued (the batch is sent first). */
int rs__socket_can_try(const rs_socket *s);
/* Whether s was destroyed (it fails every write with -EBADF). */
int rs__socket_destroyed(const rs_socket *s);
/*
 * Sends the iovecs in one send (n == 1) or sendmsg, with MSG_MORE when
 * more, and never queues: returns the bytes the kernel took (counted in
 * bytes_written), 0 when it took none or the socket cannot try now
 * (rs__socket_can_try), or -errno when the socket failed (it is destroyed:
 * on_error and on_close follow). With mark, a send that took less than
 * asked marks the socket as wanting writable (rs__socket_want_writable):
 * the seed's companion fix, which WIRECHECK_TEST_NO_WRITABLE_MARK (tests
 * only) removes for sends of several buffers.
 */
ssize_t rs__socket_try_sendv(rs_socket *s, const struct iovec *iov, int n,
			     int more, int mark);
/*
 * Appends the iovecs to the pending-write queue (the cork buffer when
 * corked) without trying the kernel: the rest of a write of write_len
 * bytes whose first bytes rs__socket_try_sendv sent, with node's semantics
 * (the return value compares write_len with the high-water mark; cb runs
 * once the kernel has every byte; drain). Returns 1 or 0 as
 * rs_socket_write, or -EBADF on a destroyed socket (cb fails then).
 */
int rs__socket_queue_iov(rs_socket *s, const struct iovec *iov, int n,
			 size_t write_len, rs_write_cb cb, void *arg);

/* listener.c */
/* Frees a listener that closed (the loop, at the end of the iteration). */
void rs__listener_free(rs_listener *l);

/* batch.c: the process-wide list of sockets whose batch holds bytes, so
 * that the end of a task, and rs_exit, rs_abort, rs_raise and rs_execve,
 * reach every batch. A socket embeds its link. */
struct rs__batch_link {
	rs_socket *socket;
	rs_loop *loop;
	struct rs__batch_link *next;
	int listed;
};
/* Puts the link (socket, loop set) on the list unless it is there. */
void rs__batch_list(struct rs__batch_link *l);
/* Takes the link off the list (nothing when it is not on it). */
void rs__batch_unlist(struct rs__batch_link *l);
/* Sends the batch of every listed socket of loop (the end-of-task work).
 * Returns how many batches it sent. */
int rs__batches_flush(rs_loop *loop);
/* The list's head, NULL when no batch holds bytes: the loop tests it at
 * the end of every task before it calls rs__batches_flush. */
extern struct rs__batch_link *rs__batched;

/* ws.c, for ws_group.c: a member's write of the group's frame; and the
 * hold of its stream socket while the group keeps it corked (on 1), then
 * (on 0, after the uncork) the watch of what the kernel did not take. */
int rs__ws_send_frame(rs_ws *ws, const void *frame, size_t n,
		      const void *data, size_t len, int kind);
void rs__ws_hold(rs_ws *ws, int on);

#endif
