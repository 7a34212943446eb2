/*
 * variant.c: run-time selection of each behaviour's fixed or legacy strategy,
 * so that one build runs both side by side.
 */
#include "rs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int rs_variant_apply(struct rs_config *cfg, const char *name,
		     const char *value)
{
	if (strcmp(name, "queue") == 0) {
		if (strcmp(value, "cursor") == 0 || strcmp(value, "fixed") == 0)
			cfg->queue = RS_QUEUE_CURSOR;
		else if (strcmp(value, "memmove") == 0 ||
			 strcmp(value, "legacy") == 0)
			cfg->queue = RS_QUEUE_MEMMOVE;
		else
			return -EINVAL;
		return 0;
	}
	if (strcmp(name, "batch") == 0) {
		if (strcmp(value, "on") == 0 || strcmp(value, "fixed") == 0)
			cfg->batch = 1;
		else if (strcmp(value, "off") == 0 || strcmp(value, "legacy") == 0)
			cfg->batch = 0;
		else
			return -EINVAL;
		return 0;
	}
	if (strcmp(name, "halfopen") == 0) {
		if (strcmp(value, "end-first") == 0 || strcmp(value, "fixed") == 0)
			cfg->halfopen = RS_HALFOPEN_END_FIRST;
		else if (strcmp(value, "poll-first") == 0 || strcmp(value, "legacy") == 0)
			cfg->halfopen = RS_HALFOPEN_POLL_FIRST;
		else
			return -EINVAL;
		return 0;
	}
	if (strcmp(name, "chunked") == 0) {
		if (strcmp(value, "fixed") == 0)
			cfg->chunked = RS_CHUNKED_FIXED;
		else if (strcmp(value, "separate") == 0 ||
			 strcmp(value, "legacy") == 0)
			cfg->chunked = RS_CHUNKED_SEPARATE;
		else
			return -EINVAL;
		return 0;
	}
	if (strcmp(name, "ws") == 0) {
		if (strcmp(value, "by-option") == 0 || strcmp(value, "fixed") == 0)
			cfg->ws = RS_WS_BY_OPTION;
		else if (strcmp(value, "by-kind") == 0 || strcmp(value, "legacy") == 0)
			cfg->ws = RS_WS_BY_KIND;
		else
			return -EINVAL;
		return 0;
	}
	return -ENOENT;
}

int rs_variant_set(const char *name, const char *value)
{
	return rs_variant_apply(&rs_config, name, value);
}

int rs_config_describe(const struct rs_config *cfg, char *buf, size_t len)
{
	return snprintf(buf, len, "batch=%s\nchunked=%s\nhalfopen=%s\nqueue=%s\nws=%s\n",
			cfg->batch ? "on" : "off",
			cfg->chunked == RS_CHUNKED_FIXED ? "fixed" : "separate",
			cfg->halfopen == RS_HALFOPEN_END_FIRST ? "end-first" : "poll-first",
			cfg->queue == RS_QUEUE_CURSOR ? "cursor" : "memmove",
			cfg->ws == RS_WS_BY_OPTION ? "by-option" : "by-kind");
}

int rs_variant_describe(char *buf, size_t len)
{
	return rs_config_describe(&rs_config, buf, len);
}
