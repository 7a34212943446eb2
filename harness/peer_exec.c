/*
 * peer_exec.c: a real program as the peer (peer_exec.h).
 */
#include "peer_exec.h"

#include "fi.h"
#include "proc.h"
#include "wcutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARG_MAX_BYTES SC_MAX_EXEC_ARG
#define LISTEN_CHECK_MS 10  /* between two reads of /proc/net */

/* ---- starting ----------------------------------------------------------- */

static void child(char **argv, int out, int err, pid_t parent)
{
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

	/* Its own process group, so that the deadline's SIGKILL reaches
	 * what it started too (a shell's children); and gone with the
	 * harness, if the harness dies first. */
	(void)setpgid(0, 0);
	if (wc_proc_die_with_parent(parent) < 0)
		_exit(126);
	if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		_exit(126);
	/* No gate, and the defaults a program started from a shell has. */
	wc_proc_shell_defaults();
	execvp(argv[0], argv);
	dprintf(2, "wirecheck: peer exec: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/* argv of spec with its {name}s substituted; NULL after a message. */
static char **expand_argv(const struct sc_peer_exec *spec, const struct sc_exec_address *a,
			  char *err, size_t errlen)
{
	char **argv = calloc((size_t)spec->argc + 1, sizeof(char *));
	struct sc_exec_address prog = *a;

	if (!argv) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (int i = 0; i < spec->argc; i++) {
		char msg[256];

		argv[i] = malloc(ARG_MAX_BYTES);
		if (!argv[i]) {
			snprintf(err, errlen, "out of memory");
			break;
		}
		/* PROGRAM (argv[0]) gets {dir} only. */
		prog.program = i == 0;
		if (sc_exec_expand(spec->argv[i], &prog, argv[i], ARG_MAX_BYTES, msg, sizeof(msg)) < 0) {
			snprintf(err, errlen, "line %d: peer exec: %s", spec->line, msg);
			free(argv[i]);
			argv[i] = NULL;
			break;
		}
	}
	if (argv[spec->argc - 1] == NULL) {
		for (int i = 0; i < spec->argc; i++)
			free(argv[i]);
		free(argv);
		return NULL;
	}
	return argv;
}

static void free_argv(char **argv)
{
	for (int i = 0; argv && argv[i]; i++)
		free(argv[i]);
	free(argv);
}

void wc_prog_init(struct wc_prog *pg, const struct sc_peer_exec *spec)
{
	memset(pg, 0, sizeof(*pg));
	pg->spec = spec;
	pg->pid_fd = pg->out_fd = pg->err_fd = -1;
	pg->listening = -1;
}

int wc_prog_start(struct wc_prog *pg, const struct sc_peer_exec *spec,
		  const struct sc_exec_address *a, char *err, size_t errlen)
{
	int out[2], errp[2];
	char **argv;
	pid_t parent;

	wc_prog_init(pg, spec);
	if (wc_stream_init(&pg->out) < 0) {
		snprintf(err, errlen, "sha256 context");
		return -1;
	}
	if (!(argv = expand_argv(spec, a, err, errlen)))
		return -1;
	if (pipe2(out, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		free_argv(argv);
		return -1;
	}
	if (pipe2(errp, O_CLOEXEC) < 0) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		free_argv(argv);
		return -1;
	}
	parent = getpid();
	pg->pid = fork();
	if (pg->pid == 0)
		child(argv, out[1], errp[1], parent);
	free_argv(argv);
	close(out[1]);
	close(errp[1]);
	pg->out_fd = out[0];
	pg->err_fd = errp[0];
	if (pg->pid < 0) {
		pg->pid = 0;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	/* Also here: the child may not have run its setpgid yet when the
	 * deadline's kill names the group. */
	(void)setpgid(pg->pid, pg->pid);
	if (fcntl(pg->out_fd, F_SETFL, O_NONBLOCK) < 0 || fcntl(pg->err_fd, F_SETFL, O_NONBLOCK) < 0) {
		snprintf(err, errlen, "fcntl: %s", strerror(errno));
		return -1;
	}
	pg->pid_fd = wc_proc_pidfd(pg->pid);
	return 0;
}

/* ---- waiting for it to listen -------------------------------------------- */

/* Whether /proc/net/FILE (tcp or tcp6) has a socket listening on port. */
static int tcp_listens(const char *file, int port)
{
	char line[512];
	FILE *f = fopen(file, "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned lport, state;

		/* "  0: 0100007F:1F90 00000000:0000 0A ...": 0A is LISTEN. */
		if (sscanf(line, " %*d: %*[0-9A-Fa-f]:%X %*[0-9A-Fa-f]:%*X %X", &lport, &state) == 2)
			found = (int)lport == port && state == 0x0A;
	}
	fclose(f);
	return found;
}

/* Whether a unix socket bound to path listens (/proc/net/unix). */
static int unix_listens(const char *path)
{
	char line[4608], name[4097];
	FILE *f = fopen("/proc/net/unix", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned flags;

		/* "Num: RefCount Protocol Flags Type St Inode Path"; flag
		 * 0x10000 (__SO_ACCEPTCON) is a listening socket. */
		if (sscanf(line, "%*s %*x %*x %x %*x %*x %*u %4096s", &flags, name) == 2)
			found = (flags & 0x10000) && strcmp(name, path) == 0;
	}
	fclose(f);
	return found;
}

static void reap(struct wc_prog *pg, int flags)
{
	int status;

	if (pg->exited || pg->pid <= 0)
		return;
	if (wc_proc_reap(pg->pid, flags, &status)) {
		pg->exited = 1;
		pg->status = status;
	}
}

void wc_prog_wait_listening(struct wc_prog *pg, const struct sc_exec_address *a,
			    int64_t deadline_ms)
{
	/* No event says that another process listens: the harness reads the
	 * kernel's socket tables until it does. Polling decides only when the
	 * subject starts, never what the trace holds. */
	pg->listening = 0;
	while (!pg->exited && wc_ms_left(deadline_ms) > 0) {
		if (a->transport == SC_UNIX ? unix_listens(a->path)
		    : tcp_listens("/proc/net/tcp", a->port) || tcp_listens("/proc/net/tcp6", a->port)) {
			pg->listening = 1;
			return;
		}
		(void)poll(NULL, 0, LISTEN_CHECK_MS);
		reap(pg, WNOHANG);
	}
}

/* ---- the poll loop's part ------------------------------------------------ */

void wc_prog_pollfds(const struct wc_prog *pg, struct pollfd *pfd)
{
	pfd[0] = (struct pollfd){ .fd = pg->out_fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = pg->err_fd, .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = pg->exited ? -1 : pg->pid_fd, .events = POLLIN };
}

static void take_err(struct wc_prog *pg, const unsigned char *buf, size_t n)
{
	size_t kept = pg->err_len < WC_PROG_ERR_TAIL ? pg->err_len : WC_PROG_ERR_TAIL;

	if (n >= WC_PROG_ERR_TAIL) {
		memcpy(pg->err_tail, buf + n - WC_PROG_ERR_TAIL, WC_PROG_ERR_TAIL);
	} else {
		if (kept + n > WC_PROG_ERR_TAIL) {
			size_t drop = kept + n - WC_PROG_ERR_TAIL;

			memmove(pg->err_tail, pg->err_tail + drop, kept - drop);
			kept -= drop;
		}
		memcpy(pg->err_tail + kept, buf, n);
	}
	pg->err_len += n;
}

/* Reads what fd holds now; closes it at EOF or on an error. */
static void drain(struct wc_prog *pg, int *fd, int is_out)
{
	unsigned char buf[65536];

	while (*fd >= 0) {
		ssize_t n = read(*fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			close(*fd);
			*fd = -1;
			return;
		}
		if (is_out)
			wc_stream_take(&pg->out, buf, (size_t)n);
		else
			take_err(pg, buf, (size_t)n);
	}
}

void wc_prog_on_poll(struct wc_prog *pg, const struct pollfd *pfd)
{
	if (pfd[0].revents)
		drain(pg, &pg->out_fd, 1);
	if (pfd[1].revents)
		drain(pg, &pg->err_fd, 0);
	if (pfd[2].revents || pg->pid_fd < 0)
		reap(pg, WNOHANG);
}

int wc_prog_wants_tick(const struct wc_prog *pg)
{
	return pg->pid > 0 && !pg->exited && pg->pid_fd < 0;
}

void wc_prog_subject_exited(struct wc_prog *pg)
{
	/* A subject that exits before its program starts (a foreign subject
	 * that refuses the script) leaves pg without a spec. */
	if (pg->spec && pg->spec->stop_sig && pg->pid > 0 && !pg->exited && !pg->stopped) {
		(void)kill(-pg->pid, pg->spec->stop_sig);
		pg->stopped = 1;
	}
}

void wc_prog_kill(struct wc_prog *pg)
{
	if (pg->pid > 0 && !pg->exited) {
		pg->timed_out = 1;
		(void)kill(-pg->pid, SIGKILL);
		reap(pg, 0);
	}
	/* What the pipes hold by then; a process that left the group and
	 * holds them open is not waited for. */
	drain(pg, &pg->out_fd, 1);
	drain(pg, &pg->err_fd, 0);
	if (pg->out_fd >= 0)
		close(pg->out_fd);
	if (pg->err_fd >= 0)
		close(pg->err_fd);
	pg->out_fd = pg->err_fd = -1;
}

int wc_prog_finished(const struct wc_prog *pg)
{
	return (pg->pid <= 0 || pg->exited) && pg->out_fd < 0 && pg->err_fd < 0;
}

/* ---- the trace ------------------------------------------------------------ */

/* Bytes as JSON text: printable ASCII, newline and tab as they are, a
 * backslash doubled, anything else as \xHH (valid UTF-8 whatever the
 * program printed). */
static json_t *text_json(const unsigned char *b, size_t n)
{
	char *s = malloc(4 * n + 1);
	size_t o = 0;
	json_t *j;

	if (!s)
		return json_null();
	for (size_t i = 0; i < n; i++) {
		if (b[i] == '\\') {
			s[o++] = '\\';
			s[o++] = '\\';
		} else if ((b[i] >= 0x20 && b[i] < 0x7f) || b[i] == '\n' || b[i] == '\t') {
			s[o++] = (char)b[i];
		} else {
			o += (size_t)snprintf(s + o, 5, "\\x%02x", b[i]);
		}
	}
	s[o] = '\0';
	j = json_string(s);
	free(s);
	return j ? j : json_null();
}

static json_t *exit_json(const struct wc_prog *pg)
{
	json_t *o = json_object();

	if (!pg->exited) {
		json_object_set_new(o, "code", json_null());
	} else if (WIFEXITED(pg->status)) {
		json_object_set_new(o, "code", json_integer(WEXITSTATUS(pg->status)));
	} else if (WIFSIGNALED(pg->status)) {
		const char *name = fi_signal_name(WTERMSIG(pg->status));

		json_object_set_new(o, "signal", name ? json_string(name)
						      : json_integer(WTERMSIG(pg->status)));
	}
	return o;
}

static json_t *program_json(const struct wc_prog *pg)
{
	json_t *argv = json_array(), *o;
	size_t kept = pg->err_len < WC_PROG_ERR_TAIL ? pg->err_len : WC_PROG_ERR_TAIL;

	for (int i = 0; i < pg->spec->argc; i++)
		json_array_append_new(argv, json_string(pg->spec->argv[i]));
	o = json_pack("{s:o,s:o,s:b,s:b,s:o,s:I}", "argv", argv, "exit", exit_json(pg),
		      "started", pg->pid > 0, "timed_out", pg->timed_out,
		      "stderr", text_json((const unsigned char *)pg->err_tail, kept),
		      "stderr_bytes", (json_int_t)pg->err_len);
	if (!o)
		return json_null();
	if (pg->stopped) {
		const char *name = fi_signal_name(pg->spec->stop_sig);

		json_object_set_new(o, "stopped", name ? json_string(name)
						      : json_integer(pg->spec->stop_sig));
	}
	if (pg->listening >= 0)
		json_object_set_new(o, "listened", json_boolean(pg->listening));
	if (pg->out.bytes <= WC_STREAM_HEAD)
		json_object_set_new(o, "stdout", text_json(pg->out.head, (size_t)pg->out.bytes));
	return o;
}

json_t *wc_prog_json(struct wc_prog *pg)
{
	return wc_stream_json(&pg->out, json_pack("{s:[],s:o}", "reads", "program",
						  program_json(pg)));
}

void wc_prog_free(struct wc_prog *pg)
{
	if (pg->pid > 0 && !pg->exited) {
		(void)kill(-pg->pid, SIGKILL);
		reap(pg, 0);
	}
	if (pg->out_fd >= 0)
		close(pg->out_fd);
	if (pg->err_fd >= 0)
		close(pg->err_fd);
	if (pg->pid_fd >= 0)
		close(pg->pid_fd);
	wc_stream_free(&pg->out);
	memset(pg, 0, sizeof(*pg));
	pg->pid_fd = pg->out_fd = pg->err_fd = -1;
}
