/*
 * layout.c: where the binaries of wirecheck find each other: relative to
 * this program's own directory, in the installed layout or a build tree of
 * the same shape (layout.h).
 */
#include "layout.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* NAME in the directory of this program (found through /proc/self/exe),
 * or NAME itself when that cannot be read. NAME may climb (../lib/...). */
char *wc_beside_self(const char *name)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self));
	char *slash, *path;

	if (n <= 0 || n >= (ssize_t)sizeof(self))
		return strdup(name);
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		slash[1] = '\0';
	else
		self[0] = '\0';
	if (asprintf(&path, "%s%s", self, name) < 0)
		return NULL;
	return path;
}

/*
 * The directories the binaries find each other by, relative to this
 * program's own (cmake/Install.cmake sets them from the install layout, and
 * the build tree has the same shape): the subjects, the preload library and
 * the wirecheck Python package. Never the source tree (docs/cli.md, "How
 * wirecheck finds its parts").
 */
#ifndef WC_LIBEXEC_FROM_BIN
#define WC_LIBEXEC_FROM_BIN "../libexec/wirecheck"
#endif
#ifndef WC_LIB_FROM_BIN
#define WC_LIB_FROM_BIN "../lib"
#endif
#ifndef WC_PYTHON_FROM_BIN
#define WC_PYTHON_FROM_BIN "../lib/python3/dist-packages"
#endif

/*
 * A program of wirecheck's (a subject) by its NAME: in the installed
 * layout's libexec directory, else beside this program (a build tree's
 * bin/). The first that exists; the libexec path when neither does, for
 * the caller's message. NULL without memory.
 */
char *wc_locate(const char *name)
{
	char *rel = NULL, *path;

	if (asprintf(&rel, "%s/%s", WC_LIBEXEC_FROM_BIN, name) < 0)
		return NULL;
	path = wc_beside_self(rel);
	free(rel);
	if (path == NULL || access(path, F_OK) == 0)
		return path;
	rel = wc_beside_self(name);
	if (rel != NULL && access(rel, F_OK) == 0) {
		free(path);
		return rel;
	}
	free(rel);
	return path;
}

/* The preload library, in the lib directory of this program's layout. */
char *wc_preload_library(void)
{
	return wc_beside_self(WC_LIB_FROM_BIN "/libwirecheck-preload.so");
}

/* The directory of the wirecheck Python package in this program's layout. */
char *wc_python_dir(void)
{
	return wc_beside_self(WC_PYTHON_FROM_BIN);
}
