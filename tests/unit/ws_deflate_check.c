/*
 * ws_deflate_check: the permessage-deflate negotiation of
 * reference/ws_deflate.c as a filter, for tests/e2e/test_ws_deflate.py,
 * which feeds npm ws's own negotiation the same lines.
 *
 * Each line of stdin: "SIDE SNCT CNCT SMWB CMWB HEADER", SIDE server,
 * client or offer, then the options (rs_ws_deflate_options, npm ws's
 * values: 0 not given, 1 true, -1 false, or window bits), then the
 * header's value to the end of the line (ignored for offer). Each line of
 * stdout: "ok ANSWER|PARAMS" (the server's answer, "-" for a client;
 * PARAMS "snct cnct smwb cmwb"), "none" (a server saw no
 * permessage-deflate offer), "refused", or for offer "offer VALUE" (the
 * client's Sec-WebSocket-Extensions value) or "offer refused".
 */
#include <stdio.h>
#include <string.h>

#include "ws_deflate.h"

int main(void)
{
	char line[4096];

	while (fgets(line, sizeof(line), stdin)) {
		struct rs_ws_deflate_options o = { .enabled = 1 };
		struct rs_ws_deflate_params p;
		char side[16], answer[512];
		const char *problem;
		int at = 0, r;
		size_t len;

		if (sscanf(line, "%15s %d %d %d %d %n", side,
			   &o.server_no_context_takeover,
			   &o.client_no_context_takeover,
			   &o.server_max_window_bits,
			   &o.client_max_window_bits, &at) != 5 || at == 0) {
			fprintf(stderr, "ws_deflate_check: bad line: %s", line);
			return 2;
		}
		len = strcspn(line + at, "\n");
		if (strcmp(side, "offer") == 0) {
			r = rs_ws_deflate_offer(&o, answer, sizeof(answer));
			printf(r < 0 ? "offer refused\n" : "offer %s\n", answer);
			continue;
		}
		if (strcmp(side, "server") == 0) {
			r = rs_ws_deflate_answer(&o, line + at, len, &p, answer,
						 sizeof(answer), &problem);
		} else {
			r = rs_ws_deflate_accept(&o, line + at, len, &p, &problem);
			strcpy(answer, "-");
			r = r == 0 ? 1 : r;
		}
		if (r == 1)
			printf("ok %s|%d %d %d %d\n", answer,
			       p.server_no_context_takeover,
			       p.client_no_context_takeover,
			       p.server_max_window_bits, p.client_max_window_bits);
		else
			printf(r == 0 ? "none\n" : "refused\n");
	}
	return 0;
}
