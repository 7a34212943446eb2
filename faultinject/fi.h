/*
 * fi.h: the wirecheck fault gate.
 *
 * Every syscall the reference stack makes goes through one of the fi_*
 * wrappers below. A wrapper counts the call (per kind, per fd and in total),
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
	int fd;                /* only this fd, or -1 for any */
	/* State, reset by fi_arm(). */
	unsigned long seen;    /* matching calls so far */
	unsigned long fired;   /* times the action was applied */
};

/* Counters of one process. epoll_ctl is also split by op (ADD, MOD, DEL). */
struct fi_counters {
	uint64_t calls[FI_SYS_COUNT];       /* every call, injected or not */
	uint64_t wouldblock[FI_SYS_COUNT];  /* calls the kernel answered EAGAIN */
	uint64_t injected[FI_SYS_COUNT];    /* calls an action changed */
	uint64_t ctl_ops[4];                /* epoll_ctl by op: [1]=ADD [2]=DEL [3]=MOD */
	uint32_t per_fd[FI_MAX_FD][FI_SYS_COUNT];
	uint32_t per_fd_ctl[FI_MAX_FD][4];
};

/* Returns the lower-case name of a kind ("send"), or "?" when out of range. */
const char *fi_sys_name(enum fi_sys sys);

/*
 * Parses one rule spec, "TARGET:ACTION[,after=K][,repeat=N|forever][,fd=N]"
 * where ACTION is short=N, errno=NAME|NUM, zero, or signal=NAME|NUM.
 * Returns 0 and fills *out (state zeroed), or -EINVAL and writes a message
 * into err (at most errlen bytes, NUL-terminated) that quotes the spec and
 * says what is wrong.
 */
int fi_rule_parse(const char *spec, struct fi_rule *out, char *err,
		  size_t errlen);

/* Formats a rule back into its canonical spec. Returns snprintf's value. */
int fi_rule_format(const struct fi_rule *rule, char *buf, size_t len);

/* Returns the errno for a name ("EPIPE") or a decimal number, or -1. */
int fi_errno_parse(const char *s);
/* Returns the name of an errno ("EPIPE"), or NULL when unknown. */
const char *fi_errno_name(int e);
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

/* The counters in use. Never NULL. */
struct fi_counters *fi_counters(void);
/* Uses *shared (zeroed by the caller) as the counters from now on. */
void fi_counters_attach(struct fi_counters *shared);
/* Zeroes the counters in use. */
void fi_counters_reset(void);

/*
 * The wrappers. Each counts, applies armed rules, and returns the syscall's
 * result or -errno. A "short" clamp on writev/sendmsg clamps the total across
 * the iovecs (the vector is trimmed in a copy; the caller's is not changed).
 */
ssize_t fi_send(int fd, const void *buf, size_t len, int flags);
ssize_t fi_sendto(int fd, const void *buf, size_t len, int flags,
		  const struct sockaddr *addr, socklen_t addrlen);
ssize_t fi_sendmsg(int fd, const struct msghdr *msg, int flags);
ssize_t fi_write(int fd, const void *buf, size_t len);
ssize_t fi_writev(int fd, const struct iovec *iov, int iovcnt);
ssize_t fi_recv(int fd, void *buf, size_t len, int flags);
ssize_t fi_read(int fd, void *buf, size_t len);
int fi_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int fi_epoll_wait(int epfd, struct epoll_event *evs, int maxevents,
		  int timeout);
int fi_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
int fi_connect(int fd, const struct sockaddr *addr, socklen_t addrlen);
int fi_shutdown(int fd, int how);
int fi_close(int fd);

#endif
