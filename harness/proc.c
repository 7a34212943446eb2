/*
 * proc.c: process control (proc.h).
 */
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* How deep wc_proc_kill_tree follows children: deeper is a fork bomb's,
 * not a wrapper's. */
#define KILL_TREE_DEPTH 16
/* How long wc_proc_kill_tree waits for each descendant to end. */
#define KILL_TREE_WAIT_MS 1000

int wc_proc_die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent)
		return -1;
	return 0;
}

void wc_proc_shell_defaults(void)
{
	struct rlimit nocore = { 0, 0 };
	sigset_t none;

	(void)unsetenv("WIRECHECK_FAULTS");
	(void)signal(SIGPIPE, SIG_DFL);
	(void)sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)setrlimit(RLIMIT_CORE, &nocore);
}

int wc_proc_reap(pid_t pid, int flags, int *status)
{
	pid_t p;

	do {
		p = waitpid(pid, status, flags);
	} while (p < 0 && errno == EINTR);
	return p == pid;
}

int wc_proc_pidfd(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

int wc_proc_wait_ended(int pidfd, int ms)
{
	struct pollfd w = { .fd = pidfd, .events = POLLIN };
	int n;

	while ((n = poll(&w, 1, ms)) < 0 && errno == EINTR)
		;
	return n < 0 ? -1 : n > 0;
}

int wc_proc_parent(pid_t pid, long *ppid, long *pgrp)
{
	char path[64], buf[512], *close_paren = NULL;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return -1;
	if (fgets(buf, sizeof(buf), f))
		close_paren = strrchr(buf, ')');
	(void)fclose(f); /* read-only: nothing to lose */
	/* "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and ')'. */
	if (!close_paren || sscanf(close_paren + 1, " %*c %ld %ld", ppid, pgrp) != 2)
		return -1;
	return 0;
}

/* The children of one thread's list, each killed as a tree. */
static void kill_children(const char *list_path, int depth);

static void kill_tree(pid_t pid, int depth)
{
	char path[96];
	struct dirent *t;
	DIR *tasks;
	int pfd = depth > 0 ? wc_proc_pidfd(pid) : -1;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if (depth < KILL_TREE_DEPTH && (tasks = opendir(path)) != NULL) {
		while ((t = readdir(tasks)) != NULL) {
			if (t->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid,
				 t->d_name);
			kill_children(path, depth);
		}
		(void)closedir(tasks); /* a directory stream: nothing to lose */
	}
	(void)kill(pid, SIGKILL); /* ESRCH: it just ended */
	if (pfd >= 0) {
		(void)wc_proc_wait_ended(pfd, KILL_TREE_WAIT_MS);
		close(pfd);
	}
}

static void kill_children(const char *list_path, int depth)
{
	char buf[4096];
	FILE *f = fopen(list_path, "r");
	size_t n;

	if (!f)
		return;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f); /* read-only: nothing to lose */
	buf[n] = '\0';
	if (n == sizeof(buf) - 1) { /* full: the last pid may be cut */
		char *sp = strrchr(buf, ' ');

		*(sp ? sp : buf) = '\0';
	}
	/* strtok_r: the recursion tokenizes buffers of its own. */
	for (char *save, *w = strtok_r(buf, " \n", &save); w;
	     w = strtok_r(NULL, " \n", &save)) {
		char *end;
		long child = strtol(w, &end, 10);

		if (*end == '\0' && child > 0 && child <= INT_MAX)
			kill_tree((pid_t)child, depth + 1);
	}
}

void wc_proc_kill_tree(pid_t pid)
{
	kill_tree(pid, 0);
}
