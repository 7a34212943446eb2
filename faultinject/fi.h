/*
 * fi.h: the wirecheck fault gate.
 *
 * Every syscall the reference stack makes goes through one of the fi_*
 * wrappers below. A wrapper counts the call per kind and fd (totals are
 * their sums),
 * then, only when some rule is armed, asks libfiu whether a failpoint named
 * "wirecheck/<target>/<action>" fires for it, and applies the action.
 *
 * Conventions:
 * - Every wrapper returns what the syscall returns on success, and -errno on
 *   failure (never -1 with errno: the cause is in the return value).
 * - A disarmed gate costs one predictable branch per call beyond the count.
 * - Not thread-safe: the stack is single-threaded. The counters may live in a
 *   shared mapping (fi_counters_attach) so that a parent process can read them
 *   after this process crashed.
 */
#ifndef WIRECHECK_FI_H
#define WIRECHECK_FI_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

/* The syscall kinds the gate counts; the order is the order of fi_sys_name(). */
enum fi_sys {
	FI_SEND,
	FI_SENDTO,
	FI_SENDMSG,
	FI_WRITE,
	FI_WRITEV,
	FI_RECV,
	FI_READ,
	FI_EPOLL_CTL,
	FI_EPOLL_WAIT,
	FI_ACCEPT,
	FI_CONNECT,
	FI_SHUTDOWN,
	FI_CLOSE,
	FI_SYS_COUNT
};

/* Bit masks of kinds, used by rules that name a group. */
#define FI_MASK(sys) (1u << (sys))
#define FI_GROUP_WRITE                                                        \
	(FI_MASK(FI_SEND) | FI_MASK(FI_SENDTO) | FI_MASK(FI_SENDMSG) |       \
	 FI_MASK(FI_WRITE) | FI_MASK(FI_WRITEV))
#define FI_GROUP_READ (FI_MASK(FI_RECV) | FI_MASK(FI_READ))

enum fi_action {
	FI_ACT_SHORT,  /* call the kernel with the length clamped to param */
	FI_ACT_ERRNO,  /* fail with errno param, without calling the kernel */
	FI_ACT_ZERO,   /* return 0 without calling the kernel */
	FI_ACT_SIGNAL, /* raise(param) before the call, then make the call */
	FI_ACT_COUNT
};

#define FI_REPEAT_FOREVER (-1L)
#define FI_MAX_FD 1024
#define FI_MAX_RULES 32

/*
 * One armed rule. target is the name used in the failpoint: a syscall name
 * ("send"), "syswrite"/"sysread" for write(2)/read(2) alone, or a group:
 * "write" (every writing call), "read" (recv and read), "all".
 */
struct fi_rule {
	char target[16];
	unsigned sys_mask;     /* kinds the rule applies to */
	enum fi_action action;
	long param;            /* clamp, errno, or signal number */
	unsigned long after;   /* skip the first `after` matching calls */
	long repeat;           /* fire this many times, or FI_REPEAT_FOREVER */
	int fd;                /* only this fd (whatever it is), or -1 */
	/* With fd -1: 0 (the default) aims at sockets only, so that a rule on
	 * write(2) leaves a program's terminal, files, pipes and eventfds
	 * alone; 1 (",fds=any") aims at every fd. The kinds whose fd is a
	 * socket by nature (send, recv, accept...) and epoll_wait, whose fd is
	 * the epoll instance, are not filtered; write, writev, read, close and
	 * epoll_ctl (its watched fd) are. */
	int any_fd;
	/* Only calls on this connection, or -1. The gate numbers connections
	 * itself, from 0, in the order the process opens them: a connect()
	 * that returns 0 or EINPROGRESS, or an accept() that returns an fd,
	 * gives that fd the next number, which it keeps until it is closed or
	 * replaced (fi_fd_forget). The reference subject connects (or
	 * accepts) its connections in their order, so gate connection C is
	 * the scenario's connection C. */
	int conn;
	/* Only the calls that would carry this byte of their fd's stream
	 * (from 0, in the call's direction: written bytes for writing kinds,
	 * read bytes for reading ones), or -1: a call of len bytes made when
	 * `off` bytes have moved matches when off <= byte < off + len. The
	 * bytes are counted while a rule is armed (fi_counters' fd_bytes).
	 * Only writing and reading kinds carry bytes. */
	long byte;
	/* State, reset by fi_arm(). */
	unsigned long seen;    /* matching calls so far */
	unsigned long fired;   /* times the action was applied: not on a call
				* another rule's errno or zero replaced */
};

/*
 * Calls the preload library sees in other forms than the kinds, counted
 * apart (and also as the kind they are ruled as, see docs/cli.md).
 */
enum fi_form {
	FI_FORM_SENDFILE,       /* ruled and counted as write */
	FI_FORM_SPLICE,         /* ruled and counted as write */
	FI_FORM_SENDMMSG,       /* ruled and counted as sendmsg */
	FI_FORM_RECVMMSG,       /* ruled and counted as recv */
	FI_FORM_IO_URING_SETUP, /* only counted: the ring's I/O is not seen */
	FI_FORM_COUNT
};

/* Returns a form's name ("sendfile"), or "?" when out of range. */
const char *fi_form_name(enum fi_form form);

/* The fired faults the counters keep in order; later ones are counted in
 * fired_total only. */
#define FI_FIRED_MAX 256

/* One call a rule's action changed (or replaced). */
struct fi_fired {
	uint8_t rule;          /* index of the rule (fi_rule_get), or 255 for
				* a failpoint fiu-ctrl enabled */
	uint8_t kind;          /* enum fi_sys */
	uint8_t action;        /* enum fi_action */
	uint8_t refused;       /* 1: the kernel never saw the call */
	int32_t fd;
	uint64_t call;         /* the call's number among the calls of its
				* group (writing, reading, other) on its fd
				* since the fd was opened, from 1 */
	uint64_t offset;       /* bytes of its direction (written for writing
				* kinds, read for reading ones) the gate saw
				* move on the fd before the call */
	int64_t param;         /* the clamp, errno or signal */
	int32_t conn;          /* the fd's connection (struct fi_rule's conn),
				* or -1 */
	uint32_t pad;
	uint64_t length;       /* the bytes the call asked to move (0 for the
				* kinds without bytes) */
};

/* Counters of one process. epoll_ctl is also split by op (ADD, MOD, DEL). */
struct fi_counters {
	/* Calls on an fd without per-fd counters (negative, or FI_MAX_FD or
	 * more). A kind's total is this plus its fd_calls: fi_calls(). */
	uint64_t other_fd_calls[FI_SYS_COUNT];
	uint64_t wouldblock[FI_SYS_COUNT];  /* calls the kernel answered EAGAIN */
	uint64_t injected[FI_SYS_COUNT];    /* calls an action changed */
	uint64_t ctl_ops[4];                /* epoll_ctl by op: [1]=ADD [2]=DEL [3]=MOD */
	/* Every call, injected or not, per fd and kind-major: fd_calls[kind]
	 * [fd]; not a call a signal rule ended (it is taken back while the
	 * signal runs, see fi__gate_begin). With the kind a constant in each wrapper, the fast path's
	 * count is one add to an address the fd indexes directly, and the
	 * totals are sums, made when they are read (fi_calls). */
	uint64_t fd_calls[FI_SYS_COUNT][FI_MAX_FD];
	uint32_t per_fd_ctl[FI_MAX_FD][4];
	/* Calls the gate answered itself (errno, zero): counted in fd_calls,
	 * but the kernel never saw them. */
	uint64_t refused[FI_SYS_COUNT];
	/* Times each armed rule's action was applied (rule index): not on a
	 * call a signal rule ended before the action. */
	uint64_t rule_fired[FI_MAX_RULES];
	/* The first FI_FIRED_MAX fired faults, and how many there were. */
	uint64_t fired_total;
	struct fi_fired fired[FI_FIRED_MAX];
	/* Bytes moved per fd, [fd][0] written and [fd][1] read, by the calls
	 * of the slow path: every call while a rule is armed, none otherwise
	 * (it gives fired faults their offset). */
	uint64_t fd_bytes[FI_MAX_FD][2];
	/* Calls per fd since it was opened, [fd][0] writing, [1] reading,
	 * [2] other, by the calls of the slow path (fired faults' index). */
	uint64_t fd_ops[FI_MAX_FD][3];
	/* The preload library's other forms of calls (enum fi_form). */
	uint64_t forms[FI_FORM_COUNT];
};

/* Returns the lower-case name of a kind ("send"), or "?" when out of range. */
const char *fi_sys_name(enum fi_sys sys);

/*
 * Parses one rule spec,
 * "TARGET:ACTION[,after=K][,repeat=N|forever][,fd=N][,fds=any|sockets]
 * [,conn=C][,byte=N]" where ACTION is short=N, errno=NAME|NUM, zero, or
 * signal=NAME|NUM. byte=N needs a target with writing or reading kinds.
 * Returns 0 and fills *out (state zeroed), or -EINVAL and writes a message
 * into err (at most errlen bytes, NUL-terminated) that quotes the spec and
 * says what is wrong.
 */
int fi_rule_parse(const char *spec, struct fi_rule *out, char *err,
		  size_t errlen);

/* Room for any canonical spec fi_rule_format writes, its NUL included:
 * the longest is 146 bytes ("epoll_wait:short=<LONG_MAX>,after=<ULONG_MAX>,
 * repeat=<LONG_MAX>,fd=<INT_MAX>,conn=<INT_MAX>,byte=<LONG_MAX>"). */
#define FI_SPEC_MAX 192

/* Formats a rule back into its canonical spec. Returns snprintf's value
 * (below FI_SPEC_MAX for any rule fi_rule_parse made). */
int fi_rule_format(const struct fi_rule *rule, char *buf, size_t len);

/* Returns the errno for a name ("EPIPE") or a decimal number, or -1. */
int fi_errno_parse(const char *s);
/* Returns the name of an errno ("EPIPE"), or NULL when unknown. */
const char *fi_errno_name(int e);

/* The errno name nearest to s, for a message about a name fi_errno_parse
 * refused: one edit away ("EPIPEE" -> "EPIPE"), or two for s of 6 letters
 * or more ("ECONRESET"); NULL when none is. */
const char *fi_errno_near(const char *s);
/* Returns the signal for a name ("SIGTERM" or "TERM") or number, or -1. */
int fi_signal_parse(const char *s);
/* Returns the name of a signal ("SIGTERM"), or NULL when unknown. */
const char *fi_signal_name(int sig);

/*
 * Initialises libfiu and the gate. Arms each rule of the environment variable
 * WIRECHECK_FAULTS (specs separated by ';'). Returns 0, or -EINVAL with a
 * message on stderr naming the variable and the spec.
 */
int fi_init(void);

/*
 * Arms a rule: enables its failpoint in libfiu. Returns the rule's index, or
 * -ENOSPC when FI_MAX_RULES are armed, -EINVAL when libfiu refuses it.
 */
int fi_arm(const struct fi_rule *rule);

/* Disarms every rule (and every failpoint the gate enabled). */
void fi_disarm_all(void);

/* Number of armed rules. */
int fi_rule_count(void);
/* The armed rule at index i (with its state), or NULL. */
const struct fi_rule *fi_rule_get(int i);

/*
 * Lets fiu-ctrl arm failpoints in this running process, through libfiu's
 * control FIFOs named after basename. From then on the gate asks libfiu on
 * every call (the slow path), since it cannot know what fiu-ctrl enables.
 * Returns 0 or -errno.
 */
int fi_remote_control(const char *basename);

/*
 * Forgets what the gate knows of fd (whether it is a socket, its
 * connection, the bytes and calls since it was opened): called when the fd number is closed or
 * replaced (close does it itself; the preload library's dup2, dup3,
 * close_range and syscall(SYS_close) call it). fd out of range: no-op.
 */
void fi_fd_forget(int fd);

/* The connection the gate gave fd (see struct fi_rule's conn), or -1. */
int fi_fd_conn(int fd);

/* The counters in use. Never NULL. */
struct fi_counters *fi_counters(void);
/* Uses *shared (zeroed by the caller) as the counters from now on. */
void fi_counters_attach(struct fi_counters *shared);
/* Zeroes the counters in use. */
void fi_counters_reset(void);
/* Every call of a kind, injected or not: the sum of its per-fd counts and
 * of its calls on fds without them. */
uint64_t fi_calls(const struct fi_counters *c, enum fi_sys kind);

/*
 * The wrappers. Each counts, applies armed rules, and returns the syscall's
 * result or -errno. A "short" clamp on writev/sendmsg clamps the total across
 * the iovecs (the vector is trimmed in a copy; the caller's is not changed).
 *
 * The wrappers of the calls a socket makes per byte or per event (send,
 * sendto, sendmsg, write, writev, recv, read, epoll_wait) are inline below:
 * with the gate disarmed they cost the caller the count, one compare and
 * one branch, and the test of the result that the caller makes anyway
 * (docs/ARCHITECTURE.md, "The gate's fast path"). The rest are functions.
 */
static inline ssize_t fi_send(int fd, const void *buf, size_t len,
			      int flags);
static inline ssize_t fi_sendto(int fd, const void *buf, size_t len,
				int flags, const struct sockaddr *addr,
				socklen_t addrlen);
static inline ssize_t fi_sendmsg(int fd, const struct msghdr *msg,
				 int flags);
static inline ssize_t fi_write(int fd, const void *buf, size_t len);
static inline ssize_t fi_writev(int fd, const struct iovec *iov,
				int iovcnt);
static inline ssize_t fi_recv(int fd, void *buf, size_t len, int flags);
static inline ssize_t fi_read(int fd, void *buf, size_t len);
static inline int fi_epoll_wait(int epfd, struct epoll_event *evs,
				int maxevents, int timeout);
int fi_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int fi_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
int fi_connect(int fd, const struct sockaddr *addr, socklen_t addrlen);
int fi_shutdown(int fd, int how);
int fi_close(int fd);

/* ------------------------------------------------------------------------ */
/* The inline fast path. Everything named fi__ is the gate's, not an API.  */

#if defined(__GNUC__) || defined(__clang__)
#define FI__HIDDEN __attribute__((visibility("hidden")))
#define FI__COLD __attribute__((cold))
#define FI__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define FI__HIDDEN
#define FI__COLD
#define FI__UNLIKELY(x) (x)
#endif

/*
 * FI__REAL(f) is the libc function f the gate calls; FI__INC(x) counts.
 * In the LD_PRELOAD build (FI_PRELOAD, faultinject/preload.c) the library
 * defines send() and the others itself, so the gate reaches libc through
 * the pointers preload.c resolves with dlsym(RTLD_NEXT), and it counts with
 * atomic adds, since the program it is loaded into may have threads.
 */
#ifdef FI_PRELOAD
#include <fcntl.h>
#include <time.h>

struct fi__libc {
	__typeof__(send) *send;
	__typeof__(sendto) *sendto;
	__typeof__(sendmsg) *sendmsg;
	__typeof__(write) *write;
	__typeof__(writev) *writev;
	__typeof__(recv) *recv;
	__typeof__(read) *read;
	__typeof__(epoll_ctl) *epoll_ctl;
	__typeof__(epoll_wait) *epoll_wait;
	__typeof__(accept4) *accept4;
	__typeof__(connect) *connect;
	__typeof__(shutdown) *shutdown;
	__typeof__(close) *close;
	/* Calls only the preload library interposes, each counted as the
	 * kind it is a form of (recv, read, epoll_wait). */
	__typeof__(recvfrom) *recvfrom;
	__typeof__(recvmsg) *recvmsg;
	__typeof__(readv) *readv;
	__typeof__(epoll_pwait) *epoll_pwait;
	/* Calls that move socket bytes in other forms (enum fi_form). */
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	__typeof__(splice) *splice;
	__typeof__(sendmmsg) *sendmmsg;
	__typeof__(recvmmsg) *recvmmsg;
};
extern struct fi__libc fi__libc FI__HIDDEN;
#define FI__REAL(f) (fi__libc.f)

/* The preload library's other forms of recv, read and epoll_wait, through
 * the same gate as their kinds; and the fork handlers of the plan lock. */
ssize_t fi__recvfrom(int fd, void *buf, size_t len, int flags,
		     struct sockaddr *addr, socklen_t *addrlen) FI__HIDDEN;
ssize_t fi__recvmsg(int fd, struct msghdr *msg, int flags) FI__HIDDEN;
ssize_t fi__readv(int fd, const struct iovec *iov, int iovcnt) FI__HIDDEN;
int fi__epoll_pwait(int epfd, struct epoll_event *evs, int maxevents,
		    int timeout, const sigset_t *sigmask) FI__HIDDEN;
/* sendfile and splice, ruled as write on their output fd (a clamp cuts
 * the count: a true short write); sendmmsg as sendmsg (a clamp sends the
 * first message alone, cut); recvmmsg as recv (refused or zeroed; a clamp
 * receives one message, cut). Each is also counted as its form. */
ssize_t fi__sendfile(int out_fd, int in_fd, off_t *offset,
		     size_t count) FI__HIDDEN;
ssize_t fi__splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out,
		   size_t len, unsigned flags) FI__HIDDEN;
int fi__sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen,
		 int flags) FI__HIDDEN;
int fi__recvmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags,
		 struct timespec *timeout) FI__HIDDEN;
void fi__fork_prepare(void) FI__HIDDEN;
void fi__fork_parent(void) FI__HIDDEN;
void fi__fork_child(void) FI__HIDDEN;
#define FI__INC(x) ((void)__atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED))
#else
#define FI__REAL(f) f
#define FI__INC(x) ((void)(x)++)
#endif

/*
 * The libc calls of the inline wrappers, declared again so that GCC calls
 * them through their GOT entry instead of a PLT stub, which saves the
 * stub's jump. The binding is the same (an LD_PRELOAD library or a
 * sanitizer's interceptor still wins); it is only made when the program
 * loads instead of at the first call. GCC on x86-64 only: that is where it
 * was measured, and clang has -fno-plt but not the attribute. Every file
 * that includes this header gets it, the bench's direct send included, so
 * that the gate and the call it is measured against call libc alike.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
	!defined(FI_PRELOAD)
#define FI__NO_PLT(f) extern __typeof__(f) f __attribute__((noplt))
FI__NO_PLT(send);
FI__NO_PLT(sendto);
FI__NO_PLT(sendmsg);
FI__NO_PLT(write);
FI__NO_PLT(writev);
FI__NO_PLT(recv);
FI__NO_PLT(read);
FI__NO_PLT(epoll_wait);
#undef FI__NO_PLT
#endif

/* The counters in use (fi_counters() returns it). */
extern struct fi_counters *fi__counters FI__HIDDEN;
/*
 * The fast path serves the fds below this limit: FI_MAX_FD while the gate
 * is disarmed, 0 while it is armed (a rule, or fiu-ctrl under remote
 * control). It folds "does fd have per-fd counters" and "is the gate
 * disarmed" into one compare; unsigned, so a negative fd fails it too.
 */
extern unsigned fi__fast_fd_limit FI__HIDDEN;

/* A failed kernel call of a kind: counts EAGAIN, returns -errno. */
ssize_t fi__failed(enum fi_sys kind) FI__HIDDEN FI__COLD;

/* The slow paths: an armed gate, or an fd without per-fd counters. The
 * total is counted already; each counts the fd, then applies the rules. */
ssize_t fi__send_slow(int fd, const void *buf, size_t len,
		      int flags) FI__HIDDEN FI__COLD;
ssize_t fi__sendto_slow(int fd, const void *buf, size_t len, int flags,
			const struct sockaddr *addr,
			socklen_t addrlen) FI__HIDDEN FI__COLD;
ssize_t fi__sendmsg_slow(int fd, const struct msghdr *msg,
			 int flags) FI__HIDDEN FI__COLD;
ssize_t fi__write_slow(int fd, const void *buf,
		       size_t len) FI__HIDDEN FI__COLD;
ssize_t fi__writev_slow(int fd, const struct iovec *iov,
			int iovcnt) FI__HIDDEN FI__COLD;
ssize_t fi__recv_slow(int fd, void *buf, size_t len,
		      int flags) FI__HIDDEN FI__COLD;
ssize_t fi__read_slow(int fd, void *buf, size_t len) FI__HIDDEN FI__COLD;
int fi__epoll_wait_slow(int epfd, struct epoll_event *evs, int maxevents,
			int timeout) FI__HIDDEN FI__COLD;

/*
 * Counts a call when the fast path serves fd and returns 1; returns 0
 * without counting otherwise, and the caller's slow path counts it.
 */
static inline int fi__count_fast(enum fi_sys kind, int fd)
{
	if (FI__UNLIKELY((unsigned)fd >= fi__fast_fd_limit))
		return 0;
	FI__INC(fi__counters->fd_calls[kind][(unsigned)fd]);
	return 1;
}

/* A kernel result in the gate's convention: the value, or -errno. The
 * test is the caller's own "did it fail", which the compiler then makes
 * once. */
static inline ssize_t fi__result(enum fi_sys kind, ssize_t r)
{
	return FI__UNLIKELY(r < 0) ? fi__failed(kind) : r;
}

static inline ssize_t fi_send(int fd, const void *buf, size_t len, int flags)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_SEND, fd)))
		return fi__send_slow(fd, buf, len, flags);
	return fi__result(FI_SEND, FI__REAL(send)(fd, buf, len, flags));
}

static inline ssize_t fi_sendto(int fd, const void *buf, size_t len,
				int flags, const struct sockaddr *addr,
				socklen_t addrlen)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_SENDTO, fd)))
		return fi__sendto_slow(fd, buf, len, flags, addr, addrlen);
	return fi__result(FI_SENDTO,
			  FI__REAL(sendto)(fd, buf, len, flags, addr, addrlen));
}

static inline ssize_t fi_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_SENDMSG, fd)))
		return fi__sendmsg_slow(fd, msg, flags);
	return fi__result(FI_SENDMSG, FI__REAL(sendmsg)(fd, msg, flags));
}

static inline ssize_t fi_write(int fd, const void *buf, size_t len)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_WRITE, fd)))
		return fi__write_slow(fd, buf, len);
	return fi__result(FI_WRITE, FI__REAL(write)(fd, buf, len));
}

static inline ssize_t fi_writev(int fd, const struct iovec *iov, int iovcnt)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_WRITEV, fd)))
		return fi__writev_slow(fd, iov, iovcnt);
	return fi__result(FI_WRITEV, FI__REAL(writev)(fd, iov, iovcnt));
}

static inline ssize_t fi_recv(int fd, void *buf, size_t len, int flags)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_RECV, fd)))
		return fi__recv_slow(fd, buf, len, flags);
	return fi__result(FI_RECV, FI__REAL(recv)(fd, buf, len, flags));
}

static inline ssize_t fi_read(int fd, void *buf, size_t len)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_READ, fd)))
		return fi__read_slow(fd, buf, len);
	return fi__result(FI_READ, FI__REAL(read)(fd, buf, len));
}

static inline int fi_epoll_wait(int epfd, struct epoll_event *evs,
				int maxevents, int timeout)
{
	if (FI__UNLIKELY(!fi__count_fast(FI_EPOLL_WAIT, epfd)))
		return fi__epoll_wait_slow(epfd, evs, maxevents, timeout);
	return (int)fi__result(FI_EPOLL_WAIT,
			       FI__REAL(epoll_wait)(epfd, evs, maxevents, timeout));
}

#endif
