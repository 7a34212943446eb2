/*
 * address.c: socket addresses from the strings of the API (no I/O), shared
 * by connect (socket.c) and listen (listener.c).
 */
#include "rs_internal.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

int rs__address_tcp(const char *host, int port, struct sockaddr_in *sin)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (port < 0 || port > 65535 || inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -EINVAL;
	return 0;
}

int rs__address_unix(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	memcpy(sun->sun_path, path, strlen(path) + 1);
	return 0;
}
