/*
 * ws_utf8_check: reads lines of hex from stdin and prints, for each, the
 * validator's answer and the legacy U+FFFD decode, so that
 * tests/e2e/test_ws_utf8.py can hold them against Python's own decoder:
 *
 *     valid|invalid REPLACED-HEX
 *
 * The validator is also fed the input split at every point, and one byte
 * at a time; an answer that differs from the whole one prints "split N".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Valid as a whole when fed in two pieces cut at `cut`. */
static int valid_split(const uint8_t *p, size_t n, size_t cut)
{
	struct rs_utf8 v = RS_UTF8_INIT;

	if (rs_utf8_feed(&v, p, cut) < 0 || rs_utf8_feed(&v, p + cut, n - cut) < 0)
		return 0;
	return rs_utf8_complete(&v);
}

static int valid_bytewise(const uint8_t *p, size_t n)
{
	struct rs_utf8 v = RS_UTF8_INIT;

	for (size_t i = 0; i < n; i++)
		if (rs_utf8_feed(&v, p + i, 1) < 0)
			return 0;
	return rs_utf8_complete(&v);
}

int main(void)
{
	static char line[1 << 16];
	static uint8_t in[1 << 15], out[3 << 15];

	while (fgets(line, sizeof(line), stdin)) {
		size_t n = 0, m;
		int ok;

		for (char *c = line; c[0] && c[1] && c[0] != '\n'; c += 2) {
			unsigned v;

			if (sscanf(c, "%2x", &v) != 1 || n >= sizeof(in)) {
				fprintf(stderr, "ws_utf8_check: bad line\n");
				return 2;
			}
			in[n++] = (uint8_t)v;
		}
		ok = rs_utf8_valid(in, n);
		for (size_t cut = 0; cut <= n; cut++)
			if (valid_split(in, n, cut) != ok) {
				printf("split %zu\n", cut);
				ok = -1;
			}
		if (valid_bytewise(in, n) != ok)
			printf("split bytewise\n");
		m = rs_utf8_replace(in, n, out);
		printf("%s ", ok ? "valid" : "invalid");
		for (size_t i = 0; i < m; i++)
			printf("%02x", out[i]);
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
