/*
 * http_parse.c: the request-head parser (http_parse.h). A single forward
 * scan with a cursor; running out of bytes anywhere is "incomplete" (0),
 * never an error, so a prefix of a good head is never refused.
 */
#include "http_parse.h"

#include <string.h>

#define INCOMPLETE 0
#define BAD (-400)
#define TOO_LARGE (-431)
#define NOT_IMPLEMENTED (-501)

int rs_http_is_tchar(unsigned char ch)
{
	if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9'))
		return 1;
	return ch != 0 && strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

/* Visible ASCII (VCHAR): a request target has no obs-text; bytes above
 * 0x7e are percent-encoded in it (RFC 3986). */
static int is_vchar(unsigned char ch)
{
	return ch > 0x20 && ch < 0x7f;
}

static int field_byte(unsigned char ch)
{
	return ch == ' ' || ch == '\t' || (ch > 0x20 && ch != 0x7f);
}

static int lower_eq(const char *a, size_t alen, const char *lit)
{
	size_t n = strlen(lit);

	if (alen != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)a[i];

		if (ch >= 'A' && ch <= 'Z')
			ch = (unsigned char)(ch - 'A' + 'a');
		if (ch != (unsigned char)lit[i])
			return 0;
	}
	return 1;
}

int rs_http_list_has(const char *v, size_t len, const char *tok)
{
	size_t i = 0;

	while (i < len) {
		size_t start, end;

		while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		start = i;
		while (i < len && v[i] != ',')
			i++;
		end = i;
		while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
			end--;
		if (end > start && lower_eq(v + start, end - start, tok))
			return 1;
	}
	return 0;
}

/* A Content-Length value: digits only, at most 18 of them. */
static int parse_length(const char *v, size_t len, uint64_t *out)
{
	uint64_t x = 0;

	if (len == 0 || len > 18)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*out = x;
	return 0;
}

/* Expects CRLF at *pos. 1 done, 0 incomplete, BAD. */
static int expect_crlf(const char *b, size_t len, size_t *pos)
{
	if (*pos >= len)
		return INCOMPLETE;
	if (b[*pos] != '\r')
		return BAD;
	if (*pos + 1 >= len)
		return INCOMPLETE;
	if (b[*pos + 1] != '\n')
		return BAD;
	*pos += 2;
	return 1;
}

/* "HTTP/1.0" or "HTTP/1.1" at *pos. Returns 1, moves *pos past it and
 * sets *minor, or 0 / BAD. */
static int http_version(const char *b, size_t len, size_t *pos, int *minor)
{
	static const char version[] = "HTTP/1.";
	size_t i = *pos;

	for (size_t k = 0; k < sizeof(version) - 1; k++, i++) {
		if (i == len)
			return INCOMPLETE;
		if (b[i] != version[k])
			return BAD;
	}
	if (i == len)
		return INCOMPLETE;
	if (b[i] != '0' && b[i] != '1')
		return BAD;
	*minor = b[i] - '0';
	*pos = i + 1;
	return 1;
}

/* The request line. Returns 1 and moves *pos past it, or 0 / BAD. */
static int request_line(const char *b, size_t len, size_t *pos,
			struct rs_http_request *req)
{
	size_t i = *pos, start = i;
	int rc;

	while (i < len && rs_http_is_tchar((unsigned char)b[i]))
		i++;
	if (i == len)
		return INCOMPLETE;
	if (b[i] != ' ' || i == start)
		return BAD;
	req->method = b + start;
	req->method_len = i - start;
	start = ++i;
	while (i < len && is_vchar((unsigned char)b[i]))
		i++;
	if (i == len)
		return INCOMPLETE;
	if (b[i] != ' ' || i == start)
		return BAD;
	req->target = b + start;
	req->target_len = i - start;
	i++;
	rc = http_version(b, len, &i, &req->minor);
	if (rc <= 0)
		return rc;
	rc = expect_crlf(b, len, &i);
	if (rc <= 0)
		return rc;
	*pos = i;
	return 1;
}

/*
 * The status line (RFC 9112 section 4): HTTP-version SP 3DIGIT SP
 * [reason-phrase] CRLF. Returns 1 and moves *pos past it, or 0 / BAD.
 */
static int status_line(const char *b, size_t len, size_t *pos,
		       struct rs_http_response *resp)
{
	size_t i = *pos, start;
	int rc = http_version(b, len, &i, &resp->minor);

	if (rc <= 0)
		return rc;
	resp->status = 0;
	for (int k = 0; k < 5; k++, i++) {
		int digit = k >= 1 && k <= 3;

		if (i == len)
			return INCOMPLETE;
		if (digit ? b[i] < '0' || b[i] > '9' : b[i] != ' ')
			return BAD;
		if (digit)
			resp->status = resp->status * 10 + (b[i] - '0');
	}
	start = i;
	while (i < len && field_byte((unsigned char)b[i]))
		i++;
	if (i == len)
		return INCOMPLETE;
	resp->reason = b + start;
	resp->reason_len = i - start;
	rc = expect_crlf(b, len, &i);
	if (rc <= 0)
		return rc;
	*pos = i;
	return 1;
}

/* One header field line. Returns 1 and fills *f, or 0 / BAD. */
static int field_line(const char *b, size_t len, size_t *pos,
		      struct rs_http_field *f)
{
	size_t i = *pos, start = i, vstart, vend;
	int rc;

	while (i < len && rs_http_is_tchar((unsigned char)b[i]))
		i++;
	if (i == len)
		return INCOMPLETE;
	if (b[i] != ':' || i == start)
		return BAD;  /* also a space before the colon, or obs-fold */
	f->name = b + start;
	f->name_len = i - start;
	i++;
	while (i < len && (b[i] == ' ' || b[i] == '\t'))
		i++;
	vstart = i;
	while (i < len && field_byte((unsigned char)b[i]))
		i++;
	if (i == len)
		return INCOMPLETE;
	vend = i;
	while (vend > vstart && (b[vend - 1] == ' ' || b[vend - 1] == '\t'))
		vend--;
	rc = expect_crlf(b, len, &i);
	if (rc <= 0)
		return rc;
	f->value = b + vstart;
	f->value_len = vend - vstart;
	*pos = i;
	return 1;
}

/* What the fields mean for the body and the connection. */
static int interpret(struct rs_http_request *req)
{
	int have_length = 0, have_te = 0, close = 0, keep = 0;

	req->content_length = 0;
	for (size_t k = 0; k < req->nfields; k++) {
		const struct rs_http_field *f = &req->fields[k];

		if (lower_eq(f->name, f->name_len, "content-length")) {
			uint64_t v;

			if (parse_length(f->value, f->value_len, &v) < 0)
				return BAD;
			if (have_length && v != req->content_length)
				return BAD;
			req->content_length = v;
			have_length = 1;
		} else if (lower_eq(f->name, f->name_len, "transfer-encoding")) {
			have_te = 1;
		} else if (lower_eq(f->name, f->name_len, "connection")) {
			close |= rs_http_list_has(f->value, f->value_len, "close");
			keep |= rs_http_list_has(f->value, f->value_len, "keep-alive");
		}
	}
	/* Both framings at once is the request-smuggling shape (RFC 9112
	 * section 6.1): refused as malformed, in either order; a
	 * Transfer-Encoding alone is a framing this stack does not take. */
	if (have_te)
		return have_length ? BAD : NOT_IMPLEMENTED;
	req->keep_alive = req->minor >= 1 ? !close : (keep && !close);
	return 1;
}

/*
 * The header fields after a start line that ended at pos, through the blank
 * line; len is already clipped to the head's bound. Returns the head's
 * length, INCOMPLETE, BAD or TOO_LARGE (a field past RS_HTTP_MAX_HEADERS).
 */
static ssize_t head_fields(const char *b, size_t len, size_t pos,
			   struct rs_http_field *fields, size_t *nfields)
{
	int rc;

	for (;;) {
		if (pos < len && b[pos] == '\r') {
			rc = expect_crlf(b, len, &pos);
			return rc <= 0 ? rc : (ssize_t)pos;
		}
		if (pos == len)
			return INCOMPLETE;
		if (*nfields == RS_HTTP_MAX_HEADERS)
			return TOO_LARGE;
		rc = field_line(b, len, &pos, &fields[*nfields]);
		if (rc <= 0)
			return rc;
		(*nfields)++;
	}
}

/* Only what fits the bound is looked at: a head that is not over by then
 * is too large, whatever the bytes after. */
static size_t clip(size_t len, size_t max_head)
{
	return len > max_head ? max_head : len;
}

/* A head stopped at rc within len bytes (clipped): running out of bytes
 * at the bound is too large, before it incomplete. */
static ssize_t head_result(ssize_t rc, size_t len, size_t max_head)
{
	if (rc != INCOMPLETE)
		return rc;
	return len >= max_head ? TOO_LARGE : INCOMPLETE;
}

ssize_t rs_http_parse_request_head(const char *buf, size_t len,
				   size_t max_head,
				   struct rs_http_request *out)
{
	struct rs_http_request req;
	size_t pos = 0;
	ssize_t rc;

	len = clip(len, max_head);
	memset(&req, 0, sizeof(req));
	rc = request_line(buf, len, &pos, &req);
	if (rc == 1)
		rc = head_fields(buf, len, pos, req.fields, &req.nfields);
	if (rc <= 0)
		return head_result(rc, len, max_head);
	req.head_len = (size_t)rc;
	*out = req;
	return rc;
}

ssize_t rs_http_parse_request(const char *buf, size_t len, size_t max_head,
			      struct rs_http_request *out)
{
	struct rs_http_request req;
	ssize_t n = rs_http_parse_request_head(buf, len, max_head, &req);
	int rc;

	if (n <= 0)
		return n;
	rc = interpret(&req);
	if (rc < 0)
		return rc;
	*out = req;
	return n;
}

ssize_t rs_http_parse_response(const char *buf, size_t len, size_t max_head,
			       struct rs_http_response *out)
{
	struct rs_http_response resp;
	size_t pos = 0;
	ssize_t rc;

	len = clip(len, max_head);
	memset(&resp, 0, sizeof(resp));
	rc = status_line(buf, len, &pos, &resp);
	if (rc == 1)
		rc = head_fields(buf, len, pos, resp.fields, &resp.nfields);
	if (rc <= 0)
		return head_result(rc, len, max_head);
	resp.head_len = (size_t)rc;
	*out = resp;
	return rc;
}

int rs_http_find_field(const struct rs_http_field *fields, size_t nfields,
		       const char *name, const char **value, size_t *value_len)
{
	int found = 0;

	for (size_t k = 0; k < nfields; k++) {
		if (!lower_eq(fields[k].name, fields[k].name_len, name))
			continue;
		if (found)
			return -1;
		found = 1;
		*value = fields[k].value;
		*value_len = fields[k].value_len;
	}
	return found;
}

const char *rs_http_reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 413: return "Content Too Large";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	default: return "Unknown";
	}
}
