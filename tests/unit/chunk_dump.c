/*
 * chunk_dump: prints an HTTP/1.1 chunked response whose body the chunk
 * encoder (reference/chunk.c) framed, for decoders that are not ours
 * (tests/e2e/test_chunked_decode.py: h11, http.client).
 *
 *   chunk_dump CLAMP CALL...
 *
 * CLAMP is the most bytes the model kernel takes per send (0: no limit);
 * each CALL is a body length, with a trailing 'f' for a final call. Body
 * byte i is cd_body_byte(i) (tests/unit/chunk_driver.h). Exit 0, or 2 on
 * bad arguments or a refused call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_driver.h"

int main(int argc, char **argv)
{
	static const char head[] =
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
	struct cd_call *calls;
	struct cd_out o = { 0 };
	char *end;
	size_t clamp;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: chunk_dump CLAMP CALL...\n");
		return 2;
	}
	clamp = strtoul(argv[1], &end, 10);
	if (*end || argv[1][0] == '\0') {
		fprintf(stderr, "chunk_dump: bad clamp '%s'\n", argv[1]);
		return 2;
	}
	if (clamp == 0)
		clamp = SIZE_MAX;
	calls = calloc((size_t)argc, sizeof(*calls));
	if (!calls)
		return 2;
	for (int i = 2; i < argc; i++) {
		calls[i - 2].len = strtoul(argv[i], &end, 10);
		calls[i - 2].final = *end == 'f';
		if (end == argv[i] || (*end && strcmp(end, "f") != 0)) {
			fprintf(stderr, "chunk_dump: bad call '%s'\n", argv[i]);
			free(calls);
			return 2;
		}
	}
	rc = cd_run(calls, (size_t)argc - 2, clamp, SIZE_MAX, &o);
	free(calls);
	if (rc != 0) {
		fprintf(stderr, "chunk_dump: the encoder refused a call\n");
		free(o.buf);
		return 2;
	}
	if (fwrite(head, 1, sizeof(head) - 1, stdout) != sizeof(head) - 1 ||
	    (o.len && fwrite(o.buf, 1, o.len, stdout) != o.len) ||
	    fflush(stdout) != 0) {
		free(o.buf);
		return 2;
	}
	free(o.buf);
	return 0;
}
