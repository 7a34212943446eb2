/*
 * ws_echo_servers.c: the servers ws_echo measures. The reference stack's
 * echo and chat server (reference/ws.c, ws_group.c), run in a forked child
 * or in the foreground (--serve-ref*, for bench/ws_syscalls.py's counts),
 * and the start of node's (bench/ws_server.js) and Bun's
 * (bench/ws_server_bun.js).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench_common.h"
#include "rs.h"
#include "ws_echo.h"
#include "ws_frame.h"

/* The reference server: S.chat 0 echoes, CHAT_PUBLISH or CHAT_LOOP
 * (ws_echo.h) chats. */

static struct {
	int chat;
	rs_ws *conns[MAX_CONNS];
	int n;
	rs_ws_group *group;
} S;

static void srv_cpu(rs_ws *ws)
{
	struct rusage ru;
	char msg[64];
	int n;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		bc_die("getrusage: %s", strerror(errno));
	n = snprintf(msg, sizeof(msg), "cpu %lld %lld",
		     (long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
		     (long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec);
	(void)rs_ws_send(ws, msg, (size_t)n, RS_WS_KIND_TEXT, NULL);
}

static void srv_message(rs_ws *ws, const struct rs_ws_message *m, void *arg)
{
	int kind = m->opcode == RS_WS_OP_TEXT ? RS_WS_KIND_TEXT
					      : RS_WS_KIND_BYTES;

	(void)arg;
	if (kind == RS_WS_KIND_TEXT && m->len <= 5 && m->len > 0 &&
	    m->data[0] == '!') {
		if (m->len == 4 && memcmp(m->data, "!cpu", 4) == 0) {
			srv_cpu(ws);
			return;
		}
		/* _exit: the socket directory is the parent's to remove. */
		if (m->len == 5 && memcmp(m->data, "!quit", 5) == 0)
			_exit(0);
	}
	if (!S.chat) {
		(void)rs_ws_send(ws, m->data, m->len, kind, NULL);
		return;
	}
	if (S.chat == CHAT_PUBLISH) {
		(void)rs_ws_publish(S.group, m->data, m->len, kind);
		return;
	}
	for (int i = 0; i < S.n; i++)
		(void)rs_ws_send(S.conns[i], m->data, m->len, kind, NULL);
}

static void srv_close(rs_ws *ws, int code, size_t dropped, void *arg)
{
	(void)code;
	(void)dropped;
	(void)arg;
	if (S.group)
		rs_ws_group_remove(S.group, ws);
	for (int i = 0; i < S.n; i++)
		if (S.conns[i] == ws)
			S.conns[i] = S.conns[--S.n];
}

static const struct rs_ws_events srv_events = { .on_message = srv_message,
						.on_close = srv_close };

static void srv_connection(rs_listener *l, rs_socket *s, void *arg)
{
	struct rs_ws_options o = { .server = 1 };
	rs_ws *ws;

	(void)l;
	(void)arg;
	if (S.n == MAX_CONNS || rs_ws_attach(s, &o, &srv_events, NULL, &ws) < 0) {
		rs_socket_destroy(s, 0);
		return;
	}
	if (S.group && rs_ws_group_add(S.group, ws) < 0)
		bc_die("rs_ws_group_add: out of memory");
	S.conns[S.n++] = ws;
}

pid_t start_ref(int chat, const char *path)
{
	pid_t pid = bc_fork();

	if (pid == 0)
		_exit(serve_ref(chat, path));
	return pid;
}

/* ---- the JavaScript servers ------------------------------------------- */

/* The Bun binary: $WIRECHECK_BUN, else the pinned one scripts/setup.sh
 * installs into third_party/bun (BUN_BIN); NULL when neither runs. */
const char *bun_binary(void)
{
	const char *b = getenv("WIRECHECK_BUN");

	if (!b || !*b)
		b = BUN_BIN;
	return access(b, X_OK) == 0 ? b : NULL;
}

/* A JavaScript server, node's (bench/ws_server.js) or Bun's
 * (bench/ws_server_bun.js): RUNTIME SCRIPT MODE PATH, which prints "ready"
 * once it listens. */
static pid_t start_js(const char *runtime, const char *script,
		      const char *mode, const char *path)
{
	int p[2];
	char ready[8];
	pid_t pid;

	bc_pipe(p);
	pid = bc_fork();
	if (pid == 0) {
		if (dup2(p[1], 1) < 0)
			_exit(127);
		close(p[0]);
		execlp(runtime, runtime, script, mode, path, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if (bc_read_full(p[0], ready, 6) < 0 || memcmp(ready, "ready\n", 6))
		bc_die("%s %s did not start (node, npm ws and Bun: scripts/setup.sh)",
		       runtime, script);
	close(p[0]);
	return pid;
}

pid_t start_node(int chat, const char *path)
{
	return start_js("node", WS_SERVER_JS, chat ? "chat" : "echo", path);
}

/* Bun's server; chat 1: server.publish, 2: a loop of ws.send. */
pid_t start_bun(int chat, const char *path)
{
	return start_js(bun_binary(), WS_SERVER_BUN_JS,
			chat == 2 ? "chat-send" : chat ? "chat" : "echo", path);
}

/* `bun --version` into out ("" when it does not answer). */
void bun_version(char *out, size_t size)
{
	char cmd[600];
	FILE *f;

	out[0] = '\0';
	snprintf(cmd, sizeof(cmd), "'%s' --version 2>/dev/null", bun_binary());
	if (!(f = popen(cmd, "r")))
		return;
	if (!fgets(out, (int)size, f))
		out[0] = '\0';
	(void)pclose(f);
	out[strcspn(out, "\n")] = '\0';
}

/* The reference echo (chat 0) or chat server in the foreground, for the
 * preload gate's counts (bench/ws_syscalls.py). */
int serve_ref(int chat, const char *path)
{
	rs_loop *loop = bc_loop_new();
	rs_listener *l;

	S.chat = chat;
	if (chat == CHAT_PUBLISH && rs_ws_group_new(loop, &S.group) < 0)
		bc_die("rs_ws_group_new: out of memory");
	if (rs_listen_unix(loop, path, NULL, srv_connection, NULL, &l) < 0)
		bc_die("rs_listen_unix %s failed", path);
	bc_loop_run_free(loop);
	return 0;
}
