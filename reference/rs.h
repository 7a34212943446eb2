/*
 * rs.h: the wirecheck reference socket stack (librefstack).
 *
 * An epoll loop with a task model, and stream sockets (TCP and unix) with the
 * write semantics of node:net. Single-threaded. Every syscall goes through the
 * fault gate (faultinject/fi.h), from one file (io.c).
 *
 * Conventions:
 * - Functions that can fail return 0 (or a count) on success and -errno on
 *   failure. A call that takes a callback and fails never runs the callback.
 * - The task model: each callback the loop dispatches (an I/O event, a posted
 *   task) is one task. After it the loop runs the microtasks it queued (and
 *   those they queue), then the end-of-task work, then announces the end of
 *   the task to the task hook.
 * - A write callback, on_finish and end()'s callback run only once the kernel
 *   has every byte they cover, and never inside the call that queued them.
 */
#ifndef WIRECHECK_RS_H
#define WIRECHECK_RS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* ------------------------------------------------------------------------ */
/* Variants: the fixed strategy of each behaviour, or its legacy one.       */

enum rs_queue_strategy {
	RS_QUEUE_CURSOR,  /* fixed: consume advances a cursor */
	RS_QUEUE_MEMMOVE, /* legacy: move the unsent tail to the front */
};

enum rs_halfopen_strategy {
	RS_HALFOPEN_END_FIRST,  /* fixed: on_end, then the poll change */
	RS_HALFOPEN_POLL_FIRST, /* legacy: poll to writable, then on_end */
};

/* Chunked HTTP responses. */
enum rs_chunked_strategy {
	RS_CHUNKED_FIXED,    /* fixed: one write core; a large final chunk is
			      * head/header with MSG_MORE, then one writev */
	RS_CHUNKED_SEPARATE, /* legacy: header, body, terminator: 3 sends */
};

/* WebSocket framing (the oven-sh/bun pull request stacked on oven-sh/bun#44520):
 * the frame type of a send. */
enum rs_ws_strategy {
	RS_WS_BY_OPTION = 0, /* fixed: the binary option, else the kind; bytes
			      * as given */
	RS_WS_BY_KIND,       /* legacy: the kind; text decoded with U+FFFD */
};

struct rs_config {
	enum rs_queue_strategy queue;
	enum rs_halfopen_strategy halfopen;
	int batch;  /* 1 fixed: batch a task's later small writes; 0 legacy */
	enum rs_chunked_strategy chunked;
	enum rs_ws_strategy ws;  /* RS_WS_BY_OPTION (0) unless set */
};

/* Write batching (oven-sh/bun#45246): a write of at most RS_BATCH_MAX_WRITE
 * bytes without a callback, after the socket's first write of the task, is
 * held in the socket's batch, at most RS_BATCH_LIMIT bytes, which one send
 * takes at the end of the task. */
#define RS_BATCH_MAX_WRITE 16384
#define RS_BATCH_LIMIT 65536

/* Every fixed strategy: the defaults of rs_config. */
#define RS_CONFIG_DEFAULTS                                                  \
	{ .queue = RS_QUEUE_CURSOR, .halfopen = RS_HALFOPEN_END_FIRST,       \
	  .batch = 1, .chunked = RS_CHUNKED_FIXED }

/* The process-wide configuration; starts as RS_CONFIG_DEFAULTS. */
extern struct rs_config rs_config;

/*
 * Sets a variant of cfg by name and value ("queue", "memmove"). Returns 0,
 * or -ENOENT for an unknown name, -EINVAL for a value the name does not
 * take (cfg unchanged then). Known values: queue=cursor|memmove,
 * batch=on|off, halfopen=end-first|poll-first, chunked=fixed|separate,
 * ws=by-option|by-kind, and
 * the aliases fixed|legacy for each.
 */
int rs_variant_apply(struct rs_config *cfg, const char *name,
		     const char *value);
/* rs_variant_apply on the process-wide rs_config. */
int rs_variant_set(const char *name, const char *value);
/*
 * Writes every variant of cfg with its value, one "name=value" line each,
 * to buf (snprintf's contract).
 */
int rs_config_describe(const struct rs_config *cfg, char *buf, size_t len);
/* rs_config_describe of the process-wide rs_config. */
int rs_variant_describe(char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* The pending-write queue.                                                 */

struct rs__ring;

/*
 * Unsent bytes, in order. Copied bytes are [head, tail) of one buffer
 * buf[0, cap). Cursor strategy: consume advances head and moves nothing; an
 * append drops the sent prefix (moves the unsent bytes to the front) only
 * once head is at least as large as tail - head; an emptied buffer is freed.
 * Memmove strategy: consume moves the unsent bytes to the front every time.
 * Owned bytes (rs_queue_append_owned) stay in the caller's memory, in
 * order among the copied ones; the strategies never move them.
 */
struct rs_queue {
	char *buf;
	size_t head;
	size_t tail;
	size_t cap;
	enum rs_queue_strategy strategy;
	uint64_t bytes_moved;  /* bytes memmove'd inside the buffer */
	uint64_t allocations;  /* buffers allocated or grown (not segs) */
	uint64_t bytes_copied; /* bytes copied in by rs_queue_append */
	struct rs__ring *segs; /* the order of copied and owned runs, when
				* owned bytes share the queue with others;
				* NULL otherwise */
	size_t owned_len;      /* owned bytes held (0: buf alone) */
	const char *owned_at;  /* segs NULL, owned_len > 0: the queue is
				* one owned run, [owned_at, + owned_len) */
};

/* Initialises an empty queue that allocates nothing until an append. */
void rs_queue_init(struct rs_queue *q, enum rs_queue_strategy strategy);
/* Frees the buffer and forgets owned bytes. The counters stay. */
void rs_queue_free(struct rs_queue *q);
/* Unsent bytes, copied and owned. */
size_t rs_queue_len(const struct rs_queue *q);
/* Appends len bytes (copied; bytes_copied counts them). Returns 0, or
 * -ENOMEM (queue and counters unchanged). */
int rs_queue_append(struct rs_queue *q, const void *data, size_t len);
/*
 * Appends len bytes by reference: no copy; the queue keeps the pointer
 * until consume drops those bytes or the queue is freed, and never writes
 * through it. The caller keeps data valid (and, for the peer to get the
 * bytes of the call, unchanged) until then. bytes_copied does not change.
 * Returns 0, or -ENOMEM (queue unchanged).
 */
int rs_queue_append_owned(struct rs_queue *q, const void *data, size_t len);
/*
 * Appends the unsent bytes of src after its first skip, in order: its
 * copied bytes copied (counted in dst's bytes_copied), its owned bytes by
 * reference. src is unchanged. Returns 0, or -ENOMEM (dst then holds a
 * prefix of those bytes).
 */
int rs_queue_append_queue(struct rs_queue *dst, const struct rs_queue *src,
			  size_t skip);
/*
 * Points iov[0..max) at the unsent bytes, in order, one iovec per run (one
 * for a queue without owned bytes, since its bytes are contiguous). Returns
 * the number filled: 0 when empty or max <= 0; fewer than the runs when
 * max is reached. The pointers stay valid until the next append, consume
 * or free.
 */
int rs_queue_peekv(const struct rs_queue *q, struct iovec *iov, int max);
/* rs_queue_peekv with max 1: the first run of unsent bytes. */
int rs_queue_peek(const struct rs_queue *q, struct iovec *iov);
/* Drops the first n unsent bytes (n is clamped to the length); owned bytes
 * dropped are forgotten (the queue holds no pointer into them). */
void rs_queue_consume(struct rs_queue *q, size_t n);

/*
 * The replay probe: runs a schedule against a fresh queue of the given
 * strategy. Each step appends `append` bytes (a running byte pattern), then
 * consumes `consume` bytes. It reports how many unsent bytes changed address
 * across steps, and checks that the bytes leave in the order they came.
 */
struct rs_queue_step {
	size_t append;
	size_t consume;
};
struct rs_queue_probe {
	uint64_t unsent_moved;  /* unsent bytes whose address changed */
	uint64_t bytes_moved;
	uint64_t allocations;
	size_t max_cap;
	size_t final_len;
	int intact;             /* 1 when every byte left in order */
};
/* Returns 0 and fills *out, or -ENOMEM. */
int rs_queue_replay(enum rs_queue_strategy strategy,
		    const struct rs_queue_step *steps, size_t nsteps,
		    struct rs_queue_probe *out);

/* ------------------------------------------------------------------------ */
/* The loop and its task model.                                             */

typedef struct rs_loop rs_loop;
typedef struct rs_socket rs_socket;
typedef struct rs_listener rs_listener;

/* A task or microtask body. */
typedef void (*rs_task_fn)(rs_loop *loop, void *arg);

/*
 * Called at the end of every task, after its microtasks and end-of-task
 * work (the batches' sends). task is the task's number, counting from 1 in
 * dispatch order.
 */
typedef void (*rs_task_hook)(rs_loop *loop, uint64_t task, void *arg);

/* Creates a loop (an epoll instance). Returns 0 and sets *out, or -errno. */
int rs_loop_new(rs_loop **out);
/*
 * Frees a loop. Every socket and listener must be closed and the loop run
 * until it returned; otherwise returns -EBUSY and frees nothing.
 */
int rs_loop_free(rs_loop *loop);
/*
 * Runs the loop until no socket or listener is open and no task is posted.
 * Returns 0, or -errno when epoll_wait fails for good.
 */
int rs_loop_run(rs_loop *loop);
/* Posts a task: it runs in a later loop iteration, in posting order. 0/-ENOMEM. */
int rs_loop_post(rs_loop *loop, rs_task_fn fn, void *arg);
/*
 * Queues a microtask of the current task: it runs after the task's callback
 * and the microtasks queued before it. Outside a task it runs as a task of
 * its own at the next iteration. 0/-ENOMEM.
 */
int rs_microtask(rs_loop *loop, rs_task_fn fn, void *arg);
/* Sets the task hook (NULL to remove). */
void rs_loop_set_hook(rs_loop *loop, rs_task_hook hook, void *arg);
/* The number of the task that is running, or 0 between tasks. */
uint64_t rs_loop_task(const rs_loop *loop);

/* ------------------------------------------------------------------------ */
/* Stream sockets, with the write semantics of node:net.                    */

/* Event callbacks. Any may be NULL. Each runs inside a task. */
struct rs_socket_events {
	/* The socket is connected (a client socket; listeners' sockets are
	 * connected when on_connection sees them). */
	void (*on_connect)(rs_socket *s, void *arg);
	/* Bytes arrived; data is valid only during the call. */
	void (*on_data)(rs_socket *s, const char *data, size_t len, void *arg);
	/* The peer ended its side (FIN). Runs before the stack changes the
	 * socket's poll (halfopen=end-first); without allow_half_open the
	 * stack ends the socket after it, and writes fail with EPIPE. */
	void (*on_end)(rs_socket *s, void *arg);
	/* Every byte written has been taken by the kernel after a write that
	 * returned 0 (wait for drain); runs before the callbacks of the writes
	 * that completed with it, and never once end() was called (node 20). */
	void (*on_drain)(rs_socket *s, void *arg);
	/* end() was called and the kernel has every byte; our FIN is sent.
	 * Runs after end()'s callback (node 20's order). */
	void (*on_finish)(rs_socket *s, void *arg);
	/* The socket failed: code is a positive errno, syscall the call that
	 * failed ("send", "recv", "connect", "write" for a write after end). */
	void (*on_error)(rs_socket *s, int code, const char *syscall, void *arg);
	/* The socket is closed; had_error when on_error ran before. The socket
	 * is freed after this returns: do not use it again. */
	void (*on_close)(rs_socket *s, int had_error, void *arg);
};

struct rs_socket_options {
	int allow_half_open;  /* stay open after the peer's FIN */
	int rcvbuf;           /* SO_RCVBUF when > 0 */
	int sndbuf;           /* SO_SNDBUF when > 0 */
	int nodelay;          /* TCP_NODELAY on accepted TCP sockets (as node's
			       * http server does): no Nagle wait for a small
			       * send after an unacknowledged one */
};

/*
 * A write's callback: status 0 when the kernel has every byte of the write,
 * or -errno when the write failed or the socket was destroyed first.
 */
typedef void (*rs_write_cb)(rs_socket *s, int status, void *arg);

/* The default high-water mark of writable_length, as in node:net (16 KiB). */
#define RS_HIGH_WATER_MARK 16384

/*
 * Connects to a TCP address (numeric IPv4 host) or a unix socket path. The
 * socket is returned at once; writes before on_connect are queued. Returns 0
 * and sets *out, or -errno (no callback runs).
 */
int rs_connect_tcp(rs_loop *loop, const char *host, int port,
		   const struct rs_socket_options *opts,
		   const struct rs_socket_events *ev, void *arg,
		   rs_socket **out);
int rs_connect_unix(rs_loop *loop, const char *path,
		    const struct rs_socket_options *opts,
		    const struct rs_socket_events *ev, void *arg,
		    rs_socket **out);

/* Called for each accepted socket; the owner sets its events there. */
typedef void (*rs_connection_cb)(rs_listener *l, rs_socket *s, void *arg);

/*
 * Listens on a TCP address (port 0 picks one; rs_listener_port tells) or a
 * unix path. Accepted sockets take opts. Returns 0 or -errno.
 */
int rs_listen_tcp(rs_loop *loop, const char *host, int port,
		  const struct rs_socket_options *opts, rs_connection_cb cb,
		  void *arg, rs_listener **out);
int rs_listen_unix(rs_loop *loop, const char *path,
		   const struct rs_socket_options *opts, rs_connection_cb cb,
		   void *arg, rs_listener **out);
/* The bound TCP port, or -errno. */
int rs_listener_port(const rs_listener *l);
/* Closes a listener (freed at the end of the loop iteration). */
void rs_listener_close(rs_listener *l);

/* Sets the events and their argument of a socket (for accepted sockets). */
void rs_socket_set_events(rs_socket *s, const struct rs_socket_events *ev,
			  void *arg);

/*
 * Writes len bytes (copied when the kernel does not take them at once).
 * cb, when given, runs once the kernel has them, never inside this call.
 * With batching on (the default), a write of at most RS_BATCH_MAX_WRITE bytes
 * without cb, after the socket's first write of this task, is held in the
 * socket's batch and sent at the end of the task; held bytes do not count in
 * writable_length or bytes_written until then.
 * Returns 1 when writable_length stays under the high-water mark (keep
 * writing), 0 when the caller should wait for on_drain, or -errno when the
 * socket cannot write: -EPIPE after end() or the peer's end without
 * allow_half_open, -EBADF after destroy; then cb runs with that error in a
 * microtask and on_error follows.
 */
int rs_socket_write(rs_socket *s, const void *data, size_t len,
		    rs_write_cb cb, void *arg);
/*
 * An owned write: len bytes at data, handed to the stack by reference and
 * never copied (libuv's uv_write contract). The stack sends from data
 * itself, in this call or later, and holds the pointer until release runs;
 * bytes_copied does not grow.
 *
 * The caller must keep data valid and must not change its bytes until
 * release runs: the peer gets each byte as it is when the send that
 * carries it happens, so a byte changed after the call goes out changed
 * when the kernel did not take it in the call (a copying write sends the
 * bytes as they were at the call). After release the stack never reads
 * data again, and the caller may free or reuse it.
 *
 * release is required (-EINVAL, no callback, without it) and runs exactly
 * once, never inside this call, as the write's callback:
 * - status 0 once the kernel has every byte of this write, in the settle
 *   microtask: after on_drain, in write order among the callbacks of the
 *   other writes (a write's callback and the releases of the owned writes
 *   before it run before it), before end()'s callback and on_finish. A
 *   write the kernel takes whole in the call releases in this task's
 *   microtasks.
 * - the error (-EPIPE, -EBADF) in a microtask when the socket cannot write,
 *   as rs_socket_write's cb; the return value is then that error.
 * - when the socket fails or is destroyed before the kernel has every
 *   byte: the first pending write's callback gets the error, the others
 *   (this one among them) -ECANCELED, in write order, before on_error and
 *   on_close. The peer may have received a prefix of the bytes.
 * Order on the wire is the order of the calls, copying and owned alike:
 * - while corked, the owned bytes are held by reference in the cork
 *   buffer, among the copied ones; the last uncork sends them all in one
 *   call (a sendmsg with one run per owned write between copied runs).
 * - an owned write is never held in the batch (it has a callback): the
 *   bytes batched before it are sent first, then its own, each in a call.
 * - what the kernel does not take stays in the pending-write queue by
 *   reference, behind and before copied bytes; a writable event sends the
 *   runs in order, several in one sendmsg.
 * Owned bytes queued or corked count in writable_length, so the return
 * value is rs_socket_write's (1 keep writing, 0 wait for on_drain).
 */
int rs_socket_write_owned(rs_socket *s, const void *data, size_t len,
			  rs_write_cb release, void *arg);
/*
 * Writes len bytes (none when len is 0), then ends the write side: once
 * the kernel has every byte, shutdown(SHUT_WR), cb, then on_finish (node
 * 20's order). on_drain does not run once end() was called.
 * Returns 0, or -errno as rs_socket_write.
 */
int rs_socket_end(rs_socket *s, const void *data, size_t len, rs_write_cb cb,
		  void *arg);
/*
 * Closes at once: pending writes fail with -ECANCELED, on_close follows in
 * a microtask. code > 0 reports on_error(code, "destroy") first.
 */
void rs_socket_destroy(rs_socket *s, int code);
/* Ends, then destroys once finished. */
void rs_socket_destroy_soon(rs_socket *s);
/* Collects writes in user space until the matching uncork. Nests. */
void rs_socket_cork(rs_socket *s);
/* Ends one cork; the last one sends what was collected in one call. */
void rs_socket_uncork(rs_socket *s);
/* Stops and restarts reading (and on_data, on_end). */
void rs_socket_pause(rs_socket *s);
void rs_socket_resume(rs_socket *s);
/* Bytes the kernel has taken so far. */
uint64_t rs_socket_bytes_written(const rs_socket *s);
/* Bytes written but not yet taken by the kernel (queued or corked; bytes
 * held in the batch are not counted until the end of the task). */
size_t rs_socket_writable_length(const rs_socket *s);
/* The socket's fd, or -1 once closed. */
int rs_socket_fd(const rs_socket *s);
/* The queue's counters of this socket (bytes_moved, allocations,
 * bytes_copied): its pending-write queue alone. */
const struct rs_queue *rs_socket_queue(const rs_socket *s);
/*
 * Bytes the stack has copied for this socket so far: into its pending-write
 * queue (what the kernel did not take in the call), its cork buffer and its
 * batch, each copy counted (a byte corked, then queued after a short send at
 * uncork, counts twice). For writes that are neither corked nor batched it
 * equals the bytes the kernel did not take in the write's own call. Owned
 * writes (rs_socket_write_owned) add nothing.
 */
uint64_t rs_socket_bytes_copied(const rs_socket *s);

/* Queue counters of every socket closed so far (its pending-write queue,
 * cork buffer and batch summed), for end-of-run reports. */
struct rs_stats {
	uint64_t bytes_moved;
	uint64_t allocations;
	uint64_t bytes_copied;
};
extern struct rs_stats rs_stats;

/*
 * Raises sig at this process. When sig would end the process (its action is
 * the default and the default terminates), every socket's batch is sent
 * first, so that what was written before reaches the peer. A signal that
 * does nothing (ignored, ignored by default, or handled) flushes nothing.
 * Returns 0, or -EINVAL for a number kill() refuses (nothing is flushed).
 */
int rs_raise(int sig);
/* Sends every socket's batch, then abort(). */
void rs_abort(void) __attribute__((noreturn));
/* Sends every socket's batch, then exit(code). */
void rs_exit(int code) __attribute__((noreturn));
/* Sends every socket's batch, then execve(). Returns -errno if it fails. */
int rs_execve(const char *path, char *const argv[], char *const envp[]);

/* ------------------------------------------------------------------------ */
/* HTTP/1.1 on a stream socket, with chunked responses.                     */

/*
 * A connection that reads requests and answers them in order. Request
 * heads are parsed by reference/http_parse.h; a malformed head gets 400,
 * one over the bound 431, a Transfer-Encoding 501, a body over
 * RS_HTTP_MAX_BODY 413, each with "Connection: close", then the socket
 * ends. Pipelined requests wait: the next request's callback runs (in a
 * microtask) only once the response before it has ended.
 */
typedef struct rs_http_conn rs_http_conn;
typedef struct rs_http_res rs_http_res;
struct rs_http_request;

#define RS_HTTP_MAX_BODY (1024 * 1024)
/* Fixed strategy: a call whose bytes (head, framing, body, terminator) are
 * at most this many goes out as one send of one copied buffer; a larger
 * one sends head and chunk header with MSG_MORE, then body and terminator
 * in one sendmsg (docs/ARCHITECTURE.md, "Chunked responses"). 32 KiB by
 * measurement (bench/chunked_threshold): the sender's CPU per response is
 * lower copying up to 24 KiB, the two are within noise from 32 to 64 KiB,
 * and MSG_MORE + sendmsg is cheaper from 96 KiB. */
#define RS_HTTP_COPY_MAX 32768

/*
 * A request, head and body complete. req and body are valid during the
 * call only; res is the response to it, valid until the next request's
 * callback on the connection, or its close.
 */
typedef void (*rs_http_request_cb)(rs_http_conn *c, rs_http_res *res,
				   const struct rs_http_request *req,
				   const char *body, size_t body_len, void *arg);
/* The socket can take bytes again after a try_write returned 0; offset
 * is rs_http_res_offset. Runs inside the writable event's task. */
typedef void (*rs_http_writable_cb)(rs_http_res *res, uint64_t offset,
				    void *arg);

/*
 * Serves HTTP on s (an accepted socket). ev, when not NULL, still gets the
 * socket's events (on_data included, as bytes arrive, before they are
 * parsed); on_close frees the connection after ev's on_close returns.
 * max_head bounds a request head (0: RS_HTTP_MAX_HEAD). Returns 0 and sets
 * *out, or -ENOMEM (s unchanged).
 */
int rs_http_attach(rs_socket *s, size_t max_head,
		   const struct rs_socket_events *ev, void *ev_arg,
		   rs_http_request_cb cb, void *arg, rs_http_conn **out);
/* The connection's socket, or NULL once closed. */
rs_socket *rs_http_socket(const rs_http_conn *c);

/*
 * Sets the status line and extra header lines ("Name: value\r\n" each;
 * NULL for none) of res. The head also says "Transfer-Encoding: chunked",
 * and "Connection: close" when the request did not keep the connection
 * alive. It goes out with the first bytes of the body (or the terminator).
 * Returns 0, -EALREADY once bytes went out, -EINVAL for a status outside
 * 100-999 or headers without a final CRLF, -ENOMEM.
 */
int rs_http_res_head(rs_http_res *res, int status, const char *headers);

/*
 * write(): a chunk of len bytes (none for 0), queued when the kernel does
 * not take it (node semantics: cb runs once the kernel has it). A chunk
 * left open by a try_write that returned 0 is continued: data must start
 * with its rest (len >= that rest; more starts a new chunk).
 * Returns 1 (keep writing), 0 (wait for drain: the socket's on_drain), or
 * -EPIPE after the response ended, -EINVAL when the data breaks the
 * framing, -EBADF when the socket is closed or failed. Unlike
 * rs_socket_write, a negative return means cb never runs: arg stays the
 * caller's.
 */
int rs_http_res_write(rs_http_res *res, const void *data, size_t len,
		      rs_write_cb cb, void *arg);

/*
 * try_write(data, final_chunk): sends what the kernel takes now and never
 * queues body bytes. Returns 1 when every body byte of data is out (and,
 * with final, the response has ended: a terminator the kernel did not take
 * whole is completed internally), 0 when not: rs_http_res_offset says how
 * many body bytes are out, and on writable (rs_http_res_on_writable) the
 * caller resumes with the rest of data, which continues the same chunk
 * without a second header; or -EPIPE, -EINVAL, -EBADF as write().
 * Backpressure shows in this call: with bytes queued before it, it
 * sends nothing and returns 0.
 */
int rs_http_res_try_write(rs_http_res *res, const void *data, size_t len,
			  int final_chunk);

/*
 * end(): the last chunk (len may be 0) and the terminator, queued as
 * write() does; the response ends. cb runs once the kernel has every byte.
 * Returns 0, or -EPIPE, -EINVAL, -EBADF as write().
 */
int rs_http_res_end(rs_http_res *res, const void *data, size_t len,
		    rs_write_cb cb, void *arg);

/* Body bytes out so far (framing not counted): the public write offset. */
uint64_t rs_http_res_offset(const rs_http_res *res);
/* Whether the response has ended (end(), or a final try_write that
 * returned 1). */
int rs_http_res_ended(const rs_http_res *res);
/* Sets the writable callback of res (NULL to remove). */
void rs_http_res_on_writable(rs_http_res *res, rs_http_writable_cb cb,
			     void *arg);
/* WebSocket sockets (RFC 6455) on a stream socket.                         */
/*
 * The frame codec, the UTF-8 validator and the handshake are in
 * ws_frame.h and utf8.h: code with no I/O that a fuzzer or a unit test
 * drives alone. This is the socket on top: the handshake on the stream
 * socket, a typed send queue, and the receive side's events.
 */

typedef struct rs_ws rs_ws;

/* A data message, a ping or a pong: valid only during the callback. */
struct rs_ws_message {
	int opcode;            /* 1 text, 2 binary; 9 ping, 10 pong */
	const uint8_t *data;
	size_t len;
	uint32_t frames;       /* how many frames it came in */
	uint64_t offset;       /* stream offset (after the handshake) of the
				* frame that completed it */
};

/* Events of a WebSocket socket. Any may be NULL. Each runs in a task. */
struct rs_ws_events {
	/* The handshake is done: sends that waited go out now. */
	void (*on_open)(rs_ws *ws, void *arg);
	/* A whole data message (inflated when it came compressed; text
	 * already checked as UTF-8). */
	void (*on_message)(rs_ws *ws, const struct rs_ws_message *m, void *arg);
	/* A ping (its pong is already written) or a pong. */
	void (*on_ping)(rs_ws *ws, const struct rs_ws_message *m, void *arg);
	void (*on_pong)(rs_ws *ws, const struct rs_ws_message *m, void *arg);
	/* The peer's close frame: its code (1005 without one) and reason.
	 * When we had not sent one, the answer (the same code) follows, behind
	 * the messages that wait; then the stream ends. */
	void (*on_peer_close)(rs_ws *ws, int code, const uint8_t *reason,
			      size_t len, void *arg);
	/* The peer broke the protocol, or the handshake failed: code is the
	 * close code this side sent (1002, 1007, 1009, 1011) or, in the
	 * handshake, the HTTP status (400, 426, 431) or 1002 for a bad
	 * answer at a client. The stream is ended after it (a server's
	 * refusal closes once its answer is out, as npm ws's does). */
	void (*on_error)(rs_ws *ws, int code, const char *problem, void *arg);
	/* Legacy (ws=by-kind) only: send number `number` (counted from 1
	 * over every rs_ws_send call) waited in the queue and was refused
	 * when the queue tried to send it (err -EINVAL); it stays at the head,
	 * and the queue stalls behind it. */
	void (*on_send_error)(rs_ws *ws, int number, int err, void *arg);
	/* The stream socket closed. code: the peer's close code, or 1006
	 * when no close frame came; dropped: messages that still waited and
	 * never went out. ws is freed after this returns. */
	void (*on_close)(rs_ws *ws, int code, size_t dropped, void *arg);
};

/*
 * permessage-deflate (RFC 7692), as npm ws's perMessageDeflate option
 * (zero: off). A client offers it, a server accepts an offer; the
 * parameters follow npm ws's rules (lib/permessage-deflate.js offer(),
 * acceptAsServer(), acceptAsClient(); ws_deflate.h). Each parameter takes
 * npm ws's values: 0 not given (undefined), RS_WS_DEFLATE_TRUE, and
 * RS_WS_DEFLATE_FALSE; a window size also 8 to 15. What `false` does, as
 * in npm ws:
 *   server_no_context_takeover: a server refuses offers that ask for it.
 *   client_no_context_takeover: a client refuses an answer that has it.
 *   server_max_window_bits: a server refuses offers that have it; a
 *     client does not offer it (as when not given).
 *   client_max_window_bits: a client does not offer it and refuses an
 *     answer that has it; a server leaves it out of its answer.
 * `true` is as not given, but for the client's offer of
 * server_max_window_bits: offered without a value (which servers,
 * npm ws's and this one, refuse).
 */
#define RS_WS_DEFLATE_FALSE (-1)
#define RS_WS_DEFLATE_TRUE 1

struct rs_ws_deflate_options {
	int enabled;                     /* 1: offer (client), accept (server) */
	int server_no_context_takeover;  /* TRUE: ask for it (client), grant it
					  * (server); FALSE; 0 */
	int client_no_context_takeover;
	int server_max_window_bits;      /* 0: not given; 8 to 15; TRUE;
					  * FALSE */
	int client_max_window_bits;      /* 0: not given (a client offers the
					  * parameter without a value); 8 to
					  * 15; TRUE; FALSE */
	size_t threshold;                /* with no context takeover, messages
					  * under this are not compressed;
					  * 0: npm ws's 1024 */
};

struct rs_ws_options {
	int server;            /* 1: answer an Upgrade; 0: send one, mask */
	uint64_t seed;         /* the mask keys' (and the client key's) seed */
	uint64_t max_message;  /* larger messages close 1009; 0: 100 MiB,
				* npm ws's default maxPayload */
	const char *host;      /* client: the Host header ("localhost") */
	const char *path;      /* client: the request target ("/") */
	const struct rs_config *config;  /* the strategy; NULL: rs_config */
	struct rs_ws_deflate_options deflate;  /* permessage-deflate */
};

/* send()'s options, as npm ws's: binary RS_WS_BINARY_ABSENT (-1), 0 or
 * 1; fin 0 sends a fragment (the message goes on with the next send);
 * no_compress 1 is npm ws's `compress: false`: the message goes out
 * uncompressed (no RSV1) even with permessage-deflate agreed, and 0 (the
 * default, `compress: true`) compresses by npm ws's rule (ws_deflate.h,
 * rs_ws_deflate_wanted). As in npm ws's sender, a message's first frame
 * decides for the whole message: the option of a later fragment is
 * checked (0 or 1) but not used. Zero-initialised options are npm ws's
 * defaults but for fin: write them with designated initializers. */
struct rs_ws_send_options {
	int binary;
	int fin;
	int no_compress;
};

/*
 * Makes s a WebSocket socket: the ws takes over s's events (do not set
 * them again) and frees itself when s closes, after on_close. A client
 * writes its Upgrade request at once (with o->deflate enabled, offering
 * permessage-deflate). Returns 0 and sets *out, or -ENOMEM, -ENOSPC (a
 * host or path too long for the request) or -EINVAL (a deflate
 * parameter that is not one of npm ws's values: a window outside 8..15,
 * ws_deflate.h rs_ws_deflate_options_check).
 */
int rs_ws_attach(rs_socket *s, const struct rs_ws_options *o,
		 const struct rs_ws_events *ev, void *arg, rs_ws **out);
/*
 * Sends one message (or fragment) of len bytes of data, of kind
 * RS_WS_KIND_TEXT or RS_WS_KIND_BYTES; o NULL means no options (binary
 * absent, fin 1). The frame type is npm ws's rule (ws_frame.h,
 * rs_ws_message_type), or the kind on the legacy; the payload goes out as
 * given (the legacy decodes text with U+FFFD).
 * The frame goes to the stream socket in the call when nothing waits;
 * while the handshake is not done, or messages wait (the kernel refused
 * bytes and the stream socket still holds some), it waits at the end of
 * the queue, with its own frame type and options, and goes out in order
 * once the stream socket has sent what it holds. Returns 1 when the frame went to
 * the stream socket, 0 when it waits, -EINVAL for a bad kind or option or
 * NULL data with len > 0 (refused at the call, nothing queued; the
 * legacy queues a bad call that finds messages waiting, and refuses it
 * only when the queue reaches it: on_send_error), -EPIPE once a close
 * frame was sent or received, -ENOMEM.
 */
int rs_ws_send(rs_ws *ws, const void *data, size_t len, int kind,
	       const struct rs_ws_send_options *o);
/* Sends a ping of at most 125 bytes, ahead of the waiting messages.
 * Returns 1, -EINVAL (over 125), -EPIPE or -ENOMEM. */
int rs_ws_ping(rs_ws *ws, const void *data, size_t len);
/*
 * Starts the close handshake: a close frame with code (0: none) and a
 * reason of at most 123 bytes, behind the messages that wait. Later sends
 * fail with -EPIPE. The stream is ended (FIN) once both close frames are
 * through: ours written and the peer's read (npm ws does the same, and
 * gives up after 30 s; this stack has no timer: a peer that never answers
 * keeps the socket open). Returns 0, -EINVAL for a code that may not be
 * sent or a reason that is too long or not UTF-8, -EPIPE when a close was
 * already sent.
 */
int rs_ws_close(rs_ws *ws, int code, const void *reason, size_t len);
/*
 * Bytes that wait, as npm ws's bufferedAmount: what the stream socket
 * holds (frames, headers included) plus the payload bytes of the messages
 * in the queue.
 */
size_t rs_ws_buffered_amount(const rs_ws *ws);
/* Messages waiting in the queue (not yet handed to the stream socket). */
size_t rs_ws_waiting(const rs_ws *ws);
/*
 * Whether the connection closed cleanly, as npm ws's CloseEvent.wasClean
 * (RFC 6455 7.1.4: the closing handshake completed): 1 when the peer's
 * close frame came and ours went out whole (the stream socket ended with
 * every byte, our close frame among them, taken by the kernel), else 0.
 * Meant for on_close, whose code stays the peer's when the peer's close
 * came (RFC 6455 7.1.5), even when the answer could not be sent: then
 * this says 0, as npm ws gives the peer's code with wasClean false.
 */
int rs_ws_was_clean(const rs_ws *ws);
/* The stream socket under ws. */
rs_socket *rs_ws_socket(const rs_ws *ws);

/*
 * Groups: one message to many sockets, as uWebSockets' publish
 * to a topic (Bun's server.publish). The frame is encoded once; the first
 * publish of a loop iteration corks every member and posts a task
 * (rs_loop_post) that uncorks them, so each member's frames of the
 * iteration (and of the next poll's tasks, which run before that task)
 * leave in one write. Each member gets the bytes, in the same order, that
 * rs_ws_send(member, data, len, kind, NULL) would give it; its own sends
 * meanwhile keep their place among them. A member must be removed at the
 * latest in its on_close.
 */
typedef struct rs_ws_group rs_ws_group;
/* An empty group on loop. 0 and *out, or -ENOMEM. */
int rs_ws_group_new(rs_loop *loop, rs_ws_group **out);
/* Frees g (the members stay open; their held bytes go out now). */
void rs_ws_group_free(rs_ws_group *g);
/* Adds ws as the last member (0 when it is one already). 0/-ENOMEM. */
int rs_ws_group_add(rs_ws_group *g, rs_ws *ws);
/* Removes ws (nothing when it is not a member); its held bytes go out. */
void rs_ws_group_remove(rs_ws_group *g, rs_ws *ws);
/* The number of members. */
size_t rs_ws_group_size(const rs_ws_group *g);
/*
 * Sends one message of kind RS_WS_KIND_TEXT or RS_WS_KIND_BYTES (binary
 * absent, fin) to every member, in the order they were added. Returns how
 * many members took it (rs_ws_send's 1 or 0; a member that refused it,
 * closing, is left out), -EINVAL for a bad kind or NULL data with len > 0,
 * -ENOMEM.
 */
int rs_ws_publish(rs_ws_group *g, const void *data, size_t len, int kind);

#endif
