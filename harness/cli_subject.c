/*
 * cli_subject.c: the subject a run's --subject names: a known name, or a
 * PATH that must be an executable file; and the gate preloaded into a
 * subject not linked against it (cli.h).
 */
#include "cli.h"
#include "layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The subject beside this program. */
char *wc_cli_default_subject(void)
{
	return wc_locate("refstack-subject");
}

/*
 * The subjects known by name (docs/subjects.md): the reference stack, linked
 * against the gate; node:net and libuv, which are not and run with the gate
 * preloaded. Sets *subject (to free) and *preload for a name; leaves both
 * alone for a PATH. Returns 0, or 3 without memory.
 */
int wc_cli_named_subject(const char *given, char **subject, int *preload)
{
	static const struct { const char *name, *program; int preload; } names[] = {
		{ "refstack", "refstack-subject", 0 },
		{ "node", "node-subject", 1 },
		{ "libuv", "libuv-subject", 1 },
		{ "bun", "bun-subject", 1 },
		/* each connection handed off by an HTTP server (--subject-handoff) */
		{ "node-upgrade", "node-subject", 1 },
		{ "bun-upgrade", "bun-subject", 1 },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(given, names[i].name) != 0)
			continue;
		*subject = wc_locate(names[i].program);
		*preload |= names[i].preload;
		return *subject ? 0 : 3;
	}
	return 0;
}

/*
 * A subject that is not linked against the gate runs with it preloaded
 * (faultinject/preload.c): LD_PRELOAD names the library, before any the
 * environment had, and WIRECHECK_SHM_FD=5 makes it that subject's gate
 * (counters in the shared memory, sockets only, commands on fd 5). Set in
 * this process's environment, which the subject inherits. Returns 0, or 2
 * after a message.
 */
int wc_cli_preload_subject(void)
{
	char *lib = wc_preload_library();
	char *real = lib ? realpath(lib, NULL) : NULL;
	const char *old = getenv("LD_PRELOAD");
	char *value;
	size_t len;
	int rc = 0;

	if (!real) {
		fprintf(stderr, "wirecheck: the preload library %s: %s\n",
			lib ? lib : "?", strerror(lib ? errno : ENOMEM));
		free(lib);
		return 2;
	}
	len = strlen(real) + (old ? strlen(old) + 1 : 0) + 1;
	value = malloc(len);
	if (!value || snprintf(value, len, "%s%s%s", real, old ? " " : "", old ? old : "") < 0 ||
	    setenv("LD_PRELOAD", value, 1) != 0 || setenv("WIRECHECK_SHM_FD", "5", 1) != 0) {
		fprintf(stderr, "wirecheck: cannot set the subject's LD_PRELOAD\n");
		rc = 2;
	}
	free(value);
	free(real);
	free(lib);
	return rc;
}

/*
 * The subject PATH must be an executable file. A name without a slash is
 * the file of that name in the current directory (./NAME), never one found
 * through PATH, which execvp would run instead of the file the user meant.
 * Sets *path to the name to run (*owned, to free, when it is a new
 * string). Returns 0, 2 after a message, or 3 without memory.
 */
int wc_cli_check_subject(char **owned, const char **path)
{
	const char *why = NULL;
	struct stat st;
	int err = 0, bare = !strchr(*path, '/');

	if (bare) {
		size_t n = strlen(*path) + 3;
		char *rel = malloc(n);

		if (!rel) {
			fprintf(stderr, "wirecheck: out of memory\n");
			return 3;
		}
		snprintf(rel, n, "./%s", *path);
		free(*owned);
		*owned = rel;
		*path = rel;
	}
	if (stat(*path, &st) != 0)
		why = strerror(err = errno);
	else if (S_ISDIR(st.st_mode))
		why = strerror(EISDIR);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (access(*path, X_OK) != 0)
		why = strerror(err = errno);
	if (!why)
		return 0;
	fprintf(stderr, "wirecheck: the subject %s is not an executable file: %s%s\n", *path, why,
		bare && err == ENOENT
			? " (a subject's name without a slash is the file in the current "
			  "directory, never one found through PATH)"
			: "");
	return 2;
}
