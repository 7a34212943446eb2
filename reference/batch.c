/*
 * batch.c: the process-wide list of sockets whose batch holds bytes, and
 * the process-exit wrappers that send every batch before the process goes.
 *
 * One list for the process, not one per loop: rs_raise and rs_abort must
 * reach every batch without knowing the loops. Which writes a batch holds,
 * and how it is sent, is the socket's business (socket.c); this file only
 * knows which sockets have one.
 */
#include "rs_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

struct rs__batch_link *rs__batched;

void rs__batch_list(struct rs__batch_link *l)
{
	if (l->listed)
		return;
	l->listed = 1;
	l->next = rs__batched;
	rs__batched = l;
}

void rs__batch_unlist(struct rs__batch_link *l)
{
	struct rs__batch_link **p = &rs__batched;

	if (!l->listed)
		return;
	while (*p && *p != l)
		p = &(*p)->next;
	if (*p)
		*p = l->next;
	l->listed = 0;
	l->next = NULL;
}

int rs__batches_flush(rs_loop *loop)
{
	int sent = 0;
	struct rs__batch_link *l = rs__batched;

	while (l) {
		struct rs__batch_link *next = l->next;

		if (l->loop == loop) {
			rs__socket_batch_flush(l->socket);
			sent++;
		}
		l = next;
	}
	return sent;
}

static void batches_flush_all(void)
{
	while (rs__batched)
		rs__socket_batch_flush(rs__batched->socket);
}

/* Whether the default action of sig ends the process (POSIX: terminate or
 * core); the others are ignore, stop and continue. */
static int sig_default_ends(int sig)
{
	switch (sig) {
	case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:
	case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:
		return 0;
	default:
		return 1;
	}
}

int rs_raise(int sig)
{
	struct sigaction sa;

	/* A number kill() refuses does nothing to the process, so it sends
	 * nothing either. */
	if (sig <= 0 || sig >= NSIG || sigaction(sig, NULL, &sa) < 0)
		return -EINVAL;
	if (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL &&
	    sig_default_ends(sig))
		batches_flush_all();
	return raise(sig) == 0 ? 0 : -EINVAL;
}

void rs_abort(void)
{
	batches_flush_all();
	abort();
}

void rs_exit(int code)
{
	batches_flush_all();
	exit(code);
}

int rs_execve(const char *path, char *const argv[], char *const envp[])
{
	batches_flush_all();
	execve(path, argv, envp);
	return -errno;
}
