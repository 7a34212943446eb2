/*
 * cli_python.c: the subcommands written in Python (cli.h).
 */
#include "cli.h"
#include "layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/*
 * A subcommand written in Python (wirecheck sweep, wirecheck explore): execs
 * `python3 -m MODULE --wirecheck-bin SELF ARGS` with the wirecheck package's
 * directory of this program's layout (WC_PYTHON_FROM_BIN: the installed
 * dist-packages, or the build tree's link to python/) first on PYTHONPATH.
 * WIRECHECK_PYTHON names another interpreter. Returns 3 only when the
 * package is missing or the exec failed.
 */
int wc_cmd_python(const char *command, const char *module, int argc, char **argv)
{
	const char *python = getenv("WIRECHECK_PYTHON");
	const char *old = getenv("PYTHONPATH");
	char *dir = wc_python_dir(), *self = wc_beside_self("wirecheck");
	char **args = calloc((size_t)argc + 6, sizeof(*args));
	char *path = NULL, *init = NULL;

	if (!python || !*python)
		python = "/usr/bin/python3";
	if (!dir || !self || !args || asprintf(&init, "%s/wirecheck/__init__.py", dir) < 0) {
		fprintf(stderr, "wirecheck %s: out of memory\n", command);
	} else if (access(init, R_OK) != 0) {
		fprintf(stderr, "wirecheck %s: the wirecheck Python package is not where this "
			"program's layout puts it (%s: %s); install wirecheck "
			"(cmake --install) or run the wirecheck of a build folder\n",
			command, init, strerror(errno));
	} else if (asprintf(&path, "%s%s%s", dir, old && *old ? ":" : "",
			    old && *old ? old : "") < 0 ||
		   setenv("PYTHONPATH", path, 1) != 0) {
		fprintf(stderr, "wirecheck %s: out of memory\n", command);
	} else {
		args[0] = (char *)python;
		args[1] = "-m";
		args[2] = (char *)module;
		args[3] = "--wirecheck-bin";
		args[4] = self;
		for (int i = 0; i < argc; i++)
			args[5 + i] = argv[i];
		execv(python, args);
		fprintf(stderr, "wirecheck %s: cannot run %s: %s\n", command, python,
			strerror(errno));
	}
	free(init);
	free(path);
	free(args);
	free(self);
	free(dir);
	return 3;
}
