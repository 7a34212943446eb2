/*
 * exec.c: `wirecheck exec` (docs/cli.md, "exec").
 *
 * The program runs with LD_PRELOAD naming the gate's preload library
 * (prepended to any LD_PRELOAD it had), WIRECHECK_FAULTS set to the rules,
 * and WIRECHECK_COUNTS naming DIR/%p.json in a private temporary directory,
 * so that it and every process it forks write their counts there at exit.
 * The report gathers them: the program's own counts under "counts", those
 * of other processes under "children", ordered by pid.
 *
 * The wait never hangs: SIGCHLD is blocked before the fork and waited for
 * with sigtimedwait against a CLOCK_MONOTONIC deadline; past it, the whole
 * process group gets SIGKILL and the report says timed_out.
 */
#include "exec.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "wirecheck exec: %s: %s\n", what, strerror(err));
	return 3;
}

static double now_ms(void)
{
	struct timespec t;

	(void)clock_gettime(CLOCK_MONOTONIC, &t); /* cannot fail for it */
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Sets the child's environment; on failure the child reports and exits 127. */
static void child_env(const struct exec_options *o, const char *faults,
		      const char *counts)
{
	const char *old = getenv("LD_PRELOAD");
	size_t len = strlen(o->preload) + (old ? strlen(old) + 1 : 0) + 1;
	char *pre = malloc(len);

	if (pre == NULL)
		_exit(127);
	(void)snprintf(pre, len, "%s%s%s", o->preload, old ? " " : "",
		       old ? old : "");
	if (setenv("LD_PRELOAD", pre, 1) != 0 ||
	    setenv("WIRECHECK_FAULTS", faults, 1) != 0 ||
	    setenv("WIRECHECK_COUNTS", counts, 1) != 0)
		_exit(127);
	free(pre);
}

/* Waits for pid until deadline; kills its group past it. Fills *status. */
static int wait_child(pid_t pid, const sigset_t *chld, double deadline,
		      int *status, int *timed_out)
{
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);
		double left = deadline - now_ms();
		struct timespec ts;

		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return fail("waitpid", errno);
		if (left <= 0) {
			*timed_out = 1;
			/* The group, so that what the program forked goes too;
			 * the program itself at least, if the group is gone. */
			if (kill(-pid, SIGKILL) != 0 && kill(pid, SIGKILL) != 0 &&
			    errno != ESRCH)
				return fail("kill", errno);
			if (waitpid(pid, status, 0) != pid)
				return fail("waitpid", errno);
			return 0;
		}
		ts.tv_sec = (time_t)(left / 1e3);
		ts.tv_nsec = (long)((left - (double)ts.tv_sec * 1e3) * 1e6);
		if (sigtimedwait(chld, NULL, &ts) < 0 && errno != EAGAIN &&
		    errno != EINTR)
			return fail("sigtimedwait", errno);
	}
}

static json_t *exit_json(int status, int timed_out)
{
	json_t *e = json_object();

	json_object_set_new(e, "timed_out", json_boolean(timed_out));
	if (WIFEXITED(status)) {
		json_object_set_new(e, "code", json_integer(WEXITSTATUS(status)));
	} else if (WIFSIGNALED(status)) {
		const char *name = sigabbrev_np(WTERMSIG(status));
		char buf[32];

		(void)snprintf(buf, sizeof(buf), "SIG%s", name ? name : "?");
		json_object_set_new(e, "signal", json_string(buf));
		json_object_set_new(e, "core", json_boolean(WCOREDUMP(status)));
	}
	return e;
}

static int by_pid(const void *a, const void *b)
{
	json_int_t x = json_integer_value(
		json_object_get(*(json_t *const *)a, "pid"));
	json_int_t y = json_integer_value(
		json_object_get(*(json_t *const *)b, "pid"));

	return (x > y) - (x < y);
}

/* Reads every JSON file of dir into the report, then removes them and dir. */
static int gather(const char *dir, pid_t pid, json_t *report)
{
	json_t *kids = json_array(), *list[4096];
	size_t n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL)
		return fail(dir, errno);
	json_object_set_new(report, "counts", json_null());
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX];
		json_error_t err;
		json_t *c;

		if (e->d_name[0] == '.')
			continue;
		(void)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		c = json_load_file(path, 0, &err);
		if (unlink(path) != 0)
			fprintf(stderr, "wirecheck exec: unlink %s: %s\n", path,
				strerror(errno));
		if (c == NULL) {
			fprintf(stderr, "wirecheck exec: %s:%d: %s\n", path,
				err.line, err.text);
			continue;
		}
		if (json_integer_value(json_object_get(c, "pid")) == pid)
			json_object_set_new(report, "counts", c);
		else if (n < sizeof(list) / sizeof(list[0]))
			list[n++] = c;
		else
			json_decref(c);
	}
	if (closedir(d) != 0 || rmdir(dir) != 0)
		fprintf(stderr, "wirecheck exec: cannot remove %s: %s\n", dir,
			strerror(errno));
	qsort(list, n, sizeof(list[0]), by_pid);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(kids, list[i]);
	json_object_set_new(report, "children", kids);
	return 0;
}

/* The specs joined by ';', WIRECHECK_FAULTS's syntax; NULL without memory. */
static char *faults_join(const struct exec_options *o)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < o->nfaults; i++)
		len += strlen(o->faults[i]) + 1;
	s = malloc(len);
	if (s == NULL)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; i < o->nfaults; i++) {
		if (i > 0)
			strcat(s, ";");
		strcat(s, o->faults[i]);
	}
	return s;
}

int wc_exec(const struct exec_options *o)
{
	char dir[] = "/tmp/wirecheck-exec.XXXXXX", counts[64];
	json_t *report, *argv, *faults_json;
	char *faults;
	sigset_t chld, old;
	int status = 0, timed_out = 0, rc;
	double deadline;
	pid_t pid;

	if (access(o->preload, R_OK) != 0)
		return fail(o->preload, errno);
	faults = faults_join(o);
	if (faults == NULL)
		return fail("malloc", ENOMEM);
	if (mkdtemp(dir) == NULL) {
		free(faults);
		return fail("mkdtemp", errno);
	}
	(void)snprintf(counts, sizeof(counts), "%s/%%p.json", dir);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, &old) != 0) {
		rc = fail("sigprocmask", errno);
		free(faults);
		(void)rmdir(dir); /* empty and ours */
		return rc;
	}
	deadline = now_ms() + o->timeout_ms;
	pid = fork();
	if (pid < 0) {
		rc = fail("fork", errno);
		free(faults);
		(void)rmdir(dir);
		(void)sigprocmask(SIG_SETMASK, &old, NULL);
		return rc;
	}
	if (pid == 0) {
		(void)setpgid(0, 0); /* its own group, so a timeout kills all */
		child_env(o, faults, counts);
		if (sigprocmask(SIG_SETMASK, &old, NULL) != 0)
			_exit(127);
		execvp(o->argv[0], o->argv);
		fprintf(stderr, "wirecheck exec: %s: %s\n", o->argv[0],
			strerror(errno));
		_exit(127);
	}
	(void)setpgid(pid, pid); /* the same, from this side: no race */
	free(faults);
	rc = wait_child(pid, &chld, deadline, &status, &timed_out);
	if (sigprocmask(SIG_SETMASK, &old, NULL) != 0 && rc == 0)
		rc = fail("sigprocmask", errno);
	if (rc != 0)
		return rc;
	report = json_object();
	argv = json_array();
	faults_json = json_array();
	for (size_t i = 0; o->argv[i] != NULL; i++)
		json_array_append_new(argv, json_string(o->argv[i]));
	for (size_t i = 0; i < o->nfaults; i++)
		json_array_append_new(faults_json, json_string(o->faults[i]));
	json_object_set_new(report, "command", argv);
	json_object_set_new(report, "faults", faults_json);
	json_object_set_new(report, "exit", exit_json(status, timed_out));
	rc = gather(dir, pid, report);
	if (rc == 0) {
		rc = o->output
			? json_dump_file(report, o->output,
					 JSON_INDENT(2) | JSON_SORT_KEYS)
			: json_dumpf(report, stdout,
				     JSON_INDENT(2) | JSON_SORT_KEYS);
		if (rc != 0)
			rc = fail(o->output ? o->output : "stdout", EIO);
		else if (!o->output)
			putchar('\n');
	}
	json_decref(report);
	return rc;
}
