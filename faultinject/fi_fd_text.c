/*
 * fi_fd_text.c: what an fd is, in words, for the preload library's record
 * of each fd (fi_state.h's fds[]): "tcp 127.0.0.1:40000 -> 127.0.0.1:8000",
 * "unix stream (unnamed) -> (unnamed)", "pipe", "epoll", "file /tmp/x".
 * It asks the kernel with fstat, getsockopt, getsockname, getpeername and
 * readlink, none of which the library interposes, so nothing here passes
 * through the gate.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fi_fd_text.h"

/* snprintf into a description, where a cut text is still a description
 * (vsnprintf: the compiler does not count what might be cut). */
__attribute__((format(printf, 3, 4))) static void text_put(char *buf, size_t n,
							   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, n, fmt, ap);
	va_end(ap);
}

void fi_fd_what_add(struct fi_fd_what *w, const char *text, int provisional)
{
	uint32_t n = w->n;
	size_t slot;

	if (n > 0) {
		slot = (n < FI_WHAT_MAX ? n : FI_WHAT_MAX) - 1;
		if (w->provisional ||
		    strncmp(w->what[slot], text, FI_WHAT_LEN) == 0) {
			text_put(w->what[slot], FI_WHAT_LEN, "%s", text);
			w->provisional = (uint32_t)provisional;
			return;
		}
	}
	slot = n < FI_WHAT_MAX ? n : FI_WHAT_MAX - 1;
	text_put(w->what[slot], FI_WHAT_LEN, "%s", text);
	w->provisional = (uint32_t)provisional;
	w->n = n + 1;
}

static void addr_text(const struct sockaddr_storage *a, socklen_t len,
		      char *buf, size_t n)
{
	char ip[INET6_ADDRSTRLEN];

	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)a;

		text_put(buf, n, "%s:%u",
			       inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip))
				       ?: "?",
			       (unsigned)ntohs(in->sin_port));
	} else if (a->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)a;

		text_put(buf, n, "[%s]:%u",
			       inet_ntop(AF_INET6, &in6->sin6_addr, ip,
					 sizeof(ip)) ?: "?",
			       (unsigned)ntohs(in6->sin6_port));
	} else if (a->ss_family == AF_UNIX) {
		const struct sockaddr_un *un = (const void *)a;
		size_t off = offsetof(struct sockaddr_un, sun_path);
		size_t plen = len > off ? len - off : 0;

		if (plen > sizeof(un->sun_path))
			plen = sizeof(un->sun_path);
		if (plen == 0)
			text_put(buf, n, "(unnamed)");
		else if (un->sun_path[0] == '\0')
			text_put(buf, n, "@%.*s", (int)(plen - 1),
				       un->sun_path + 1);
		else
			text_put(buf, n, "%.*s", (int)strnlen(un->sun_path, plen),
				       un->sun_path);
	} else {
		text_put(buf, n, "family %d", (int)a->ss_family);
	}
}

/* "tcp 127.0.0.1:40000 -> 127.0.0.1:8000", "tcp listening 0.0.0.0:8000",
 * "unix stream (unnamed) -> (unnamed)"; *provisional when a stream socket
 * has no peer yet (connecting, or not yet listening). */
static void socket_text(int fd, char *buf, size_t n, int *provisional)
{
	struct sockaddr_storage me, peer;
	socklen_t mlen = sizeof(me), plen = sizeof(peer), olen;
	int domain = 0, type = 0, listening = 0;
	char mine[80], theirs[80];
	const char *proto;

	olen = sizeof(domain);
	(void)getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &olen);
	olen = sizeof(type);
	(void)getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen);
	olen = sizeof(listening);
	(void)getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen);
	if (domain == AF_INET || domain == AF_INET6)
		proto = type == SOCK_STREAM ? (domain == AF_INET ? "tcp" : "tcp6")
			: type == SOCK_DGRAM ? (domain == AF_INET ? "udp" : "udp6")
					     : "inet";
	else if (domain == AF_UNIX)
		proto = type == SOCK_STREAM ? "unix stream"
			: type == SOCK_DGRAM ? "unix dgram"
					     : "unix seqpacket";
	else
		proto = "socket";
	memset(&me, 0, sizeof(me));
	if (getsockname(fd, (struct sockaddr *)&me, &mlen) != 0)
		mlen = 0;
	addr_text(&me, mlen, mine, sizeof(mine));
	if (listening) {
		text_put(buf, n, "%s listening %s", proto, mine);
		return;
	}
	memset(&peer, 0, sizeof(peer));
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) != 0) {
		text_put(buf, n, "%s %s (not connected)", proto, mine);
		*provisional = type == SOCK_STREAM || type == SOCK_SEQPACKET;
		return;
	}
	addr_text(&peer, plen, theirs, sizeof(theirs));
	text_put(buf, n, "%s %s -> %s", proto, mine, theirs);
}

/* "pipe", "eventfd", "epoll", "file /tmp/x", "char /dev/pts/0"; returns 1
 * for an io_uring. */
static int other_text(int fd, const struct stat *st, char *buf, size_t n)
{
	char proc[64], link[FI_WHAT_LEN];
	ssize_t len;

	text_put(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	len = readlink(proc, link, sizeof(link) - 1);
	if (len < 0)
		len = 0;
	link[len] = '\0';
	if (strncmp(link, "pipe:", 5) == 0) {
		text_put(buf, n, "pipe");
		return 0;
	}
	if (strncmp(link, "anon_inode:", 11) == 0) {
		const char *k = link + 11;
		size_t kl = strlen(k);

		if (kl >= 2 && k[0] == '[' && k[kl - 1] == ']')
			text_put(buf, n, "%.*s", (int)(kl - 2), k + 1);
		else
			text_put(buf, n, "%s", k);
		if (strcmp(buf, "eventpoll") == 0)
			text_put(buf, n, "epoll");
		return strcmp(buf, "io_uring") == 0;
	}
	text_put(buf, n, "%s %s",
		 S_ISREG(st->st_mode)   ? "file"
		 : S_ISFIFO(st->st_mode) ? "fifo"
		 : S_ISCHR(st->st_mode)  ? "char"
		 : S_ISDIR(st->st_mode)  ? "dir"
					 : "other",
		 link);
	return 0;
}

int fi_fd_text(int fd, char *buf, size_t n, int *provisional)
{
	struct stat st;

	*provisional = 0;
	if (fstat(fd, &st) != 0)
		return -1;
	if (S_ISSOCK(st.st_mode)) {
		socket_text(fd, buf, n, provisional);
		return 0;
	}
	return other_text(fd, &st, buf, n);
}
