/*
 * ws_handshake.h: the WebSocket opening handshake (RFC 6455, section 4),
 * its pure parts: the Upgrade request and the 101 answer, written and
 * parsed (the heads by http_parse.h, the one HTTP head parser), and
 * Sec-WebSocket-Accept. No I/O: bytes in, bytes out; ws.c does the I/O.
 */
#ifndef WIRECHECK_WS_HANDSHAKE_H
#define WIRECHECK_WS_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Sec-WebSocket-Accept for a Sec-WebSocket-Key: base64(SHA-1(key + the
 * GUID of 1.3)). Writes 28 characters and a NUL to out. Returns 0, or
 * -EIO when libcrypto fails.
 */
int rs_ws_accept_key(const char *key, size_t len, char out[29]);

/* What the server takes from an Upgrade request. Pointers point into the
 * parsed buffer. */
struct rs_ws_request {
	const char *path;
	size_t path_len;
	const char *key;         /* Sec-WebSocket-Key, 24 characters */
	const char *extensions;  /* Sec-WebSocket-Extensions, or NULL */
	size_t extensions_len;
	int status;              /* on an error: the HTTP status to answer */
	const char *problem;     /* on an error: what was wrong */
};
/*
 * Parses an Upgrade request head (RFC 6455 4.2.1). Returns the head's
 * length (through the blank line) when it is complete and valid, 0 when
 * more bytes are needed, -EPROTO when it is invalid (r->status 400, or
 * 426 for a version other than 13; r->problem says why), -EMSGSIZE
 * (r->status 431) for a head over 8 KiB without its end or with more than
 * RS_HTTP_MAX_HEADERS fields. A head that is not HTTP (http_parse.h) is
 * refused as soon as its bytes show it, before its blank line.
 */
int rs_ws_parse_request(const char *buf, size_t len, struct rs_ws_request *r);
/*
 * Writes the 101 response for key (with Sec-WebSocket-Extensions when
 * extensions is not NULL) to out. Returns its length, or -ENOSPC when cap
 * is too small, -EIO when libcrypto fails.
 */
int rs_ws_server_response(char *out, size_t cap, const char *key,
			  const char *extensions);
/*
 * Writes a client's Upgrade request for host and path with the key made of
 * nonce (base64 of 16 bytes, 24 characters and a NUL into key), with a
 * Sec-WebSocket-Extensions header of value extensions when it is not NULL
 * (ws_deflate.h, rs_ws_deflate_offer). Returns its length or -ENOSPC.
 */
int rs_ws_client_request(char *out, size_t cap, const char *host,
			 const char *path, const uint8_t nonce[16],
			 const char *extensions, char key[25]);
/* What the client takes from the server's answer. */
struct rs_ws_response {
	const char *extensions;  /* Sec-WebSocket-Extensions, or NULL */
	size_t extensions_len;
	const char *problem;     /* on an error: what was wrong */
};
/*
 * Parses the server's answer to the request of key (RFC 6455 4.1: status
 * 101, Upgrade, Connection, and Sec-WebSocket-Accept matching key).
 * Returns the head's length when complete and valid, 0 when more bytes are
 * needed, -EPROTO when invalid (also a head that is not HTTP, as soon as
 * its bytes show it), -EMSGSIZE past 8 KiB or RS_HTTP_MAX_HEADERS fields.
 */
int rs_ws_parse_response(const char *buf, size_t len, const char *key,
			 struct rs_ws_response *r);

#endif
