/*
 * loop.c: the epoll loop and its task model.
 *
 * One iteration: wait for I/O (without blocking when tasks are posted),
 * dispatch each ready handle as one task, then run the tasks that were posted
 * before the iteration began, each as one task, then free what was closed.
 * A task is: the hook's BEGIN, the callback, its microtasks until none is
 * left, the hook's END. Later behaviours put their end-of-task work (batch
 * flushes) between the microtasks and END.
 */
#include "rs_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* At most this many events per wait; more wait for the next iteration, so
 * that posted tasks are not starved by a flood of ready sockets. */
#define RS_LOOP_MAX_EVENTS 64

struct rs_config rs_config = RS_CONFIG_DEFAULTS;
struct rs_stats rs_stats;

/* Frees the sockets and listeners closed during the iteration. */
static void loop_reap(rs_loop *loop)
{
	while (loop->closed) {
		struct rs__handle *h = loop->closed;

		loop->closed = h->next_closed;
		if (h->kind == RS__LISTENER)
			rs__listener_free((rs_listener *)h);
		else
			rs__socket_free((rs_socket *)h);
	}
}

int rs_loop_new(rs_loop **out)
{
	rs_loop *loop = calloc(1, sizeof(*loop));
	int fd;

	if (!loop)
		return -ENOMEM;
	fd = rs__io_epoll_create();
	if (fd < 0) {
		free(loop);
		return fd;
	}
	loop->epfd = fd;
	rs__ring_init(&loop->posted, sizeof(struct rs__task), 16);
	rs__ring_init(&loop->micro, sizeof(struct rs__task), 16);
	*out = loop;
	return 0;
}

int rs_loop_free(rs_loop *loop)
{
	if (loop->handles > 0 || loop->posted.len > 0 || loop->micro.len > 0)
		return -EBUSY;
	loop_reap(loop);
	(void)close(loop->epfd);
	rs__ring_free(&loop->posted);
	rs__ring_free(&loop->micro);
	free(loop);
	return 0;
}

void rs_loop_set_hook(rs_loop *loop, rs_task_hook hook, void *arg)
{
	loop->hook = hook;
	loop->hook_arg = arg;
}

uint64_t rs_loop_task(const rs_loop *loop)
{
	return loop->in_task ? loop->task : 0;
}

int rs_loop_post(rs_loop *loop, rs_task_fn fn, void *arg)
{
	return rs__task_push(&loop->posted, fn, arg);
}

int rs_microtask(rs_loop *loop, rs_task_fn fn, void *arg)
{
	return rs__microtask(loop, fn, arg);
}

/* The microtasks, then the end-of-task work (the batches' sends), whose
 * completions may queue microtasks again. loop_task tests first whether
 * there is either: a writable event that leaves nothing to settle (a large
 * write draining) has neither. */
static inline __attribute__((always_inline)) void
loop_task_settle(rs_loop *loop)
{
	do {
		while (loop->micro.len > 0) {
			struct rs__task t = rs__task_pop(&loop->micro);

			t.fn(loop, t.arg);
		}
	} while ((rs__batched && rs__batches_flush(loop) > 0) ||
		 loop->micro.len > 0);
}

/* rs__loop_task, inline where the loop dispatches a ready handle: one
 * call less per event. */
static inline __attribute__((always_inline)) void
loop_task(rs_loop *loop, rs_task_fn fn, void *arg)
{
	loop->task++;
	loop->in_task = 1;
	fn(loop, arg);
	if (loop->micro.len > 0 || rs__batched)
		loop_task_settle(loop);
	if (loop->hook)
		loop->hook(loop, loop->task, loop->hook_arg);
	loop->in_task = 0;
}

void rs__loop_task(rs_loop *loop, rs_task_fn fn, void *arg)
{
	loop_task(loop, fn, arg);
}

struct io_task {
	struct rs__handle *handle;
	uint32_t events;
};

static void io_task_run(rs_loop *loop, void *arg)
{
	struct io_task *t = arg;

	(void)loop;
	t->handle->dispatch(t->handle, t->events);
}

void rs__handle_init(struct rs__handle *h, enum rs__handle_kind kind,
		     void (*dispatch)(struct rs__handle *h, uint32_t events))
{
	static uint64_t next_order;

	h->kind = kind;
	h->dispatch = dispatch;
	h->order = ++next_order;
}

/*
 * Ready handles are dispatched in creation order, not in the order epoll
 * lists them: epoll's ready list keeps level-triggered entries from earlier
 * waits, so its order depends on timing, and two sockets whose events come
 * in one wait would otherwise see their tasks in either order. Insertion
 * sort: at most RS_LOOP_MAX_EVENTS entries, usually one or two.
 */
static void sort_by_creation(struct epoll_event *evs, int n)
{
	for (int i = 1; i < n; i++) {
		struct epoll_event e = evs[i];
		uint64_t key = ((struct rs__handle *)e.data.ptr)->order;
		int j = i - 1;

		while (j >= 0 && ((struct rs__handle *)evs[j].data.ptr)->order > key) {
			evs[j + 1] = evs[j];
			j--;
		}
		evs[j + 1] = e;
	}
}

static int loop_alive(const rs_loop *loop)
{
	return loop->handles > 0 || loop->posted.len > 0;
}

/* One wait and its ready handles' tasks; inline in rs_loop_run, whose
 * every iteration is one. */
static inline __attribute__((always_inline)) int loop_poll(rs_loop *loop)
{
	struct epoll_event evs[RS_LOOP_MAX_EVENTS];
	int timeout = loop->posted.len > 0 ? 0 : -1;
	int n;

	if (loop->handles == 0)
		return 0;
	n = rs__io_epoll_wait(loop->epfd, evs, RS_LOOP_MAX_EVENTS, timeout);
	if (n < 0)
		return n == -EINTR ? 0 : n;
	if (n > 1)
		sort_by_creation(evs, n);
	for (int i = 0; i < n; i++) {
		struct io_task t = { evs[i].data.ptr, evs[i].events };

		loop_task(loop, io_task_run, &t);
		/* A task may close a handle whose event is later in evs; the
		 * handle stays allocated until loop_reap, and dispatch
		 * ignores closed handles. */
	}
	return 0;
}

/* The first n posted tasks, each as one task. */
static RS__OUT_OF_LINE void loop_run_posted(rs_loop *loop, size_t n)
{
	for (; n > 0 && loop->posted.len > 0; n--) {
		struct rs__task t = rs__task_pop(&loop->posted);

		rs__loop_task(loop, t.fn, t.arg);
	}
}

int rs_loop_run(rs_loop *loop)
{
	while (loop_alive(loop)) {
		size_t posted = loop->posted.len;
		int err = loop_poll(loop);

		if (err < 0)
			return err;
		/* Only the tasks posted before this iteration run now: a task
		 * that posts another does not starve I/O. */
		if (posted > 0)
			loop_run_posted(loop, posted);
		if (loop->closed)
			loop_reap(loop);
	}
	return 0;
}
