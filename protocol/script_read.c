/*
 * script_read.c: the script's lines parsed into struct sr_script, without
 * I/O (script_read.h). refstack-subject (subject.c) reads the lines from its
 * control pipe; a fuzz target feeds them from memory.
 */
#include "script_read.h"

#include "say.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sr_op_names[SR_OP_KIND_COUNT] = {
	"write", "end", "destroy", "destroy-soon", "cork", "uncork",
	"pause", "resume", "signal", "disarm", "checkpoint", "ignore",
	"abort", "exit", "execve", "await-drained", "write-owned", "overwrite",
	"res-write", "try-write", "res-end", "try-write-rest", "write-rest",
	"end-rest",
	"ws-send", "ws-close", "ws-ping", "ws-buffered",
};

const char *const sr_ev_names[SR_EV_KIND_COUNT] = {
	"data", "eof", "drain", "finish", "close", "write-cb", "end-cb",
	"request", "writable",
};

void sr_init(struct sr_script *s)
{
	memset(s, 0, sizeof(*s));
	s->nconns = 1;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int parse_op_line(struct sr_script *s, char *line, struct sr_block *b,
			 char *err, size_t errlen)
{
	struct sr_op op = { .conn = -1, .fill = -1 };
	char *save = NULL, *tok = strtok_r(line, " ", &save);
	struct sr_op *slot;
	int k;

	tok = strtok_r(NULL, " ", &save);
	for (k = 0; k < SR_OP_KIND_COUNT; k++)
		if (tok && strcmp(tok, sr_op_names[k]) == 0)
			break;
	if (k == SR_OP_KIND_COUNT)
		return wc_say(err, errlen, "unknown op '%s'", tok ? tok : "");
	op.kind = (enum sr_op_kind)k;
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');
		long v;

		if (!eq) {
			free(op.data);
			return wc_say(err, errlen, "bad op field '%s'", tok);
		}
		*eq++ = '\0';
		if (strcmp(tok, "hex") == 0) {
			size_t n = strlen(eq) / 2;

			free(op.data);
			op.data = malloc(n ? n : 1);
			if (!op.data)
				return wc_say(err, errlen, "out of memory");
			for (size_t i = 0; i < n; i++) {
				int hi = hexval(eq[2 * i]), lo = hexval(eq[2 * i + 1]);

				if (hi < 0 || lo < 0) {
					free(op.data);
					return wc_say(err, errlen, "bad hex in op");
				}
				op.data[i] = (unsigned char)(hi * 16 + lo);
			}
			op.len = n;
			continue;
		}
		v = strtol(eq, NULL, 10);
		if (strcmp(tok, "conn") == 0) op.conn = (int)v;
		else if (strcmp(tok, "len") == 0) op.len = (size_t)strtoull(eq, NULL, 10);
		else if (strcmp(tok, "fill") == 0) op.fill = (int)v;
		else if (strcmp(tok, "cb") == 0) op.cb = (int)v;
		else if (strcmp(tok, "micro") == 0) op.micro = (int)v;
		else if (strcmp(tok, "sig") == 0) op.sig = (int)v;
		else if (strcmp(tok, "ext") == 0) op.external = (int)v;
		else if (strcmp(tok, "final") == 0) op.final = (int)v;
		else if (strcmp(tok, "resume") == 0) op.resume = (int)v;
		else if (strcmp(tok, "ws") == 0 &&
			 sscanf(eq, "%d,%d,%d,%d", &op.ws_kind, &op.ws_binary, &op.ws_fin,
				&op.ws_no_compress) == 4)
			;
		else {
			free(op.data);
			return wc_say(err, errlen, "unknown op field '%s'", tok);
		}
	}
	if (op.conn >= s->nconns) {
		free(op.data);
		return wc_say(err, errlen, "op on connection %d of %d", op.conn,
			    s->nconns);
	}
	if (b->nops == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 16;

		slot = realloc(b->ops, cap * sizeof(*b->ops));
		if (!slot) {
			free(op.data);
			return wc_say(err, errlen, "out of memory");
		}
		b->ops = slot;
		b->cap = cap;
	}
	b->ops[b->nops++] = op;
	return 0;
}

static struct sr_block *new_block(struct sr_block **arr, size_t *n)
{
	struct sr_block *bigger = realloc(*arr, (*n + 1) * sizeof(**arr));

	if (!bigger)
		return NULL;
	*arr = bigger;
	memset(&bigger[*n], 0, sizeof(**arr));
	return &bigger[(*n)++];
}

static int parse_header_line(struct sr_script *s, char *line, char *err,
			     size_t errlen)
{
	char a[64], b[256];
	int n;

	if (sscanf(line, "variant %63s %255s", a, b) == 2) {
		struct rs_config scratch = rs_config;
		struct sr_variant *bigger;
		int rc = rs_variant_apply(&scratch, a, b);

		if (rc < 0)
			return wc_say(err, errlen, "variant %s=%s: %s", a, b, strerror(-rc));
		bigger = realloc(s->variants, (s->nvariants + 1) * sizeof(*bigger));
		if (!bigger)
			return wc_say(err, errlen, "out of memory");
		s->variants = bigger;
		memcpy(bigger[s->nvariants].name, a, sizeof(a));
		memcpy(bigger[s->nvariants].value, b, sizeof(b));
		s->nvariants++;
	} else if (strncmp(line, "fault ", 6) == 0) {
		struct fi_rule rule, *bigger;

		if (fi_rule_parse(line + 6, &rule, err, errlen) < 0)
			return -1;
		bigger = realloc(s->faults, (s->nfaults + 1) * sizeof(*bigger));
		if (!bigger)
			return wc_say(err, errlen, "out of memory");
		s->faults = bigger;
		s->faults[s->nfaults++] = rule;
	} else if (sscanf(line, "connections %d", &n) == 1 && n > 0) {
		/* Before "connect": sscanf's "connect %7s" matches this line
		 * too ("connect" + "ions"). */
		s->nconns = n;
	} else if (strncmp(line, "connect ", 8) == 0 &&
		   sscanf(line, "connect %7s %255s %d", s->transport, s->address, &s->port) >= 2) {
		s->server = 0;
	} else if (sscanf(line, "listen %7s %255s %d", s->transport, s->address, &s->port) >= 2) {
		s->server = 1;
	} else if (sscanf(line, "half-open %d", &n) == 1) {
		s->half_open = n;
	} else if (sscanf(line, "http %d", &n) == 1) {
		s->http = n;
	} else if (strncmp(line, "websocket ", 10) == 0) {
		int at = 0;

		if (sscanf(line, "websocket %llu %zu%n", &s->ws_seed, &s->ws_max_message,
			   &at) != 2)
			return wc_say(err, errlen, "bad websocket line '%s'", line);
		if (line[at] != '\0') {
			if (sscanf(line + at, " deflate %ld %ld %ld %ld %ld", &s->ws_deflate[1],
				   &s->ws_deflate[2], &s->ws_deflate[3], &s->ws_deflate[4],
				   &s->ws_deflate[5]) != 5)
				return wc_say(err, errlen, "bad websocket line '%s'", line);
			s->ws_deflate[0] = 1;
		}
		s->websocket = 1;
	} else if (strcmp(line, "sync start") == 0) {
		s->sync_start = 1;
	} else if (sscanf(line, "sync task %d", &n) == 1 && n > 0) {
		int *bigger = realloc(s->sync_list, (s->nsync + 1) * sizeof(int));

		if (!bigger)
			return wc_say(err, errlen, "out of memory");
		s->sync_list = bigger;
		s->sync_list[s->nsync++] = n;
	} else {
		return wc_say(err, errlen, "unknown script line '%s'", line);
	}
	return 0;
}

int sr_feed_line(struct sr_script *s, char *line, char *err, size_t errlen)
{
	int n;

	if (strcmp(line, "run") == 0)
		return 1;
	if (strncmp(line, "op ", 3) == 0) {
		struct sr_block *b;

		if (!s->open_is_task && !s->open)
			return wc_say(err, errlen, "an op outside a block");
		b = s->open_is_task ? &s->tasks[s->ntasks - 1] : s->open;
		return parse_op_line(s, line, b, err, errlen);
	} else if (sscanf(line, "task %d", &n) == 1) {
		struct sr_block *b = new_block(&s->tasks, &s->ntasks);

		if (!b)
			return wc_say(err, errlen, "out of memory");
		b->conn = n;
		s->open = NULL;
		s->open_is_task = 1;
	} else if (strncmp(line, "handler ", 8) == 0) {
		char ev[16];
		struct sr_block *b;
		int k;

		if (sscanf(line, "handler %15s %d", ev, &n) != 2)
			return wc_say(err, errlen, "bad handler line '%s'", line);
		for (k = 0; k < SR_EV_KIND_COUNT; k++)
			if (strcmp(ev, sr_ev_names[k]) == 0)
				break;
		if (k == SR_EV_KIND_COUNT)
			return wc_say(err, errlen, "unknown handler event '%s'", ev);
		b = new_block(&s->handlers, &s->nhandlers);
		if (!b)
			return wc_say(err, errlen, "out of memory");
		b->event = (enum sr_ev_kind)k;
		b->conn = n;
		s->open = b;
		s->open_is_task = 0;
	} else if (strcmp(line, "endblock") == 0) {
		s->open = NULL;
		s->open_is_task = 0;
	} else {
		return parse_header_line(s, line, err, errlen);
	}
	return 0;
}

/* Every connection a block or op names is one the script has (-1: the
 * block's own for an op, every connection for a handler): the subject
 * indexes its connections with them. */
static int check_conns(const struct sr_script *s, const struct sr_block *b,
		       size_t n, const char *what, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		if (b[i].conn < (b == s->tasks ? 0 : -1) || b[i].conn >= s->nconns)
			return wc_say(err, errlen, "%s %zu on connection %d of %d", what,
				    i + 1, b[i].conn, s->nconns);
		for (size_t k = 0; k < b[i].nops; k++)
			if (b[i].ops[k].conn < -1 || b[i].ops[k].conn >= s->nconns)
				return wc_say(err, errlen, "%s %zu: op on connection %d of %d",
					    what, i + 1, b[i].ops[k].conn, s->nconns);
	}
	return 0;
}

int sr_finish(struct sr_script *s, char *err, size_t errlen)
{
	if (check_conns(s, s->tasks, s->ntasks, "task", err, errlen) < 0 ||
	    check_conns(s, s->handlers, s->nhandlers, "handler", err, errlen) < 0)
		return -1;
	s->sync_task = calloc(s->ntasks + 1, 1);
	if (!s->sync_task)
		return wc_say(err, errlen, "out of memory");
	for (size_t i = 0; i < s->nsync; i++) {
		if ((size_t)s->sync_list[i] > s->ntasks)
			return wc_say(err, errlen, "sync at task %d, but the script has %zu tasks",
				    s->sync_list[i], s->ntasks);
		s->sync_task[s->sync_list[i]] = 1;
	}
	free(s->sync_list);
	s->sync_list = NULL;
	s->nsync = 0;
	return 0;
}

static void free_blocks(struct sr_block *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < b[i].nops; k++)
			free(b[i].ops[k].data);
		free(b[i].ops);
	}
	free(b);
}

void sr_free(struct sr_script *s)
{
	free_blocks(s->tasks, s->ntasks);
	free_blocks(s->handlers, s->nhandlers);
	free(s->variants);
	free(s->faults);
	free(s->sync_task);
	free(s->sync_list);
	sr_init(s);
}
