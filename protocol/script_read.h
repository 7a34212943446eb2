/*
 * script_read.h: the subject's side of the script (docs/subject-protocol.md,
 * "The script"): lines in, a parsed script out, no I/O, so that
 * refstack-subject reads its control pipe with it and a fuzz target
 * (tests/fuzz/fuzz_subject_script.c) feeds it any bytes.
 */
#ifndef WIRECHECK_SCRIPT_READ_H
#define WIRECHECK_SCRIPT_READ_H

#include "fi.h"
#include "rs.h"

#include <stddef.h>

enum sr_op_kind {
	SR_OP_WRITE, SR_OP_END, SR_OP_DESTROY, SR_OP_DESTROY_SOON, SR_OP_CORK,
	SR_OP_UNCORK, SR_OP_PAUSE, SR_OP_RESUME, SR_OP_SIGNAL, SR_OP_DISARM,
	SR_OP_CHECKPOINT, SR_OP_IGNORE, SR_OP_ABORT, SR_OP_EXIT, SR_OP_EXECVE,
	SR_OP_AWAIT_DRAINED, SR_OP_WRITE_OWNED, SR_OP_OVERWRITE,
	/* HTTP responses (`http 1`) */
	SR_OP_RES_WRITE, SR_OP_TRY_WRITE, SR_OP_RES_END, SR_OP_TRY_WRITE_REST,
	SR_OP_WRITE_REST, SR_OP_END_REST,
	/* WebSocket messages (`websocket ...`) */
	SR_OP_WS_SEND, SR_OP_WS_CLOSE, SR_OP_WS_PING, SR_OP_WS_BUFFERED,
	SR_OP_KIND_COUNT
};
/* The op keywords of the script, in enum order ("write" ... "overwrite"). */
extern const char *const sr_op_names[SR_OP_KIND_COUNT];

struct sr_op {
	enum sr_op_kind kind;
	int conn;         /* -1: the block's connection, else 0..nconns-1 */
	size_t len;
	unsigned char *data; /* hex= bytes (len of them), or NULL */
	int fill;
	int cb;
	int micro;
	int sig;
	int external;
	int final;
	int resume;
	int ws_kind, ws_binary, ws_fin;  /* ws-send */
	int ws_no_compress;              /* ws-send: 1 compress=false */
};

enum sr_ev_kind {
	SR_EV_DATA, SR_EV_EOF, SR_EV_DRAIN, SR_EV_FINISH, SR_EV_CLOSE,
	SR_EV_WRITE_CB, SR_EV_END_CB, SR_EV_REQUEST, SR_EV_WRITABLE,
	SR_EV_KIND_COUNT
};
/* The handler events of the script, in enum order ("data" ... "end-cb"). */
extern const char *const sr_ev_names[SR_EV_KIND_COUNT];

struct sr_block {
	int conn;
	enum sr_ev_kind event; /* handlers only */
	struct sr_op *ops;
	size_t nops;
	size_t cap;       /* ops allocated: doubled, so that a long script
			   * is not copied once per op */
};

struct sr_variant {
	char name[64];
	char value[256];
};

struct sr_script {
	char transport[8];
	char address[256];
	int port;
	int server;
	int nconns;
	int half_open;
	int http;                 /* "http N": serve HTTP on accepted connections */
	int websocket;            /* a "websocket SEED MAX [deflate ...]" line came */
	unsigned long long ws_seed;
	size_t ws_max_message;
	/* "deflate SNCT CNCT SMWB CMWB THRESHOLD" at the end of the
	 * websocket line: enabled, then rs_ws_deflate_options' fields in
	 * that order (all 0: not there). */
	long ws_deflate[6];
	struct sr_variant *variants; /* in script order, not yet applied */
	size_t nvariants;
	struct fi_rule *faults;      /* parsed, not yet armed */
	size_t nfaults;
	struct sr_block *tasks;
	size_t ntasks;
	struct sr_block *handlers;
	size_t nhandlers;
	int sync_start;
	unsigned char *sync_task; /* after sr_finish: [ntasks + 1], announce
				   * the end of task i */
	/* Internal: the block ops go to, and the "sync task N" numbers. */
	struct sr_block *open;
	int open_is_task;
	int *sync_list;
	size_t nsync;
};

/* Starts an empty script (one connection). */
void sr_init(struct sr_script *s);

/*
 * Takes one script line, without its newline (line is modified: strtok).
 * Returns 0 when more lines are due, 1 for the "run" line (the last), or
 * -1 with the problem in err (at most errlen bytes, NUL-terminated). A
 * variant's value is checked against rs_variant_apply on a scratch config,
 * a fault's spec with fi_rule_parse; neither is applied here.
 */
int sr_feed_line(struct sr_script *s, char *line, char *err, size_t errlen);

/*
 * Checks what needs the whole script (sync points against the tasks) and
 * builds sync_task. Returns 0, or -1 with the problem in err.
 */
int sr_finish(struct sr_script *s, char *err, size_t errlen);

/* Frees everything the script holds (op data included); s is then empty. */
void sr_free(struct sr_script *s);

#endif
