/*
 * exec_report.c: what `wirecheck exec` reports of the processes it ran
 * (exec_report.h), from the states the preload library left.
 */
#include "exec_report.h"

#include "fi_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int by_pid(const void *a, const void *b)
{
	json_int_t x = json_integer_value(
		json_object_get(*(json_t *const *)a, "pid"));
	json_int_t y = json_integer_value(
		json_object_get(*(json_t *const *)b, "pid"));

	return (x > y) - (x < y);
}

/* The state at path as JSON when it is a regular file of the right size
 * and kind; NULL otherwise, with why in err. Opened without following a
 * link and without blocking: the program can put anything in the
 * directory, a FIFO included. */
static json_t *load_state(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	struct fi_state *st = NULL;
	struct stat sb;
	json_t *j = NULL;
	size_t got = 0;

	if (fd < 0) {
		(void)snprintf(err, errlen, "%s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		(void)snprintf(err, errlen, "not a regular file");
	} else if ((size_t)sb.st_size != sizeof(*st)) {
		(void)snprintf(err, errlen, "not a state of this build (%lld bytes)",
			       (long long)sb.st_size);
	} else if ((st = malloc(sizeof(*st))) == NULL) {
		(void)snprintf(err, errlen, "out of memory");
	} else {
		while (got < sizeof(*st)) {
			ssize_t r = read(fd, (char *)st + got, sizeof(*st) - got);

			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (!fi_state_valid(st, got))
			(void)snprintf(err, errlen, "not a state of this build");
		else if ((j = fi_state_json(st)) == NULL)
			(void)snprintf(err, errlen, "out of memory");
	}
	free(st);
	(void)close(fd); /* read-only: nothing to lose */
	return j;
}

/* Removes fiu-ctrl's FIFOs of a process, which libfiu leaves when the
 * process does not exit (killed, crashed). */
static void fiu_fifos_remove(const char *prefix, json_int_t pid)
{
	char path[PATH_MAX];

	(void)snprintf(path, sizeof(path), "%s-%lld.in", prefix, (long long)pid);
	(void)unlink(path); /* ENOENT: libfiu removed it at exit */
	(void)snprintf(path, sizeof(path), "%s-%lld.out", prefix, (long long)pid);
	(void)unlink(path);
}

int wc_exec_gather(const char *dir, pid_t pid, const char *fiu_ctrl,
		   json_t *report)
{
	json_t *kids = json_array(), *list[4096];
	size_t n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d == NULL) {
		fprintf(stderr, "wirecheck exec: %s: %s\n", dir, strerror(errno));
		return 3;
	}
	json_object_set_new(report, "counts", json_null());
	while ((e = readdir(d)) != NULL) {
		char path[PATH_MAX], err[160];
		json_t *c;

		if (e->d_name[0] == '.')
			continue;
		(void)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		c = load_state(path, err, sizeof(err));
		if (unlink(path) != 0)
			fprintf(stderr, "wirecheck exec: unlink %s: %s\n", path,
				strerror(errno));
		if (c == NULL) {
			fprintf(stderr, "wirecheck exec: %s: %s\n", path, err);
			continue;
		}
		if (fiu_ctrl != NULL)
			fiu_fifos_remove(fiu_ctrl,
					 json_integer_value(json_object_get(c, "pid")));
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

/* Adds one process's counts to the run's: fired per rule, calls per kind. */
static void add_counts(const json_t *c, json_int_t *fired, size_t nrules,
		       json_t *calls)
{
	const json_t *rf = json_object_get(c, "rules_fired"), *v;
	const char *k;
	size_t i;

	json_array_foreach(rf, i, v)
		if (i < nrules)
			fired[i] += json_integer_value(v);
	json_object_foreach((json_t *)json_object_get(c, "syscalls"), k, v) {
		json_int_t was = json_integer_value(json_object_get(calls, k));

		json_object_set_new(calls, k, json_integer(was + json_integer_value(v)));
	}
}

/* A rule that never fired is said on stderr too, with the calls the
 * processes made, since the usual cause is a rule on a call the program
 * does not make (node writes sockets with write and writev, never send). */
void wc_exec_rules_report(const struct exec_options *o, json_t *report)
{
	json_int_t fired[64] = { 0 };
	json_t *rules = json_array(), *warnings = json_array();
	json_t *calls = json_object(), *c, *v;
	size_t n = o->nfaults < 64 ? o->nfaults : 64, i;

	c = json_object_get(report, "counts");
	if (json_is_object(c))
		add_counts(c, fired, n, calls);
	json_array_foreach(json_object_get(report, "children"), i, v)
		add_counts(v, fired, n, calls);
	for (i = 0; i < n; i++) {
		json_array_append_new(rules, json_pack("{s:s,s:I}", "rule",
				      o->faults[i], "fired", fired[i]));
		if (fired[i] == 0) {
			char msg[1024], *dump;

			dump = json_dumps(calls, JSON_SORT_KEYS | JSON_COMPACT);
			(void)snprintf(msg, sizeof(msg),
				       "rule '%s' never fired (calls the kernel "
				       "saw: %s; node and libuv write sockets "
				       "with write/writev, python with send; "
				       "docs/cli.md)", o->faults[i],
				       dump != NULL ? dump : "?");
			free(dump);
			fprintf(stderr, "wirecheck exec: warning: %s\n", msg);
			json_array_append_new(warnings, json_string(msg));
		}
	}
	json_decref(calls);
	json_object_set_new(report, "rules", rules);
	json_object_set_new(report, "warnings", warnings);
}
