/*
 * sender_node.h: node's end(P) as a sender of bench/sender_cpu: a node
 * process running bench/sender_node.js, driven one run at a time over its
 * stdin and stdout; the same driver runs bench/sender_libuv, which speaks
 * the same protocol.
 */
#ifndef WIRECHECK_SENDER_NODE_H
#define WIRECHECK_SENDER_NODE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct node_sender {
	pid_t pid;
	FILE *in;          /* node's stdin */
	FILE *out;         /* node's stdout */
	char version[32];  /* its "ready" word: node's process.version
			    * ("v20.20.2"), "libuv-1.44.2" */
};

/*
 * Starts `node script` (node from PATH, else /usr/bin/node) with the
 * caller's CPU affinity, and waits for its "ready" line. Returns 0, or
 * -ENOENT when node could not be started or did not answer (n is then
 * unusable, holds no process, and needs no node_stop).
 */
int node_start(struct node_sender *n, const char *script);

/*
 * Starts `prog arg` (prog from PATH, else the path fallback when it is not
 * NULL) as a sender that speaks sender_node.js's protocol, with the
 * caller's CPU affinity, and waits for its "ready VERSION" line. With
 * preload not NULL, the program runs with LD_PRELOAD=preload and
 * WIRECHECK_FAULTS=faults (the gate's rules: faultinject/preload.c).
 * Returns 0, or -ENOENT as node_start does.
 */
int sender_child_start(struct node_sender *n, const char *prog, const char *fallback,
		       const char *arg, const char *preload, const char *faults);

/*
 * One end(P) of len bytes to the unix socket at unix_path, or when it is
 * NULL to 127.0.0.1:port; *cpu_ms gets node's CPU time from the connection
 * to end()'s callback. Dies when node fails or answers anything but a
 * time: a missing figure would make a column that means nothing.
 */
void node_run(struct node_sender *n, const char *unix_path, int port,
	      size_t len, double *cpu_ms);

/* Closes node's stdin (the script then exits) and waits for it. Dies
 * unless node exited with status 0. */
void node_stop(struct node_sender *n);

#endif
