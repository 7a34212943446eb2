/*
 * outpath.c: checking an output file before a run, and writing it after
 * (outpath.h).
 *
 * The check is stat(2) and access(2), not an early open: opening with
 * O_TRUNC would empty the report of an earlier run before a run that may
 * still fail, and O_CREAT without it would leave an empty file behind when
 * the run fails; strace opens --strace's file itself. access(2) checks
 * the real uid, which is wirecheck's effective one (it is not setuid).
 */
#include "outpath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int problem(char *why, size_t len, const char *dir, int err)
{
	if (dir != NULL)
		(void)snprintf(why, len, "its directory %s: %s", dir, strerror(err));
	else
		(void)snprintf(why, len, "%s", strerror(err));
	return -err;
}

int wc_output_check(const char *path, char *why, size_t len)
{
	char dir[4096];
	const char *slash;
	size_t n;
	struct stat st;

	if (len > 0)
		why[0] = '\0';
	if (path[0] == '\0')
		return problem(why, len, NULL, ENOENT);
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return problem(why, len, NULL, EISDIR);
		return access(path, W_OK) == 0 ? 0 : problem(why, len, NULL, errno);
	}
	if (errno != ENOENT) /* ENOTDIR, EACCES, ELOOP, ENAMETOOLONG */
		return problem(why, len, NULL, errno);
	n = strlen(path);
	if (path[n - 1] == '/') /* open("new/", O_CREAT) says so */
		return problem(why, len, NULL, EISDIR);
	slash = strrchr(path, '/');
	if (slash == NULL) {
		(void)snprintf(dir, sizeof(dir), ".");
	} else {
		n = (size_t)(slash - path);
		if (n >= sizeof(dir))
			return problem(why, len, NULL, ENAMETOOLONG);
		memcpy(dir, path, n);
		dir[n] = '\0';
		if (n == 0) /* "/file" */
			(void)snprintf(dir, sizeof(dir), "/");
	}
	if (stat(dir, &st) != 0)
		return problem(why, len, dir, errno);
	if (!S_ISDIR(st.st_mode))
		return problem(why, len, dir, ENOTDIR);
	if (access(dir, W_OK | X_OK) != 0)
		return problem(why, len, dir, errno);
	return 0;
}

int wc_json_to_file(const json_t *j, const char *path, size_t flags, int newline)
{
	FILE *f;
	int err = 0;

	errno = 0;
	f = fopen(path, "w");
	if (f == NULL)
		return -(errno ? errno : EIO);
	errno = 0;
	if (json_dumpf(j, f, flags) != 0 || (newline && fputc('\n', f) == EOF))
		err = errno ? errno : EIO;
	errno = 0;
	if (fclose(f) != 0 && err == 0)
		err = errno ? errno : EIO;
	return -err;
}
