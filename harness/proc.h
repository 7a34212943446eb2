/*
 * proc.h: the harness's process control, shared by the run's subject
 * (run.c), a peer's program (peer_exec.c) and `wirecheck exec` (exec.c):
 * a child's start-up, reaping, waiting with a deadline, reading a
 * process's parent and group, and killing a process tree.
 */
#ifndef WIRECHECK_PROC_H
#define WIRECHECK_PROC_H

#include <sys/types.h>

/*
 * In a child just forked from parent: SIGKILL when the parent dies, so
 * that a harness killed from outside leaves no orphan running (one that
 * spins holds a CPU until someone notices). Returns 0, or -1 when that
 * cannot be set or the parent is gone already: the child should then
 * _exit.
 */
int wc_proc_die_with_parent(pid_t parent);

/*
 * In a child before its exec: the state a program started from a shell
 * has, whatever the harness changed. No WIRECHECK_FAULTS (the harness's
 * own rules are not the program's), SIGPIPE at its default (the harness
 * ignores it, and an ignored signal stays ignored across execve), no
 * signal blocked, and RLIMIT_CORE 0, so that whether a crash dumps core
 * does not depend on the machine's ulimit. Best effort: nothing here
 * fails for a valid argument.
 */
void wc_proc_shell_defaults(void);

/*
 * waitpid(pid, &status, flags), again after EINTR. Returns 1 when pid was
 * reaped (*status set), 0 when it was not (WNOHANG and still running, or
 * not our child).
 */
int wc_proc_reap(pid_t pid, int flags, int *status);

/* A pidfd of pid (readable once it ends), or -1 where pidfd_open is
 * missing (old kernels, the harness itself under valgrind 3.19). */
int wc_proc_pidfd(pid_t pid);

/* Waits up to ms milliseconds for the process of pidfd to end. Returns 1
 * when it ended, 0 at the deadline (-1 when pidfd cannot be polled). */
int wc_proc_wait_ended(int pidfd, int ms);

/* The parent and process group of pid, from /proc/PID/stat. Returns 0, or
 * -1 when pid is gone (or the file cannot be read). */
int wc_proc_parent(pid_t pid, long *ppid, long *pgrp);

/*
 * SIGKILL to pid's descendants, deepest first, then to pid. For a wrapper
 * such as strace: a tracer that dies detaches its tracees, which then run
 * on. The tree comes from /proc/PID/task/TID/children (the first 4 KiB of
 * each list: a pid cut at that end is dropped, not guessed); a process
 * forked after its parent's list was read escapes, as it would a kill(2)
 * of the group. Each descendant is waited for (at most a second each), so
 * that none still runs on return; pid itself is the caller's to reap.
 */
void wc_proc_kill_tree(pid_t pid);

#endif
