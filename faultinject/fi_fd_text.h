/*
 * fi_fd_text.h: what an fd is, in words (fi_fd_text.c), and the per-fd list
 * of such words that the preload library keeps (struct fi_fd_what).
 */
#ifndef WIRECHECK_FI_FD_TEXT_H
#define WIRECHECK_FI_FD_TEXT_H

#include <stddef.h>

#include "fi_state.h"

/* Writes what fd is into buf (n bytes, cut if need be); *provisional is 1
 * when a stream socket has no peer yet (connecting, or not yet listening),
 * so that the text will change. Returns 0, 1 when fd is an io_uring, or -1
 * when fstat cannot see fd. */
int fi_fd_text(int fd, char *buf, size_t n, int *provisional);

/* Adds text to w's list, unless it is what the list ends with; a
 * provisional last entry is replaced. */
void fi_fd_what_add(struct fi_fd_what *w, const char *text, int provisional);

#endif
