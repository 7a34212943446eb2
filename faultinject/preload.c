/*
 * preload.c: the fault gate as an LD_PRELOAD library, for programs that
 * were not built against it (node, a libuv server, python3).
 *
 *     LD_PRELOAD=build/lib/libwirecheck-preload.so \
 *     WIRECHECK_FAULTS='send:short=7,repeat=forever' \
 *     WIRECHECK_COUNTS=/tmp/counts-%p.json  program args...
 *
 * or `wirecheck exec` (docs/cli.md), which sets those for you.
 *
 * The library defines send, sendto, sendmsg, write, writev, recv, read,
 * epoll_ctl, epoll_wait, accept, accept4, connect, shutdown and close, and
 * the forms of three of them that event loops and runtimes use: recvfrom
 * and recvmsg (counted as recv), readv (as read), epoll_pwait (as
 * epoll_wait), and the fortified __read_chk, __recv_chk and
 * __recvfrom_chk that _FORTIFY_SOURCE builds call instead of read, recv and
 * recvfrom; and sendfile, splice, sendmmsg and recvmmsg (fi_forms.c, each
 * counted as its form too), dup2, dup3 and close_range (which only tell
 * the gate an fd number changed hands), and syscall() (io_uring_setup is
 * counted and warned about; SYS_close tells the gate). Each goes through
 * the same gate as the reference stack's
 * calls (fi.c, built here with FI_PRELOAD): it is counted per kind and fd,
 * the rules of
 * WIRECHECK_FAULTS apply to it (the rule syntax of docs/cli.md, specs
 * separated by ';'), and libc's own function, found with dlsym(RTLD_NEXT),
 * makes the call. The gate's -errno becomes libc's -1 and errno.
 *
 * Its state (the counters, the rules, what each fd was: fi_state.h) lives
 * in a file mapped shared when WIRECHECK_STATE names one ("%p" replaced by
 * the pid), so that it outlives the process however it ends: that is how
 * `wirecheck exec` reads it. At exit (exit() or a return from main), when
 * WIRECHECK_COUNTS is set, the counts also go to that file as JSON. A
 * forked child starts its counts at zero in a state of its own. With
 * WIRECHECK_FIU_CTRL=PREFIX, fiu-ctrl can arm the failpoints at run time.
 *
 * The library's own work (its constructor and destructor: libfiu, jansson,
 * stdio) may call these symbols too: jansson reads /dev/urandom for its
 * hash seed at its first object. Such calls pass straight to libc, uncounted
 * and untouched by any rule (the thread-local `inside`), so that the counts
 * are the program's and no rule can end a program inside the library.
 *
 * What it cannot see: calls libc makes
 * internally (stdio's writes, the resolver's sockets), which do not go
 * through these symbols, and the calls of a statically linked program.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <jansson.h>

#include "fi.h"
#include "fi_fd_text.h"
#include "fi_shm.h"
#include "fi_state.h"

#define EXPORT __attribute__((visibility("default")))
#define COUNTS_VAR "WIRECHECK_COUNTS"
#define STATE_VAR "WIRECHECK_STATE"
#define FIU_CTRL_VAR "WIRECHECK_FIU_CTRL"

struct fi__libc fi__libc;

/* Non-zero while this thread runs the library's own code (see the top).
 * initial-exec: a preloaded library has static TLS, and every interposed
 * call reads it, so no __tls_get_addr call. */
static __thread int inside __attribute__((tls_model("initial-exec")));

/* The fortified forms (_FORTIFY_SOURCE) of read, recv and recvfrom, which
 * distributions build most programs with: libc's own, for the overflow
 * they check, and so that the rest goes through the gate. */
static ssize_t (*libc_read_chk)(int, void *, size_t, size_t);
static ssize_t (*libc_recv_chk)(int, void *, size_t, size_t, int);
static ssize_t (*libc_recvfrom_chk)(int, void *, size_t, size_t, int,
				    struct sockaddr *, socklen_t *);
/* The calls that only replace an fd number, and syscall() (io_uring). */
static int (*libc_dup2)(int, int);
static int (*libc_dup3)(int, int, int);
static int (*libc_close_range)(unsigned, unsigned, int);
static long (*libc_syscall)(long, ...);

static pthread_once_t resolve_once = PTHREAD_ONCE_INIT;

/* A message on stderr through the raw syscall: used where the process
 * cannot go on, and where stdio might itself reach an interposed call. */
static void die_raw(const char *msg)
{
	/* Nothing to do about a failed write of the last message. */
	(void)syscall(SYS_write, 2, msg, strlen(msg));
	_exit(127);
}

static void *libc_symbol(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (f == NULL)
		die_raw("wirecheck-preload: cannot find libc's socket "
			"functions (dlsym RTLD_NEXT)\n");
	return f;
}

static void resolve(void)
{
	/* dlsym's void * converts to a function pointer: POSIX requires it
	 * (ISO C leaves it undefined). */
	fi__libc.send = (__typeof__(fi__libc.send))libc_symbol("send");
	fi__libc.sendto = (__typeof__(fi__libc.sendto))libc_symbol("sendto");
	fi__libc.sendmsg =
		(__typeof__(fi__libc.sendmsg))libc_symbol("sendmsg");
	fi__libc.write = (__typeof__(fi__libc.write))libc_symbol("write");
	fi__libc.writev = (__typeof__(fi__libc.writev))libc_symbol("writev");
	fi__libc.recv = (__typeof__(fi__libc.recv))libc_symbol("recv");
	fi__libc.read = (__typeof__(fi__libc.read))libc_symbol("read");
	fi__libc.epoll_ctl =
		(__typeof__(fi__libc.epoll_ctl))libc_symbol("epoll_ctl");
	fi__libc.epoll_wait =
		(__typeof__(fi__libc.epoll_wait))libc_symbol("epoll_wait");
	fi__libc.accept4 =
		(__typeof__(fi__libc.accept4))libc_symbol("accept4");
	fi__libc.connect =
		(__typeof__(fi__libc.connect))libc_symbol("connect");
	fi__libc.shutdown =
		(__typeof__(fi__libc.shutdown))libc_symbol("shutdown");
	fi__libc.close = (__typeof__(fi__libc.close))libc_symbol("close");
	fi__libc.recvfrom =
		(__typeof__(fi__libc.recvfrom))libc_symbol("recvfrom");
	fi__libc.recvmsg =
		(__typeof__(fi__libc.recvmsg))libc_symbol("recvmsg");
	fi__libc.readv = (__typeof__(fi__libc.readv))libc_symbol("readv");
	fi__libc.epoll_pwait =
		(__typeof__(fi__libc.epoll_pwait))libc_symbol("epoll_pwait");
	libc_read_chk = (__typeof__(libc_read_chk))libc_symbol("__read_chk");
	libc_recv_chk = (__typeof__(libc_recv_chk))libc_symbol("__recv_chk");
	libc_recvfrom_chk =
		(__typeof__(libc_recvfrom_chk))libc_symbol("__recvfrom_chk");
	fi__libc.sendfile =
		(__typeof__(fi__libc.sendfile))libc_symbol("sendfile");
	fi__libc.splice = (__typeof__(fi__libc.splice))libc_symbol("splice");
	fi__libc.sendmmsg =
		(__typeof__(fi__libc.sendmmsg))libc_symbol("sendmmsg");
	fi__libc.recvmmsg =
		(__typeof__(fi__libc.recvmmsg))libc_symbol("recvmmsg");
	libc_dup2 = (__typeof__(libc_dup2))libc_symbol("dup2");
	libc_dup3 = (__typeof__(libc_dup3))libc_symbol("dup3");
	libc_close_range =
		(__typeof__(libc_close_range))libc_symbol("close_range");
	libc_syscall = (__typeof__(libc_syscall))libc_symbol("syscall");
}

/* Every interposer starts here: a constructor of another library may call
 * send() before ours has run. pthread_once's done case is one load. */
static void ready(void)
{
	if (pthread_once(&resolve_once, resolve) != 0)
		die_raw("wirecheck-preload: pthread_once failed\n");
}

static ssize_t to_libc(ssize_t r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static void note_fd(int fd);
static void forget(int fd);
static void undescribe(int fd);

/* accept's new fd: a number that may have been something else. The gate
 * forgot what it knew of the number already (fi_accept), and gave the fd
 * its connection number, which forget() would undo: only the description
 * is dropped here. */
static int accepted(int r)
{
	if (r >= 0) {
		undescribe(r);
		note_fd(r);
	}
	return (int)to_libc(r);
}


/* ------------------------------------------------------------------------ */
/* The state: counters, rules, and what each fd was (fi_state.h).           */

/* Without WIRECHECK_STATE, or when its file cannot be made: private. */
static struct fi_state own_state;
static struct fi_state *state = &own_state;
/* The mapping of state, when it is a file's. */
static int state_mapped;

/* described[fd] is 1 once fd has a final description in state->fds,
 * until the fd number is closed or replaced. Relaxed atomics: two threads
 * that describe one fd at once write the same text. */
static uint8_t described[FI_MAX_FD];

/* fd's description is out of date. */
static void undescribe(int fd)
{
	if ((unsigned)fd < FI_MAX_FD)
		__atomic_store_n(&described[fd], 0, __ATOMIC_RELAXED);
}

/* The fd number is free again, or names another file now. */
static void forget(int fd)
{
	fi_fd_forget(fd);
	undescribe(fd);
}

static void uring_seen(void);

/* Takes what fd is, the first time the program uses it since the number
 * was last closed (or each time, while a socket has no peer yet). */
static void note_fd(int fd)
{
	char text[FI_WHAT_LEN];
	int provisional, was, kind;

	if ((unsigned)fd >= FI_MAX_FD ||
	    __atomic_load_n(&described[fd], __ATOMIC_RELAXED))
		return;
	was = inside;
	inside = 1;
	kind = fi_fd_text(fd, text, sizeof(text), &provisional);
	if (kind >= 0) {
		fi_fd_what_add(&state->fds[fd], text, provisional);
		__atomic_store_n(&described[fd], (uint8_t)!provisional,
				 __ATOMIC_RELAXED);
	}
	if (kind == 1)
		uring_seen();
	inside = was;
}

/* A message on stderr from inside the library (no rule reaches it). */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int was = inside, n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	inside = 1;
	/* Nothing to do about a lost warning. */
	(void)fi__libc.write(2, buf, (size_t)n);
	inside = was;
}

/* The program set up an io_uring: what it submits through the ring never
 * passes through these symbols. Counted, and said once per process. */
static int uring_warned;

static void uring_seen(void)
{
	if (__atomic_exchange_n(&uring_warned, 1, __ATOMIC_RELAXED))
		return;
	say("wirecheck-preload: pid %ld uses io_uring: the I/O it submits "
	    "through the ring is neither counted nor ruled\n", (long)getpid());
}

/* ------------------------------------------------------------------------ */
/* A wirecheck subject's gate (WIRECHECK_SHM_FD).                           */

/*
 * When WIRECHECK_SHM_FD names an fd (a wirecheck subject: fd 5, the memfd
 * of struct fi_shm, docs/subject-protocol.md), the library is that
 * subject's gate, as refstack-subject's own fi.c is:
 * - its counters live in that memfd, where the harness reads them for the
 *   trace's syscalls, also after a crash;
 * - only calls on sockets (and epoll_wait) go through the gate: the
 *   subject's event and script pipes, its eventfds, files and terminal
 *   pass straight to libc, uncounted and untouched by any rule, so that a
 *   clamp on the `write` group reaches the socket writes alone, as it does
 *   in the reference stack;
 * - one write(2) to that fd is a command to the gate, for subjects that
 *   cannot call fi_arm (a node script): "arm SPEC" arms a rule (the syntax
 *   of docs/cli.md) and returns the length, or fails with EINVAL; "disarm"
 *   disarms every rule. Nothing is written to the memfd.
 * Without the variable (-1), every fd goes through the gate.
 */
#define SHM_FD_VAR "WIRECHECK_SHM_FD"

static int subject_shm_fd = -1;

static int is_socket(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* Whether a call on fd bypasses the gate. */
static int passthrough(int fd)
{
	return inside || (subject_shm_fd >= 0 && !is_socket(fd));
}

/* Maps the counters of WIRECHECK_SHM_FD; exits 2 on a bad value. */
static void subject_attach(void)
{
	const char *v = getenv(SHM_FD_VAR);
	char *end;
	long fd;

	if (v == NULL || *v == '\0')
		return;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || fd < 0 || fd > INT_MAX)
		die_raw("wirecheck-preload: WIRECHECK_SHM_FD is not an fd\n");
	if (fi_shm_attach((int)fd) < 0)
		die_raw("wirecheck-preload: cannot map WIRECHECK_SHM_FD\n");
	subject_shm_fd = (int)fd;
}

/* One command written to the counters' fd: returns len, or -1 and errno. */
static ssize_t subject_command(const void *buf, size_t len)
{
	char line[256], err[256];
	struct fi_rule rule;

	if (len == 0 || len >= sizeof(line)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(line, buf, len);
	line[len] = '\0';
	if (line[len - 1] == '\n')
		line[len - 1] = '\0';
	if (strcmp(line, "disarm") == 0) {
		fi_disarm_all();
		return (ssize_t)len;
	}
	if (strncmp(line, "arm ", 4) == 0 &&
	    fi_rule_parse(line + 4, &rule, err, sizeof(err)) == 0 &&
	    fi_arm(&rule) >= 0)
		return (ssize_t)len;
	errno = EINVAL;
	return -1;
}

/* ------------------------------------------------------------------------ */
/* The interposers.                                                         */

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.send(fd, buf, len, flags);
	note_fd(fd);
	return to_libc(fi_send(fd, buf, len, flags));
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      __CONST_SOCKADDR_ARG addr, socklen_t addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.sendto(fd, buf, len, flags, addr, addrlen);
	note_fd(fd);
	return to_libc(
		fi_sendto(fd, buf, len, flags, addr.__sockaddr__, addrlen));
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.sendmsg(fd, msg, flags);
	note_fd(fd);
	return to_libc(fi_sendmsg(fd, msg, flags));
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	ready();
	if (fd == subject_shm_fd && fd >= 0 && !inside)
		return subject_command(buf, len);
	if (passthrough(fd))
		return fi__libc.write(fd, buf, len);
	note_fd(fd);
	return to_libc(fi_write(fd, buf, len));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ready();
	if (passthrough(fd))
		return fi__libc.writev(fd, iov, iovcnt);
	note_fd(fd);
	return to_libc(fi_writev(fd, iov, iovcnt));
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.recv(fd, buf, len, flags);
	note_fd(fd);
	return to_libc(fi_recv(fd, buf, len, flags));
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	ready();
	if (passthrough(fd))
		return fi__libc.read(fd, buf, len);
	note_fd(fd);
	return to_libc(fi_read(fd, buf, len));
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	ready();
	if (passthrough(fd))
		return fi__libc.epoll_ctl(epfd, op, fd, ev);
	note_fd(epfd);
	note_fd(fd);
	return (int)to_libc(fi_epoll_ctl(epfd, op, fd, ev));
}

EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int maxevents,
		      int timeout)
{
	ready();
	if (inside)
		return fi__libc.epoll_wait(epfd, evs, maxevents, timeout);
	note_fd(epfd);
	return (int)to_libc(fi_epoll_wait(epfd, evs, maxevents, timeout));
}

EXPORT int accept(int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.accept4(fd, addr, addrlen, 0);
	note_fd(fd);
	return accepted(fi_accept(fd, addr.__sockaddr__, addrlen, 0));
}

EXPORT int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen,
		   int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.accept4(fd, addr, addrlen, flags);
	note_fd(fd);
	return accepted(fi_accept(fd, addr.__sockaddr__, addrlen, flags));
}

EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.connect(fd, addr, addrlen);
	note_fd(fd);
	return (int)to_libc(fi_connect(fd, addr.__sockaddr__, addrlen));
}

EXPORT int shutdown(int fd, int how)
{
	ready();
	if (passthrough(fd))
		return fi__libc.shutdown(fd, how);
	note_fd(fd);
	return (int)to_libc(fi_shutdown(fd, how));
}

EXPORT int close(int fd)
{
	int r;

	ready();
	if (passthrough(fd)) {
		r = fi__libc.close(fd);
		forget(fd);
		return r;
	}
	note_fd(fd);
	r = fi_close(fd);
	forget(fd); /* Linux frees the number even when close fails */
	return (int)to_libc(r);
}

EXPORT int dup2(int oldfd, int newfd)
{
	int r;

	ready();
	r = libc_dup2(oldfd, newfd);
	if (r >= 0)
		forget(r);
	return r;
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	int r;

	ready();
	r = libc_dup3(oldfd, newfd, flags);
	if (r >= 0)
		forget(r);
	return r;
}

EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	int r;

	ready();
	r = libc_close_range(first, last, flags);
	/* CLOSE_RANGE_CLOEXEC only marks them: they stay what they are. */
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
		for (unsigned fd = first; fd <= last && fd < FI_MAX_FD; fd++)
			forget((int)fd);
	return r;
}

EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	ready();
	if (inside)
		return fi__libc.sendfile(out_fd, in_fd, offset, count);
	note_fd(out_fd);
	return to_libc(fi__sendfile(out_fd, in_fd, offset, count));
}

/* With 64-bit files (every LP64 program) the two are one function. */
EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count);
EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count)
{
	return sendfile(out_fd, in_fd, offset, count);
}

EXPORT ssize_t splice(int fd_in, off_t *off_in, int fd_out, off_t *off_out,
		      size_t len, unsigned flags)
{
	ready();
	if (inside)
		return fi__libc.splice(fd_in, off_in, fd_out, off_out, len,
				       flags);
	note_fd(fd_in);
	note_fd(fd_out);
	return to_libc(fi__splice(fd_in, off_in, fd_out, off_out, len, flags));
}

EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags)
{
	ready();
	if (inside)
		return fi__libc.sendmmsg(fd, vec, vlen, flags);
	note_fd(fd);
	return (int)to_libc(fi__sendmmsg(fd, vec, vlen, flags));
}

EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned vlen, int flags,
		    struct timespec *timeout)
{
	ready();
	if (inside)
		return fi__libc.recvmmsg(fd, vec, vlen, flags, timeout);
	note_fd(fd);
	return (int)to_libc(fi__recvmmsg(fd, vec, vlen, flags, timeout));
}

/*
 * syscall(): io_uring has no libc function, so programs (libuv among
 * them) set it up with syscall(SYS_io_uring_setup, ...). The six
 * arguments every Linux syscall can take pass as they came.
 */
EXPORT long syscall(long number, ...)
{
	long a[6], r;
	va_list ap;

	ready();
	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!inside && number == SYS_io_uring_setup) {
		FI__INC(fi_counters()->forms[FI_FORM_IO_URING_SETUP]);
		uring_seen();
	}
	r = libc_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
	/* libuv closes with syscall(SYS_close): the number is free again. */
	if (number == SYS_close)
		forget((int)a[0]);
	return r;
}

EXPORT ssize_t recvfrom(int fd, void *restrict buf, size_t len, int flags,
			__SOCKADDR_ARG addr, socklen_t *restrict addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.recvfrom(fd, buf, len, flags, addr, addrlen);
	note_fd(fd);
	return to_libc(fi__recvfrom(fd, buf, len, flags, addr.__sockaddr__,
				    addrlen));
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.recvmsg(fd, msg, flags);
	note_fd(fd);
	return to_libc(fi__recvmsg(fd, msg, flags));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	ready();
	if (passthrough(fd))
		return fi__libc.readv(fd, iov, iovcnt);
	note_fd(fd);
	return to_libc(fi__readv(fd, iov, iovcnt));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int maxevents,
		       int timeout, const sigset_t *sigmask)
{
	ready();
	if (inside)
		return fi__libc.epoll_pwait(epfd, evs, maxevents, timeout,
					    sigmask);
	note_fd(epfd);
	return (int)to_libc(
		fi__epoll_pwait(epfd, evs, maxevents, timeout, sigmask));
}

/* The fortified forms: a length past the buffer goes to libc's own check,
 * which ends the process as it would have; the rest is the plain call.
 * glibc declares them only inside its fortify headers, so here. */
EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen);
EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
			  int flags);
EXPORT ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t len,
			      size_t buflen, int flags,
			      struct sockaddr *restrict addr,
			      socklen_t *restrict addrlen);

EXPORT ssize_t __read_chk(int fd, void *buf, size_t len, size_t buflen)
{
	ready();
	if (passthrough(fd) || len > buflen)
		return libc_read_chk(fd, buf, len, buflen);
	return to_libc(fi_read(fd, buf, len));
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
			  int flags)
{
	ready();
	if (passthrough(fd) || len > buflen)
		return libc_recv_chk(fd, buf, len, buflen, flags);
	return to_libc(fi_recv(fd, buf, len, flags));
}

EXPORT ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t len,
			      size_t buflen, int flags,
			      struct sockaddr *restrict addr,
			      socklen_t *restrict addrlen)
{
	ready();
	if (passthrough(fd) || len > buflen)
		return libc_recvfrom_chk(fd, buf, len, buflen, flags, addr,
					 addrlen);
	return to_libc(fi__recvfrom(fd, buf, len, flags, addr, addrlen));
}

/* ------------------------------------------------------------------------ */
/* Start and end of the process.                                            */

/* The counts file's name: WIRECHECK_COUNTS with each "%p" replaced by the
 * pid. Returns 0, or -1 when it does not fit. */
static int counts_path(const char *pattern, char *out, size_t len)
{
	size_t n = 0;

	for (const char *p = pattern; *p != '\0'; p++) {
		int w;

		if (p[0] == '%' && p[1] == 'p') {
			w = snprintf(out + n, len - n, "%ld", (long)getpid());
			p++;
		} else {
			w = snprintf(out + n, len - n, "%c", *p);
		}
		if (w < 0 || (size_t)w >= len - n)
			return -1;
		n += (size_t)w;
	}
	return 0;
}

/* Fills the state's head: what tells exec whose it is and what it holds. */
static void state_head(struct fi_state *st)
{
	int n = fi_rule_count();

	memcpy(st->magic, FI_STATE_MAGIC, sizeof(st->magic));
	st->size = sizeof(*st);
	st->pid = (int32_t)getpid();
	st->nrules = (uint32_t)n;
	for (int i = 0; i < n; i++)
		(void)fi_rule_format(fi_rule_get(i), st->rules[i],
				     sizeof(st->rules[i]));
}

/*
 * Makes the state a file's, WIRECHECK_STATE with "%p" replaced by the pid,
 * mapped shared, so that what the process counted outlives it however it
 * ends. Returns the mapping, or NULL after a message (the state then stays
 * private: counted all the same, lost if the process does not exit).
 */
static struct fi_state *state_file(void)
{
	const char *pattern = getenv(STATE_VAR);
	char path[PATH_MAX];
	void *m;
	int fd;

	if (pattern == NULL || *pattern == '\0')
		return NULL;
	if (counts_path(pattern, path, sizeof(path)) != 0) {
		say("wirecheck-preload: %s: name too long\n", STATE_VAR);
		return NULL;
	}
	/* A process that ran execve keeps its pid, and finds its file: its
	 * new image goes on counting in it (the counts are the process's). */
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		say("wirecheck-preload: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (ftruncate(fd, (off_t)sizeof(struct fi_state)) != 0) {
		say("wirecheck-preload: %s: %s\n", path, strerror(errno));
		(void)fi__libc.close(fd);
		return NULL;
	}
	m = mmap(NULL, sizeof(struct fi_state), PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	/* The mapping keeps the file; nothing is lost with the fd. */
	(void)fi__libc.close(fd);
	if (m == MAP_FAILED) {
		say("wirecheck-preload: mmap %s: %s\n", path, strerror(errno));
		return NULL;
	}
	return m;
}

/* Uses st (zeroed, with its head) from now on. */
static void state_use(struct fi_state *st, int mapped)
{
	state = st;
	state_mapped = mapped;
	fi_counters_attach(&st->counters);
}

__attribute__((destructor)) static void preload_fini(void)
{
	const char *pattern = getenv(COUNTS_VAR);
	char path[PATH_MAX];
	json_t *j;

	inside = 1; /* from here on, this thread's calls are the library's */
	__atomic_store_n(&state->exited, 1, __ATOMIC_RELEASE);
	if (pattern == NULL || *pattern == '\0')
		return;
	if (counts_path(pattern, path, sizeof(path)) != 0) {
		fprintf(stderr, "wirecheck-preload: %s: name too long\n",
			COUNTS_VAR);
		return;
	}
	j = fi_state_json(state);
	if (j == NULL ||
	    json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
		fprintf(stderr, "wirecheck-preload: cannot write the counts "
				"to %s\n", path);
	json_decref(j);
}

/* A forked child counts its own calls from zero, in a state of its own (a
 * file of its own pid under WIRECHECK_STATE); its rules keep their state:
 * a repeat=3 rule that fired twice fires once more, in either. It gets a
 * plan lock of its own (fi__fork_child), and describes its fds anew. */
static void child_reset(void)
{
	struct fi_state *old = state, *st;
	int was = inside;

	fi__fork_child();
	inside = 1;
	st = state_mapped ? state_file() : NULL;
	if (st != NULL) {
		state_use(st, 1);
		/* The parent's mapping, which the child must not write. */
		(void)munmap(old, sizeof(*old));
	} else {
		if (state_mapped)
			(void)munmap(old, sizeof(*old));
		memset(&own_state, 0, sizeof(own_state));
		state_use(&own_state, 0);
	}
	state_head(state);
	state->exited = 0;
	fi_counters_reset();
	memset(state->fds, 0, sizeof(state->fds));
	memset(described, 0, sizeof(described));
	inside = was;
}

__attribute__((constructor)) static void preload_init(void)
{
	struct fi_state *st;
	const char *ctl;
	int r;

	ready();
	inside = 1;
	st = state_file();
	state_use(st != NULL ? st : &own_state, st != NULL);
	state->exited = 0; /* this image has not exited, whatever the last did */
	/* fi_init names the variable and the spec on a bad one: the program
	 * must not run without the faults it was asked to run with. */
	if (fi_init() != 0)
		_exit(2);
	state_head(state);
	ctl = getenv(FIU_CTRL_VAR);
	if (ctl != NULL && *ctl != '\0') {
		r = fi_remote_control(ctl);
		if (r != 0) {
			say("wirecheck-preload: %s=%s: cannot open fiu-ctrl's "
			    "FIFOs: %s\n", FIU_CTRL_VAR, ctl, strerror(-r));
			_exit(2);
		}
	}
	subject_attach();
	if (pthread_atfork(fi__fork_prepare, fi__fork_parent, child_reset) != 0)
		die_raw("wirecheck-preload: pthread_atfork failed\n");
	inside = 0;
}
