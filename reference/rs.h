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

struct rs_config {
	enum rs_queue_strategy queue;
	enum rs_halfopen_strategy halfopen;
	int batch;  /* 1 fixed: batch a task's later small writes; 0 legacy */
};

/* Write batching (reference-prs/000): a write of at most RS_BATCH_MAX_WRITE
 * bytes without a callback, after the socket's first write of the task, is
 * held in the socket's batch, at most RS_BATCH_LIMIT bytes, which one send
 * takes at the end of the task. */
#define RS_BATCH_MAX_WRITE 16384
#define RS_BATCH_LIMIT 65536

/* Every fixed strategy: the defaults of rs_config. */
#define RS_CONFIG_DEFAULTS                                                  \
	{ .queue = RS_QUEUE_CURSOR, .halfopen = RS_HALFOPEN_END_FIRST,       \
	  .batch = 1 }

/* The process-wide configuration; starts as RS_CONFIG_DEFAULTS. */
extern struct rs_config rs_config;

/*
 * Sets a variant of cfg by name and value ("queue", "memmove"). Returns 0,
 * or -ENOENT for an unknown name, -EINVAL for a value the name does not
 * take (cfg unchanged then). Known values: queue=cursor|memmove,
 * batch=on|off, halfopen=end-first|poll-first, and the aliases fixed|legacy
 * for each.
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
	struct rs__ring *segs; /* the order of copied and owned runs; NULL
				* while no owned byte is held */
	size_t owned_len;      /* owned bytes held */
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

/* Phases reported to the task hook. */
enum rs_task_phase { RS_TASK_BEGIN, RS_TASK_END };
/*
 * Called at the start of every task (before its callback) and at its end
 * (after its microtasks and end-of-task work). task is the task's number,
 * counting from 1 in dispatch order.
 */
typedef void (*rs_task_hook)(rs_loop *loop, uint64_t task,
			     enum rs_task_phase phase, void *arg);

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

#endif
