/* gate_send.c: a stack of one's own that routes its sends through the
 * wirecheck gate (pkg-config wirecheck), built by tests/install against the
 * installed header and library. It sends 100 bytes over a socket pair, one
 * fi_send at a time, prints what each call took and the gate's count of
 * send calls; under `wirecheck exec --clamp-send 7` each call takes 7. */
#include <wirecheck/fi.h>

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int main(void)
{
	char buf[100], got[100];
	size_t off = 0;
	int sv[2];

	if (fi_init() != 0 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		return 1;
	memset(buf, 'x', sizeof(buf));
	while (off < sizeof(buf)) {
		ssize_t n = fi_send(sv[0], buf + off, sizeof(buf) - off, 0);

		if (n <= 0)
			return 1;
		printf("sent %zd\n", n);
		off += (size_t)n;
	}
	if (fi_recv(sv[1], got, sizeof(got), MSG_WAITALL) != (ssize_t)sizeof(got))
		return 1;
	printf("calls %llu\n", (unsigned long long)fi_calls(fi_counters(), FI_SEND));
	return memcmp(buf, got, sizeof(got)) != 0;
}
