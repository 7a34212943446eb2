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
 * recvfrom. Each goes through the same gate as the reference stack's
 * calls (fi.c, built here with FI_PRELOAD): it is counted per kind and fd,
 * the rules of
 * WIRECHECK_FAULTS apply to it (the rule syntax of docs/cli.md, specs
 * separated by ';'), and libc's own function, found with dlsym(RTLD_NEXT),
 * makes the call. The gate's -errno becomes libc's -1 and errno.
 *
 * At exit (exit() or a return from main; not _exit() nor a fatal signal),
 * when WIRECHECK_COUNTS is set, the counts go to that file as JSON, "%p" in
 * the name replaced by the process id; a forked child starts its counts at
 * zero and writes its own file.
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
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <jansson.h>

#include "fi.h"
#include "../harness/protocol.h"

#define EXPORT __attribute__((visibility("default")))
#define COUNTS_VAR "WIRECHECK_COUNTS"

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

/* ------------------------------------------------------------------------ */
/* A wirecheck subject's gate (WIRECHECK_SHM_FD).                           */

/*
 * When WIRECHECK_SHM_FD names an fd (a wirecheck subject: fd 5, the memfd
 * of struct wc_shm, docs/subject-protocol.md), the library is that
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
	struct wc_shm *shm;
	char *end;
	long fd;

	if (v == NULL || *v == '\0')
		return;
	errno = 0;
	fd = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || fd < 0 || fd > INT_MAX)
		die_raw("wirecheck-preload: WIRECHECK_SHM_FD is not an fd\n");
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED,
		   (int)fd, 0);
	if (shm == MAP_FAILED)
		die_raw("wirecheck-preload: cannot map WIRECHECK_SHM_FD\n");
	shm->magic = WC_SHM_MAGIC;
	shm->version = 1;
	fi_counters_attach(&shm->counters);
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
	return to_libc(fi_send(fd, buf, len, flags));
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      __CONST_SOCKADDR_ARG addr, socklen_t addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.sendto(fd, buf, len, flags, addr, addrlen);
	return to_libc(
		fi_sendto(fd, buf, len, flags, addr.__sockaddr__, addrlen));
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.sendmsg(fd, msg, flags);
	return to_libc(fi_sendmsg(fd, msg, flags));
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	ready();
	if (fd == subject_shm_fd && fd >= 0 && !inside)
		return subject_command(buf, len);
	if (passthrough(fd))
		return fi__libc.write(fd, buf, len);
	return to_libc(fi_write(fd, buf, len));
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	ready();
	if (passthrough(fd))
		return fi__libc.writev(fd, iov, iovcnt);
	return to_libc(fi_writev(fd, iov, iovcnt));
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.recv(fd, buf, len, flags);
	return to_libc(fi_recv(fd, buf, len, flags));
}

EXPORT ssize_t read(int fd, void *buf, size_t len)
{
	ready();
	if (passthrough(fd))
		return fi__libc.read(fd, buf, len);
	return to_libc(fi_read(fd, buf, len));
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	ready();
	if (passthrough(fd))
		return fi__libc.epoll_ctl(epfd, op, fd, ev);
	return (int)to_libc(fi_epoll_ctl(epfd, op, fd, ev));
}

EXPORT int epoll_wait(int epfd, struct epoll_event *evs, int maxevents,
		      int timeout)
{
	ready();
	if (inside)
		return fi__libc.epoll_wait(epfd, evs, maxevents, timeout);
	return (int)to_libc(fi_epoll_wait(epfd, evs, maxevents, timeout));
}

EXPORT int accept(int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.accept4(fd, addr, addrlen, 0);
	return (int)to_libc(fi_accept(fd, addr.__sockaddr__, addrlen, 0));
}

EXPORT int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *restrict addrlen,
		   int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.accept4(fd, addr, addrlen, flags);
	return (int)to_libc(fi_accept(fd, addr.__sockaddr__, addrlen, flags));
}

EXPORT int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.connect(fd, addr, addrlen);
	return (int)to_libc(fi_connect(fd, addr.__sockaddr__, addrlen));
}

EXPORT int shutdown(int fd, int how)
{
	ready();
	if (passthrough(fd))
		return fi__libc.shutdown(fd, how);
	return (int)to_libc(fi_shutdown(fd, how));
}

EXPORT int close(int fd)
{
	ready();
	if (passthrough(fd))
		return fi__libc.close(fd);
	return (int)to_libc(fi_close(fd));
}

EXPORT ssize_t recvfrom(int fd, void *restrict buf, size_t len, int flags,
			__SOCKADDR_ARG addr, socklen_t *restrict addrlen)
{
	ready();
	if (passthrough(fd))
		return fi__libc.recvfrom(fd, buf, len, flags, addr, addrlen);
	return to_libc(fi__recvfrom(fd, buf, len, flags, addr.__sockaddr__,
				    addrlen));
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	ready();
	if (passthrough(fd))
		return fi__libc.recvmsg(fd, msg, flags);
	return to_libc(fi__recvmsg(fd, msg, flags));
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	ready();
	if (passthrough(fd))
		return fi__libc.readv(fd, iov, iovcnt);
	return to_libc(fi__readv(fd, iov, iovcnt));
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *evs, int maxevents,
		       int timeout, const sigset_t *sigmask)
{
	ready();
	if (inside)
		return fi__libc.epoll_pwait(epfd, evs, maxevents, timeout,
					    sigmask);
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

/* { name: count } of the kinds whose count is not zero. */
static json_t *kinds_json(const uint64_t *v, int totals)
{
	const struct fi_counters *c = fi_counters();
	json_t *o = json_object();

	for (int k = 0; k < FI_SYS_COUNT && o != NULL; k++) {
		uint64_t n = totals ? fi_calls(c, (enum fi_sys)k) : v[k];

		if (n > 0 && json_object_set_new(o, fi_sys_name((enum fi_sys)k),
						 json_integer((json_int_t)n)) != 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

static json_t *counts_json(void)
{
	const struct fi_counters *c = fi_counters();
	json_t *faults = json_array();
	json_t *ctl = json_pack("{s:I,s:I,s:I}",
				"add", (json_int_t)c->ctl_ops[EPOLL_CTL_ADD],
				"mod", (json_int_t)c->ctl_ops[EPOLL_CTL_MOD],
				"del", (json_int_t)c->ctl_ops[EPOLL_CTL_DEL]);

	for (int i = 0; faults != NULL && i < fi_rule_count(); i++) {
		char spec[128];

		(void)fi_rule_format(fi_rule_get(i), spec, sizeof(spec));
		if (json_array_append_new(faults, json_string(spec)) != 0) {
			json_decref(faults);
			faults = NULL;
		}
	}
	/* json_pack's "o" takes each reference, also of a NULL it then
	 * refuses, so nothing leaks on failure. */
	return json_pack("{s:I,s:o,s:o,s:o,s:o,s:o}", "pid",
			 (json_int_t)getpid(), "faults", faults, "syscalls",
			 kinds_json(NULL, 1), "wouldblock",
			 kinds_json(c->wouldblock, 0), "injected",
			 kinds_json(c->injected, 0), "epoll_ctl_ops", ctl);
}

__attribute__((destructor)) static void preload_fini(void)
{
	const char *pattern = getenv(COUNTS_VAR);
	char path[PATH_MAX];
	json_t *j;

	inside = 1; /* from here on, this thread's calls are the library's */
	if (pattern == NULL || *pattern == '\0')
		return;
	if (counts_path(pattern, path, sizeof(path)) != 0) {
		fprintf(stderr, "wirecheck-preload: %s: name too long\n",
			COUNTS_VAR);
		return;
	}
	j = counts_json();
	if (j == NULL ||
	    json_dump_file(j, path, JSON_INDENT(2) | JSON_SORT_KEYS) != 0)
		fprintf(stderr, "wirecheck-preload: cannot write the counts "
				"to %s\n", path);
	json_decref(j);
}

/* A forked child counts its own calls from zero (its rules keep their
 * state: a repeat=3 rule that fired twice fires once more, in either), and
 * gets a plan lock of its own (fi__fork_child). */
static void child_reset(void)
{
	fi__fork_child();
	fi_counters_reset();
}

__attribute__((constructor)) static void preload_init(void)
{
	ready();
	inside = 1;
	/* fi_init names the variable and the spec on a bad one: the program
	 * must not run without the faults it was asked to run with. */
	if (fi_init() != 0)
		_exit(2);
	subject_attach();
	if (pthread_atfork(fi__fork_prepare, fi__fork_parent, child_reset) != 0)
		die_raw("wirecheck-preload: pthread_atfork failed\n");
	inside = 0;
}
