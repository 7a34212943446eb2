/*
 * ws_echo.h: the parts of the WebSocket benchmark (ws_echo.c, the rounds
 * and their figures): the servers it measures (ws_echo_servers.c) and its
 * client (ws_echo_client.c).
 */
#ifndef WIRECHECK_BENCH_WS_ECHO_H
#define WIRECHECK_BENCH_WS_ECHO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CHAT_CLIENTS 32
#define CHAT_MSGS 8
#define MAX_CONNS 64
#define RBUF (1 << 20)

/* The reference server's chat: every message to every client by one
 * rs_ws_publish to a group of them all (reference/ws_group.c, as Bun's
 * server.publish), or by a loop of rs_ws_send over the clients (as node's
 * server); 0 is the echo server. */
enum { CHAT_PUBLISH = 1, CHAT_LOOP = 2 };

/* The reference server in the foreground until "!quit"; in a forked
 * child. */
int serve_ref(int chat, const char *path);
pid_t start_ref(int chat, const char *path);

/* node's server (chat: a loop of ws.send); Bun's (chat 1: server.publish,
 * 2: a loop of ws.send). Each returns once its server listens. */
pid_t start_node(int chat, const char *path);
pid_t start_bun(int chat, const char *path);
/* $WIRECHECK_BUN, else the pinned Bun; NULL when neither runs. */
const char *bun_binary(void);
/* `bun --version` into out ("" when it does not answer). */
void bun_version(char *out, size_t size);

/* One client connection, with its read buffer (RBUF bytes). */
struct conn {
	int fd;
	char *buf;
	size_t head, tail;
	const char *path;  /* the server's socket, named in every error */
};

/* Connects to PATH (retrying while the server starts) and upgrades; PATH
 * outlives the connection (its errors name it). */
struct conn conn_open(const char *path);
/* One message from the server: its opcode and payload, valid until the
 * next call. */
const uint8_t *conn_frame(struct conn *c, int *op, size_t *len);
/* A masked frame with the zero key. */
void conn_send(struct conn *c, int op, const void *data, size_t len);
/* The server's CPU so far, in microseconds ("!cpu"). */
double conn_cpu(struct conn *c);

#endif
