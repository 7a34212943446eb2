/*
 * layout.h: where the binaries of wirecheck find each other: relative to
 * this program's own directory (/proc/self/exe), never through the source
 * tree (docs/cli.md, "How wirecheck finds its parts"). cmake/Install.cmake
 * compiles in the relative paths of the install layout; a build tree has
 * the same shape. Each returns a new string to free, or NULL without
 * memory.
 */
#ifndef WIRECHECK_LAYOUT_H
#define WIRECHECK_LAYOUT_H

/* NAME in the directory of this program, or NAME itself when that cannot
 * be read. NAME may climb (../lib/...). */
char *wc_beside_self(const char *name);

/* A program of wirecheck's (a subject) by its NAME: in the layout's
 * libexec directory, else beside this program; the libexec path when
 * neither exists, for the caller's message. */
char *wc_locate(const char *name);

/* The preload library (libwirecheck-preload.so) in the layout's lib
 * directory. */
char *wc_preload_library(void);

/* The directory that holds the wirecheck Python package. */
char *wc_python_dir(void);

#endif
