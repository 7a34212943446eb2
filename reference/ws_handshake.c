/*
 * ws_handshake.c: the pure parts of the WebSocket opening handshake
 * (RFC 6455, 4): the Upgrade request and the 101 answer, parsed and
 * written, and Sec-WebSocket-Accept (SHA-1 and base64 from libcrypto).
 * No I/O; see ws_frame.h for the contracts.
 */
#include "ws_frame.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

/* RFC 6455 1.3. */
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/* A head larger than this without its blank line is refused (npm ws takes
 * node's default of 16 KiB; an Upgrade request needs far less). */
#define HEAD_MAX 8192

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

/* A head: the bytes through its blank line. */
struct head {
	const char *buf;
	size_t len;   /* through the blank line */
};

/* Finds the end of the head. Returns its length, 0 or -EMSGSIZE. */
static int head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 3 < len; i++)
		if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' &&
		    buf[i + 3] == '\n')
			return i + 4 > HEAD_MAX ? -EMSGSIZE : (int)(i + 4);
	return len >= HEAD_MAX ? -EMSGSIZE : 0;
}

/* Skips spaces and tabs from *p up to end. */
static const char *skip_ows(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/*
 * Finds header `name` in the head (after the first line). Sets *val and
 * *vlen to its value without surrounding spaces. Returns 1 if found, 0 if
 * not, -1 if it is there twice (a repeated header is refused, as npm ws
 * does for the key and the version).
 */
static int header_value(const struct head *h, const char *name,
			const char **val, size_t *vlen)
{
	size_t nlen = strlen(name);
	const char *p = memchr(h->buf, '\n', h->len), *end = h->buf + h->len;
	int found = 0;

	while (p && ++p < end) {
		const char *eol = memchr(p, '\r', (size_t)(end - p));
		const char *colon;

		if (!eol || eol == p)
			break;
		colon = memchr(p, ':', (size_t)(eol - p));
		if (colon && (size_t)(colon - p) == nlen &&
		    strncasecmp(p, name, nlen) == 0) {
			const char *v = skip_ows(colon + 1, eol), *e = eol;

			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			if (found)
				return -1;
			found = 1;
			*val = v;
			*vlen = (size_t)(e - v);
		}
		p = eol + 1;
	}
	return found;
}

/* 1 when the comma-separated list [v, v+n) holds token (any case). */
static int has_token(const char *v, size_t n, const char *token)
{
	size_t tlen = strlen(token);
	const char *end = v + n;

	while (v < end) {
		const char *comma = memchr(v, ',', (size_t)(end - v));
		const char *e = comma ? comma : end, *s = skip_ows(v, e);

		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(e - s) == tlen && strncasecmp(s, token, tlen) == 0)
			return 1;
		v = comma ? comma + 1 : end;
	}
	return 0;
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

static int bad_request(struct rs_ws_request *r, int status,
		       const char *problem)
{
	r->status = status;
	r->problem = problem;
	return -EPROTO;
}

int rs_ws_parse_request(const char *buf, size_t len, struct rs_ws_request *r)
{
	struct head h = { buf, 0 };
	const char *v, *sp;
	size_t vlen;
	int n = head_end(buf, len);

	memset(r, 0, sizeof(*r));
	if (n <= 0) {
		if (n < 0)
			r->status = 431;
		return n;
	}
	h.len = (size_t)n;
	if (h.len < 4 || memcmp(buf, "GET ", 4) != 0)
		return bad_request(r, 400, "not a GET request");
	r->path = buf + 4;
	sp = memchr(r->path, ' ', h.len - 4);
	if (!sp || sp == r->path)
		return bad_request(r, 400, "no request target");
	r->path_len = (size_t)(sp - r->path);
	if ((size_t)(buf + h.len - sp) < 11 || memcmp(sp, " HTTP/1.1\r\n", 11) != 0)
		return bad_request(r, 400, "not HTTP/1.1");
	if (header_value(&h, "Upgrade", &v, &vlen) != 1 ||
	    !has_token(v, vlen, "websocket"))
		return bad_request(r, 400, "no Upgrade: websocket");
	if (header_value(&h, "Connection", &v, &vlen) != 1 ||
	    !has_token(v, vlen, "upgrade"))
		return bad_request(r, 400, "no Connection: Upgrade");
	if (header_value(&h, "Sec-WebSocket-Version", &v, &vlen) != 1 ||
	    vlen != 2 || memcmp(v, "13", 2) != 0)
		return bad_request(r, 426, "Sec-WebSocket-Version is not 13");
	if (header_value(&h, "Sec-WebSocket-Key", &v, &vlen) != 1 ||
	    !key_valid(v, vlen))
		return bad_request(r, 400, "no valid Sec-WebSocket-Key");
	r->key = v;
	switch (header_value(&h, "Sec-WebSocket-Extensions", &v, &vlen)) {
	case 1:
		r->extensions = v;
		r->extensions_len = vlen;
		break;
	case -1:
		return bad_request(r, 400, "Sec-WebSocket-Extensions twice");
	default:
		break;
	}
	return n;
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
	struct head h = { buf, 0 };
	char accept[29];
	const char *v;
	size_t vlen;
	int n = head_end(buf, len);

	memset(r, 0, sizeof(*r));
	if (n <= 0)
		return n;
	h.len = (size_t)n;
	if (h.len < 13 || memcmp(buf, "HTTP/1.1 101 ", 13) != 0)
		return bad_response(r, "the status is not 101");
	if (header_value(&h, "Upgrade", &v, &vlen) != 1 ||
	    !has_token(v, vlen, "websocket"))
		return bad_response(r, "no Upgrade: websocket");
	if (header_value(&h, "Connection", &v, &vlen) != 1 ||
	    !has_token(v, vlen, "upgrade"))
		return bad_response(r, "no Connection: Upgrade");
	if (rs_ws_accept_key(key, strlen(key), accept) < 0)
		return bad_response(r, "libcrypto failed");
	if (header_value(&h, "Sec-WebSocket-Accept", &v, &vlen) != 1 ||
	    vlen != 28 || memcmp(v, accept, 28) != 0)
		return bad_response(r, "Sec-WebSocket-Accept does not match");
	switch (header_value(&h, "Sec-WebSocket-Extensions", &v, &vlen)) {
	case 1:
		r->extensions = v;
		r->extensions_len = vlen;
		break;
	case -1:
		return bad_response(r, "Sec-WebSocket-Extensions twice");
	default:
		break;
	}
	return n;
}
