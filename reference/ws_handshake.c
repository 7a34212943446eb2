/*
 * ws_handshake.c: the pure parts of the WebSocket opening handshake
 * (RFC 6455, 4): the Upgrade request and the 101 answer, parsed and
 * written, and Sec-WebSocket-Accept (SHA-1 and base64 from libcrypto).
 * The heads are parsed by http_parse.c; this file judges their fields.
 * No I/O; the contracts are in ws_handshake.h.
 */
#include "ws_handshake.h"

#include "http_parse.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

/* RFC 6455 1.3. */
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* A head larger than this without its blank line is refused (npm ws takes
 * node's default of 16 KiB; an Upgrade request needs far less). */
#define HEAD_MAX RS_HTTP_MAX_HEAD

int rs_ws_accept_key(const char *key, size_t len, char out[29])
{
	unsigned char digest[SHA_DIGEST_LENGTH];
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	if (!ctx)
		return -EIO;
	ok = EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1 &&
	     EVP_DigestUpdate(ctx, key, len) == 1 &&
	     EVP_DigestUpdate(ctx, ws_guid, sizeof(ws_guid) - 1) == 1 &&
	     EVP_DigestFinal_ex(ctx, digest, NULL) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -EIO;
	/* 20 bytes give 28 characters and the NUL EVP_EncodeBlock adds. */
	if (EVP_EncodeBlock((unsigned char *)out, digest, SHA_DIGEST_LENGTH) != 28)
		return -EIO;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Heads.                                                                   */

/* 1 when the fields have exactly one field name whose value lists token
 * (both in lower case), as npm ws asks of Upgrade and Connection. */
static int field_has(const struct rs_http_field *fields, size_t n,
		     const char *name, const char *token)
{
	const char *v;
	size_t vlen;

	return rs_http_find_field(fields, n, name, &v, &vlen) == 1 &&
	       rs_http_list_has(v, vlen, token);
}

/* 1 when [k, k+n) is the base64 of 16 bytes (RFC 6455 4.2.1, item 5). */
static int key_valid(const char *k, size_t n)
{
	unsigned char raw[18];

	if (n != 24 || k[22] != '=' || k[23] != '=')
		return 0;
	for (size_t i = 0; i < 22; i++) {
		char c = k[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return 0;
	}
	return EVP_DecodeBlock(raw, (const unsigned char *)k, 24) == 18;
}

/* The Sec-WebSocket-Extensions field's value into *ext and *ext_len, left
 * as they are when the head has none; -1 when it has two. */
static int extensions_of(const struct rs_http_field *fields, size_t nfields,
			 const char **ext, size_t *ext_len)
{
	const char *v;
	size_t vlen;
	int found = rs_http_find_field(fields, nfields,
				       "sec-websocket-extensions", &v, &vlen);

	if (found == 1) {
		*ext = v;
		*ext_len = vlen;
	}
	return found < 0 ? -1 : 0;
}

static int bad_request(struct rs_ws_request *r, int status,
		       const char *problem)
{
	r->status = status;
	r->problem = problem;
	return -EPROTO;
}

int rs_ws_parse_request(const char *buf, size_t len, struct rs_ws_request *r)
{
	struct rs_http_request h;
	const char *v;
	size_t vlen;
	ssize_t n = rs_http_parse_request_head(buf, len, HEAD_MAX, &h);

	memset(r, 0, sizeof(*r));
	if (n == 0)
		return 0;
	if (n == -431) {
		r->status = 431;
		return -EMSGSIZE;
	}
	if (n < 0)
		return bad_request(r, 400, "not an HTTP/1.1 request head");
	if (h.method_len != 3 || memcmp(h.method, "GET", 3) != 0)
		return bad_request(r, 400, "not a GET request");
	r->path = h.target;
	r->path_len = h.target_len;
	if (h.minor != 1)
		return bad_request(r, 400, "not HTTP/1.1");
	if (!field_has(h.fields, h.nfields, "upgrade", "websocket"))
		return bad_request(r, 400, "no Upgrade: websocket");
	if (!field_has(h.fields, h.nfields, "connection", "upgrade"))
		return bad_request(r, 400, "no Connection: Upgrade");
	if (rs_http_find_field(h.fields, h.nfields, "sec-websocket-version", &v,
			       &vlen) != 1 ||
	    vlen != 2 || memcmp(v, "13", 2) != 0)
		return bad_request(r, 426, "Sec-WebSocket-Version is not 13");
	if (rs_http_find_field(h.fields, h.nfields, "sec-websocket-key", &v,
			       &vlen) != 1 ||
	    !key_valid(v, vlen))
		return bad_request(r, 400, "no valid Sec-WebSocket-Key");
	r->key = v;
	if (extensions_of(h.fields, h.nfields, &r->extensions,
			  &r->extensions_len) < 0)
		return bad_request(r, 400, "Sec-WebSocket-Extensions twice");
	return (int)n;
}

int rs_ws_server_response(char *out, size_t cap, const char *key,
			  const char *extensions)
{
	char accept[29];
	int n;

	if (rs_ws_accept_key(key, 24, accept) < 0)
		return -EIO;
	n = snprintf(out, cap,
		     "HTTP/1.1 101 Switching Protocols\r\n"
		     "Upgrade: websocket\r\n"
		     "Connection: Upgrade\r\n"
		     "Sec-WebSocket-Accept: %s\r\n"
		     "%s%s%s"
		     "\r\n",
		     accept, extensions ? "Sec-WebSocket-Extensions: " : "",
		     extensions ? extensions : "", extensions ? "\r\n" : "");
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}

int rs_ws_client_request(char *out, size_t cap, const char *host,
			 const char *path, const uint8_t nonce[16],
			 const char *extensions, char key[25])
{
	int n;

	if (EVP_EncodeBlock((unsigned char *)key, nonce, 16) != 24)
		return -EIO;
	n = snprintf(out, cap,
		     "GET %s HTTP/1.1\r\n"
		     "Host: %s\r\n"
		     "Upgrade: websocket\r\n"
		     "Connection: Upgrade\r\n"
		     "Sec-WebSocket-Key: %s\r\n"
		     "Sec-WebSocket-Version: 13\r\n"
		     "%s%s%s"
		     "\r\n",
		     path, host, key,
		     extensions ? "Sec-WebSocket-Extensions: " : "",
		     extensions ? extensions : "", extensions ? "\r\n" : "");
	if (n < 0 || (size_t)n >= cap)
		return -ENOSPC;
	return n;
}

static int bad_response(struct rs_ws_response *r, const char *problem)
{
	r->problem = problem;
	return -EPROTO;
}

int rs_ws_parse_response(const char *buf, size_t len, const char *key,
			 struct rs_ws_response *r)
{
	struct rs_http_response h;
	char accept[29];
	const char *v;
	size_t vlen;
	ssize_t n = rs_http_parse_response(buf, len, HEAD_MAX, &h);

	memset(r, 0, sizeof(*r));
	if (n == 0)
		return 0;
	if (n == -431)
		return -EMSGSIZE;
	if (n < 0)
		return bad_response(r, "not an HTTP/1.1 response head");
	if (h.minor != 1 || h.status != 101)
		return bad_response(r, "the status is not 101");
	if (!field_has(h.fields, h.nfields, "upgrade", "websocket"))
		return bad_response(r, "no Upgrade: websocket");
	if (!field_has(h.fields, h.nfields, "connection", "upgrade"))
		return bad_response(r, "no Connection: Upgrade");
	if (rs_ws_accept_key(key, strlen(key), accept) < 0)
		return bad_response(r, "libcrypto failed");
	if (rs_http_find_field(h.fields, h.nfields, "sec-websocket-accept", &v,
			       &vlen) != 1 ||
	    vlen != 28 || memcmp(v, accept, 28) != 0)
		return bad_response(r, "Sec-WebSocket-Accept does not match");
	if (extensions_of(h.fields, h.nfields, &r->extensions,
			  &r->extensions_len) < 0)
		return bad_response(r, "Sec-WebSocket-Extensions twice");
	return (int)n;
}
