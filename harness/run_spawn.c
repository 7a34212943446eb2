/*
 * run_spawn.c: the subject started for a run (run_int.h): its process,
 * under valgrind or strace when asked, with the protocol's fds; why it
 * could not be executed; its script written to the control pipe; and its
 * exit reaped.
 */
#include "run_int.h"

#include "event_line.h"
#include "fi.h"
#include "proc.h"
#include "protocol.h"
#include "script.h"
#include "trace.h"
#include "wcutil.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the child tells the harness on its exec pipe when it fails. */
struct exec_failure {
	int stage;  /* EXEC_SETUP: before exec; EXEC_EXEC: exec itself */
	int err;    /* errno */
};
enum { EXEC_SETUP = 1, EXEC_EXEC = 2 };

/* In the child: reports the failure on the exec pipe and exits. */
static void child_fail(int errfd, int stage, int err)
{
	struct exec_failure f = { stage, err };

	(void)!write(errfd, &f, sizeof(f));
	_exit(127);
}

static void child_exec(struct run *r, int ctl, int ev, int shm, int errfd, pid_t parent)
{
	char vglog[128];
	char *argv[16];
	int i = 0;

	/* If the harness dies (an outer timeout's SIGKILL), the subject goes
	 * too, rather than run on as an orphan. */
	if (wc_proc_die_with_parent(parent) < 0)
		_exit(126);
	/* Move the four fds out of the way, then three of them to 3, 4, 5
	 * (the exec pipe, close-on-exec, stays above them). */
	errfd = fcntl(errfd, F_DUPFD_CLOEXEC, 10);
	if (errfd < 0)
		_exit(126);
	ctl = fcntl(ctl, F_DUPFD_CLOEXEC, 10);
	ev = fcntl(ev, F_DUPFD_CLOEXEC, 10);
	shm = fcntl(shm, F_DUPFD_CLOEXEC, 10);
	if (ctl < 0 || ev < 0 || shm < 0 || dup2(ctl, WC_FD_CTL) < 0 ||
	    dup2(ev, WC_FD_EVENTS) < 0 || dup2(shm, WC_FD_SHM) < 0)
		child_fail(errfd, EXEC_SETUP, errno);
	/* The harness's stdout is the trace: what the subject prints (a
	 * debugging print(), an interpreter's banner) goes to its stderr,
	 * where the subject's own messages go. */
	if (dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		if (null < 0 || dup2(null, STDOUT_FILENO) < 0)
			child_fail(errfd, EXEC_SETUP, errno);
	}
	/* Signals and limits as from a shell; no core file, so that the
	 * trace's exit.core does not depend on the machine's ulimit. */
	wc_proc_shell_defaults();
	if (r->opts->valgrind) {
		snprintf(vglog, sizeof(vglog), "--log-file=%s/valgrind.log", r->tmpdir);
		argv[i++] = "valgrind";
		argv[i++] = "--quiet";
		argv[i++] = "--error-exitcode=97";
		argv[i++] = "--leak-check=full";
		argv[i++] = "--show-leak-kinds=definite,indirect";
		argv[i++] = "--errors-for-leak-kinds=definite,indirect";
		argv[i++] = vglog;
	}
	if (r->opts->strace) {
		argv[i++] = "strace";
		argv[i++] = "-f";
		argv[i++] = "-c";
		argv[i++] = "-o";
		argv[i++] = (char *)r->opts->strace;
	}
	argv[i++] = (char *)r->opts->subject;
	argv[i] = NULL;
	/* The wrappers are found through PATH; the subject is the file named
	 * (wirecheck.c makes a bare name ./NAME), and one that is neither a
	 * binary nor a #! script fails with ENOEXEC rather than run under
	 * /bin/sh, as execvp would run it. */
	if (i > 1)
		execvp(argv[0], argv);
	else
		execv(argv[0], argv);
	child_fail(errfd, EXEC_EXEC, errno);
}

/* The interpreter a script's "#!" line names, escaped for a message
 * ("\r" for a CR), in out; 0, or -1 when path does not start with "#!". */
static int script_interpreter(const char *path, char *out, size_t outlen)
{
	char head[256];
	size_t n, o = 0;
	FILE *f = fopen(path, "rb");

	if (!f)
		return -1;
	n = fread(head, 1, sizeof(head) - 1, f);
	fclose(f);
	if (n < 2 || head[0] != '#' || head[1] != '!')
		return -1;
	{
		size_t k = 2;

		while (k < n && (head[k] == ' ' || head[k] == '\t'))
			k++;
		for (; k < n && head[k] != '\n' && head[k] != ' ' && head[k] != '\t' &&
		       o + 5 < outlen; k++) {
			unsigned char c = (unsigned char)head[k];

			if (c == '\r')
				o += (size_t)snprintf(out + o, outlen - o, "\\r");
			else if (c < 0x20 || c >= 0x7f)
				o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
			else
				out[o++] = (char)c;
		}
	}
	out[o] = '\0';
	return 0;
}

/*
 * After fork: waits for the child's exec (the exec pipe closes) or its
 * failure (a struct exec_failure). Returns 0 when the program runs, -2
 * when the subject cannot be executed, -1 when the set-up failed (err).
 */
static int exec_result(struct run *r, int errfd)
{
	struct exec_failure f;
	char interp[128];
	ssize_t n;

	do {
		n = read(errfd, &f, sizeof(f));
	} while (n < 0 && errno == EINTR);
	close(errfd);
	if (n != (ssize_t)sizeof(f))
		return 0;
	run__reap(r, 0);
	if (f.stage == EXEC_SETUP)
		return run__fail(r, "starting the subject: %s", strerror(f.err));
	if (r->opts->valgrind || r->opts->strace)
		return run__fail(r, "cannot run %s: %s", r->opts->valgrind ? "valgrind" : "strace",
			    strerror(f.err));
	if (f.err == ENOENT && script_interpreter(r->opts->subject, interp, sizeof(interp)) == 0)
		run__fail(r, "the subject %s cannot be executed: %s: its #! line names the "
		     "interpreter '%s'%s", r->opts->subject, strerror(f.err), interp,
		     strstr(interp, "\\r") ? ", with a CR (a file with CRLF line ends)"
					    : ", which does not exist");
	else if (f.err == ENOEXEC)
		run__fail(r, "the subject %s cannot be executed: %s: neither a binary nor a script "
		     "with a #! line", r->opts->subject, strerror(f.err));
	else
		run__fail(r, "the subject %s cannot be executed: %s", r->opts->subject,
		     strerror(f.err));
	return -2;
}

/* Closes the fds of a spawn that failed before the fork (-1: not open). */
static void close_fds(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int run__spawn(struct run *r)
{
	/* shm, ctl[2], ev[2], errp[2]: -1 until opened */
	int fds[7] = { -1, -1, -1, -1, -1, -1, -1 }, rc;
	int *ctl = fds + 1, *ev = fds + 3, *errp = fds + 5, shm;
	char address[160], *script;
	pid_t parent;

	shm = fds[0] = memfd_create("wirecheck-counters", MFD_CLOEXEC);
	if (shm < 0 || ftruncate(shm, sizeof(struct fi_shm)) < 0) {
		rc = run__fail(r, "memfd: %s", strerror(errno));
		close_fds(fds, 7);
		return rc;
	}
	r->shm = mmap(NULL, sizeof(struct fi_shm), PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
	if (r->shm == MAP_FAILED) {
		r->shm = NULL;
		rc = run__fail(r, "mmap: %s", strerror(errno));
		close_fds(fds, 7);
		return rc;
	}
	if (pipe2(ctl, O_CLOEXEC) < 0 || pipe2(ev, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
		rc = run__fail(r, "pipe: %s", strerror(errno));
		close_fds(fds, 7);
		return rc;
	}
	wc_peer_address_line(&r->peer, address, sizeof(address));
	script = wc_script_build(r->sc, address);
	if (!script) {
		close_fds(fds, 7);
		return run__fail(r, "out of memory");
	}
	parent = getpid();
	r->pid = fork();
	if (r->pid < 0) {
		rc = run__fail(r, "fork: %s", strerror(errno));
		free(script);
		close_fds(fds, 7);
		return rc;
	}
	if (r->pid == 0)
		child_exec(r, ctl[0], ev[1], shm, errp[1], parent);
	close(ctl[0]);
	close(ev[1]);
	close(shm);
	close(errp[1]);
	r->ctl_fd = ctl[1];
	r->ev_fd = ev[0];
	if ((rc = exec_result(r, errp[0])) != 0) {
		free(script);
		return rc;
	}
	/* Without pidfd_open (old kernels, or the harness itself under
	 * valgrind 3.19, which does not know the call), the loop polls
	 * waitpid() every PID_POLL_MS (run.c) instead. */
	r->pid_fd = wc_proc_pidfd(r->pid);
	/* The poll loop writes the script as the subject reads it, so that
	 * the deadline holds while a long script goes through the pipe. The
	 * "go" lines come after the whole script (the subject asks for them
	 * only once it has read "run"), when the pipe is empty. */
	if (fcntl(r->ctl_fd, F_SETFL, O_NONBLOCK) < 0) {
		free(script);
		return run__fail(r, "fcntl: %s", strerror(errno));
	}
	r->script = script;
	r->script_len = strlen(script);
	return 0;
}

/* Writes what the pipe takes of the rest of the script. A subject that
 * died (EPIPE) reads no more: the rest is dropped. */
void run__write_script(struct run *r)
{
	while (r->script && r->script_off < r->script_len) {
		ssize_t n = write(r->ctl_fd, r->script + r->script_off,
				  r->script_len - r->script_off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0)
			break;
		r->script_off += (size_t)n;
	}
	free(r->script);
	r->script = NULL;
}

void run__reap(struct run *r, int flags)
{
	int status;

	if (r->exited)
		return;
	if (wc_proc_reap(r->pid, flags, &status)) {
		r->exited = 1;
		r->status = status;
		/* After the subject, nobody will ask for reads at points:
		 * the peer takes whatever is left. */
		wc_peer_subject_exited(&r->peer);
	}
}
