/*
 * outpath.h: the files the command line names for wirecheck to write
 * (run and per-connection --trace and --strace, exec --output): checked
 * before anything runs, and written with the real errno on failure.
 */
#ifndef WIRECHECK_OUTPATH_H
#define WIRECHECK_OUTPATH_H

#include <jansson.h>
#include <stddef.h>

/*
 * Whether path can be opened for writing (fopen "w", O_CREAT|O_TRUNC) now,
 * without creating, opening or changing anything: an existing file must be
 * writable (access W_OK) and not a directory; a new one needs its
 * directory to exist, be a directory and be writable and searchable.
 * Returns 0, or -errno (ENOENT, ENOTDIR, EACCES, EISDIR, EROFS...) after
 * writing into why (len bytes, NUL-terminated, never NULL) the problem
 * without the path: "Is a directory", or "its directory /a/b: No such
 * file or directory". A check, not a promise: the write may still fail
 * (a full disk, a change meanwhile), which wc_json_to_file then reports.
 */
int wc_output_check(const char *path, char *why, size_t len);

/*
 * Writes j to path (created or truncated) with json_dumpf's flags, then a
 * newline when newline is non-zero. Returns 0, or -errno of the call that
 * failed (fopen, the writes, fclose: ENOSPC on /dev/full comes at the
 * flush), -EIO when jansson failed without an errno. The file is left as
 * far as it was written.
 */
int wc_json_to_file(const json_t *j, const char *path, size_t flags, int newline);

#endif
