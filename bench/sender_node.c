/*
 * sender_node.c: node's end(P) as a sender of bench/sender_cpu, and any other
 * program that speaks its protocol (bench/sender_libuv.c); the contracts are
 * in sender_node.h, the protocol in sender_node.js.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sender_node.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

/* Reads one line of node's into buf, without its new line. Returns 0, or
 * -1 at end of file. */
static int node_line(struct node_sender *n, char *buf, size_t len)
{
	size_t k;

	if (fgets(buf, (int)len, n->out) == NULL)
		return -1;
	k = strlen(buf);
	if (k > 0 && buf[k - 1] == '\n')
		buf[k - 1] = '\0';
	return 0;
}

static void node_reap(pid_t pid, int *status)
{
	*status = bc_wait_status(pid);
}

int sender_child_start(struct node_sender *n, const char *prog, const char *fallback,
		       const char *arg, const char *preload, const char *faults)
{
	int in[2], out[2], status;
	char line[128];

	*n = (struct node_sender){ .pid = -1 };
	bc_pipe(in);
	bc_pipe(out);
	n->pid = bc_fork();
	if (n->pid == 0) {
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0)
			_exit(127);
		if (preload != NULL &&
		    (setenv("LD_PRELOAD", preload, 1) != 0 ||
		     setenv("WIRECHECK_FAULTS", faults ? faults : "", 1) != 0))
			_exit(127);
		execlp(prog, prog, arg, (char *)NULL);
		if (fallback != NULL)
			execl(fallback, prog, arg, (char *)NULL);
		_exit(127);
	}
	if (close(in[0]) != 0 || close(out[1]) != 0)
		bc_die("close: %s", strerror(errno));
	n->in = fdopen(in[1], "w");
	n->out = fdopen(out[0], "r");
	if (n->in == NULL || n->out == NULL)
		bc_die("fdopen: %s", strerror(errno));
	if (node_line(n, line, sizeof(line)) == 0 &&
	    sscanf(line, "ready %31s", n->version) == 1)
		return 0;
	/* Not there, or not a sender: close and reap, so nothing is left. */
	if (fclose(n->in) != 0 || fclose(n->out) != 0)
		bc_die("fclose: %s", strerror(errno));
	node_reap(n->pid, &status);
	*n = (struct node_sender){ .pid = -1 };
	return -ENOENT;
}

int node_start(struct node_sender *n, const char *script)
{
	return sender_child_start(n, "node", "/usr/bin/node", script, NULL, NULL);
}

void node_run(struct node_sender *n, const char *unix_path, int port,
	      size_t len, double *cpu_ms)
{
	char line[256];
	double us;

	if (unix_path != NULL)
		fprintf(n->in, "unix %s %zu\n", unix_path, len);
	else
		fprintf(n->in, "tcp %d %zu\n", port, len);
	if (fflush(n->in) != 0)
		bc_die("writing to node: %s", strerror(errno));
	if (node_line(n, line, sizeof(line)) != 0)
		bc_die("the %s sender exited during a run", n->version);
	if (sscanf(line, "ok %lf", &us) != 1 || us < 0.0)
		bc_die("the %s sender answered: %s", n->version, line);
	*cpu_ms = us / 1e3;
}

void node_stop(struct node_sender *n)
{
	int status;

	if (n->pid < 0)
		return;
	if (fclose(n->in) != 0 || fclose(n->out) != 0)
		bc_die("fclose: %s", strerror(errno));
	node_reap(n->pid, &status);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bc_die("the %s sender exited with status %d", n->version, status);
	n->pid = -1;
}
