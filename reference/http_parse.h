/*
 * http_parse.h: the one HTTP/1.x head parser, of requests (the HTTP server,
 * the WebSocket handshake's server side) and of responses (the handshake's
 * client side). No I/O, no allocation: bytes in, a parsed head (pointers
 * into those bytes) out, so it runs on any prefix of a stream and is tested
 * at every split point.
 *
 * What it takes (RFC 9112, strictly): a request line METHOD SP TARGET SP
 * "HTTP/1." ("0" / "1") CRLF, where METHOD is a token and TARGET visible
 * ASCII (no byte above 0x7e: RFC 3986 percent-encodes those), or a status
 * line "HTTP/1." ("0" / "1") SP 3DIGIT SP REASON CRLF, REASON as a VALUE;
 * then header fields NAME ":" OWS VALUE OWS CRLF, NAME a token, VALUE
 * visible ASCII, spaces, tabs and obs-text (0x80-0xff); then CRLF. A bare
 * LF, a line folded onto the next (obs-fold), a space before the colon or
 * a control byte is malformed.
 */
#ifndef WIRECHECK_HTTP_PARSE_H
#define WIRECHECK_HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Header fields a head may have; one more is 431. */
#define RS_HTTP_MAX_HEADERS 64
/* The default bound on a head's size (request line, fields, blank line). */
#define RS_HTTP_MAX_HEAD 8192

struct rs_http_field {
	const char *name;
	size_t name_len;
	const char *value;   /* without its leading and trailing spaces */
	size_t value_len;
};

struct rs_http_request {
	const char *method;
	size_t method_len;
	const char *target;
	size_t target_len;
	int minor;                /* HTTP/1.minor */
	struct rs_http_field fields[RS_HTTP_MAX_HEADERS];
	size_t nfields;
	uint64_t content_length;  /* 0 without a Content-Length field */
	int keep_alive;           /* 1.1 unless "close"; 1.0 only with "keep-alive" */
	size_t head_len;          /* bytes of the head, blank line included */
};

/* A response head: the status line and the fields. */
struct rs_http_response {
	int minor;                /* HTTP/1.minor */
	int status;               /* the three digits */
	const char *reason;       /* the reason phrase, maybe empty */
	size_t reason_len;
	struct rs_http_field fields[RS_HTTP_MAX_HEADERS];
	size_t nfields;
	size_t head_len;          /* bytes of the head, blank line included */
};

/*
 * Parses the request head at the start of buf[0, len). Returns:
 *   > 0   the head is complete: its length (also req->head_len); the body
 *         (content_length bytes) and any pipelined request follow it;
 *   0     every byte so far is a valid start of a head: read more;
 *   -400  malformed (also: a Content-Length that is not a number, two that
 *         differ, one with Transfer-Encoding);
 *   -431  the head is longer than max_head bytes, or has more than
 *         RS_HTTP_MAX_HEADERS fields;
 *   -501  a Transfer-Encoding field (request bodies are Content-Length only).
 * An error is reported as soon as the bytes show it, whatever follows, so
 * every prefix of a bad head gives 0 or that same error. *req is filled
 * only when the head is complete.
 */
ssize_t rs_http_parse_request(const char *buf, size_t len, size_t max_head,
			      struct rs_http_request *req);

/*
 * Parses the request line and the fields only, as rs_http_parse_request
 * but without reading the body's framing from them: content_length and
 * keep_alive stay 0, and Content-Length or Transfer-Encoding is never an
 * error. For a request that has no body of its own to frame (an Upgrade).
 * Returns the head's length, 0, -400 or -431.
 */
ssize_t rs_http_parse_request_head(const char *buf, size_t len,
				   size_t max_head,
				   struct rs_http_request *req);

/*
 * Parses the response head at the start of buf[0, len): the head's length
 * (*resp filled), 0 for more bytes, -400 malformed, -431 as for a request.
 * The status code is not judged: any three digits parse.
 */
ssize_t rs_http_parse_response(const char *buf, size_t len, size_t max_head,
			       struct rs_http_response *resp);

/*
 * Finds the field called name (written in lower case; matched in any case)
 * among fields[0, nfields). Returns 1 and sets *value and *value_len to its
 * value, 0 when there is none, -1 when there are several (*value is then
 * the first one's).
 */
int rs_http_find_field(const struct rs_http_field *fields, size_t nfields,
		       const char *name, const char **value, size_t *value_len);

/* 1 when the comma-separated value v[0, len) holds tok (written in lower
 * case; matched in any case) as one of its elements, else 0. */
int rs_http_list_has(const char *v, size_t len, const char *tok);

/* 1 when ch may be in a token (RFC 9110 section 5.6.2, tchar), else 0. */
int rs_http_is_tchar(unsigned char ch);

/* The reason phrase of a status code this stack sends ("Bad Request"), or
 * "Unknown". */
const char *rs_http_reason(int status);

#endif
