/*
 * ws_deflate.c: permessage-deflate (RFC 7692) with zlib: the negotiation
 * of Sec-WebSocket-Extensions and the compression of messages, as npm ws
 * 8.18.3 does them. No I/O; see ws_deflate.h for the contracts.
 */
#include "ws_deflate.h"

#include "http_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bytes a Z_SYNC_FLUSH ends with (RFC 7692 7.2.1). */
static const uint8_t ws_trailer[4] = { 0x00, 0x00, 0xff, 0xff };

/* ------------------------------------------------------------------------ */
/* The Sec-WebSocket-Extensions grammar (RFC 7692 5, RFC 6455 9.1).         */

/*
 * The header is read as npm ws's lib/extension.js reads it: a list of
 * elements separated by ",", each a token (the extension) and parameters
 * separated by ";", each a token with an optional "=" and a value, a token
 * or a quoted string whose characters (after "\" escapes) are token
 * characters. Spaces and tabs may stand around tokens, not between a
 * parameter's name and its "=" or between the "=" and its value.
 */

/* The parameters of permessage-deflate, in npm ws's order. */
enum { P_SNCT, P_CNCT, P_SMWB, P_CMWB, P_COUNT };
static const char *const param_names[P_COUNT] = {
	"server_no_context_takeover",
	"client_no_context_takeover",
	"server_max_window_bits",
	"client_max_window_bits",
};

/* One permessage-deflate element: its parameters in the order given. */
struct pmd_offer {
	int count;
	int order[P_COUNT];  /* the parameters, in order */
	int value[P_COUNT];  /* by parameter: 1 for no value, or the number */
	int given[P_COUNT];
};

#define MAX_OFFERS 16

struct ext_list {
	struct pmd_offer offers[MAX_OFFERS];
	int noffers;
	int others;          /* elements of other extensions */
	int server;          /* client_max_window_bits may lack a value */
	const char *problem;
};

static int is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* A span of the header. */
struct span {
	const char *p;
	size_t n;
};

static int span_is(struct span s, const char *word)
{
	size_t n = strlen(word);

	return s.n == n && memcmp(s.p, word, n) == 0;
}

/* Reads a token at *pos; returns its span (n 0: none there). */
static struct span take_token(const char *h, size_t len, size_t *pos)
{
	struct span s = { h + *pos, 0 };

	while (*pos < len && rs_http_is_tchar((unsigned char)h[*pos])) {
		(*pos)++;
		s.n++;
	}
	return s;
}

static void skip_ows(const char *h, size_t len, size_t *pos)
{
	while (*pos < len && is_ows(h[*pos]))
		(*pos)++;
}

/*
 * A window size, as npm ws's normalizeParams reads one (`+value`, an
 * integer from 8 to 15): decimal digits here; JavaScript's other number
 * spellings (1e1, 0xa) are refused. Returns it, or -1.
 */
static int window_bits(const char *v, size_t n)
{
	int bits = 0;

	if (n == 0 || n > 8)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		bits = bits * 10 + (v[i] - '0');
	}
	return bits >= 8 && bits <= 15 ? bits : -1;
}

/*
 * Adds parameter name=[v, v+vn) (vn 0 with no value) to the offer; the
 * checks of npm ws's normalizeParams. Returns 0 or -1 (l->problem set).
 */
static int offer_param(struct ext_list *l, struct pmd_offer *o,
		       struct span name, const char *v, size_t vn,
		       int has_value)
{
	int k, bits;

	for (k = 0; k < P_COUNT; k++)
		if (span_is(name, param_names[k]))
			break;
	if (k == P_COUNT) {
		l->problem = "an unknown permessage-deflate parameter";
		return -1;
	}
	if (o->given[k]) {
		l->problem = "a permessage-deflate parameter given twice";
		return -1;
	}
	if (k == P_SNCT || k == P_CNCT) {
		if (has_value) {
			l->problem = "a value on a no_context_takeover parameter";
			return -1;
		}
		bits = 1;
	} else if (!has_value) {
		if (k == P_SMWB || !l->server) {
			l->problem = "a max_window_bits parameter without a value";
			return -1;
		}
		bits = 1;
	} else {
		bits = window_bits(v, vn);
		if (bits < 0) {
			l->problem = "a max_window_bits value outside 8..15";
			return -1;
		}
	}
	o->given[k] = 1;
	o->value[k] = bits;
	o->order[o->count++] = k;
	return 0;
}

/*
 * Reads a parameter's value at *pos (just past the "="): a token or a
 * quoted string. Copies it, without escapes, to val (at most cap bytes).
 * Returns its length, or -1.
 */
static int take_value(const char *h, size_t len, size_t *pos, char *val,
		      size_t cap)
{
	size_t n = 0;

	if (*pos < len && h[*pos] == '"') {
		(*pos)++;
		for (;;) {
			char c;

			if (*pos >= len)
				return -1;
			c = h[(*pos)++];
			if (c == '"')
				break;
			if (c == '\\') {
				if (*pos >= len)
					return -1;
				c = h[(*pos)++];
			}
			if (!rs_http_is_tchar((unsigned char)c))
				return -1;
			if (n < cap)
				val[n] = c;
			n++;
		}
		/* An empty quoted string is refused, as npm ws does. */
		return n == 0 ? -1 : (int)(n < cap ? n : cap);
	}
	while (*pos < len && rs_http_is_tchar((unsigned char)h[*pos])) {
		if (n < cap)
			val[n] = h[*pos];
		n++;
		(*pos)++;
	}
	return n == 0 ? -1 : (int)(n < cap ? n : cap);
}

/*
 * Parses the header into l: the permessage-deflate elements with their
 * parameters checked, and a count of the others. Returns 0 or -1
 * (l->problem set).
 */
static int parse_extensions(const char *h, size_t len, struct ext_list *l)
{
	size_t pos = 0;

	l->noffers = 0;
	l->others = 0;
	l->problem = NULL;
	for (;;) {
		struct pmd_offer *o = NULL;
		struct span name;

		skip_ows(h, len, &pos);
		name = take_token(h, len, &pos);
		if (name.n == 0)
			goto syntax;
		if (span_is(name, "permessage-deflate")) {
			if (l->noffers == MAX_OFFERS) {
				l->problem = "too many permessage-deflate offers";
				return -1;
			}
			o = &l->offers[l->noffers++];
			memset(o, 0, sizeof(*o));
		} else {
			l->others++;
		}
		skip_ows(h, len, &pos);
		while (pos < len && h[pos] == ';') {
			struct span pname;
			char val[16];
			int vn = 0, has_value = 0;

			pos++;
			skip_ows(h, len, &pos);
			pname = take_token(h, len, &pos);
			if (pname.n == 0)
				goto syntax;
			if (pos < len && h[pos] == '=') {
				pos++;
				vn = take_value(h, len, &pos, val, sizeof(val));
				if (vn < 0)
					goto syntax;
				has_value = 1;
			}
			if (o && offer_param(l, o, pname, val, (size_t)vn,
					     has_value) < 0)
				return -1;
			skip_ows(h, len, &pos);
		}
		if (pos == len)
			return 0;
		if (h[pos] != ',')
			goto syntax;
		pos++;
	}
syntax:
	l->problem = "Sec-WebSocket-Extensions does not parse";
	return -1;
}

/* ------------------------------------------------------------------------ */
/* Offer, answer, acceptance.                                               */

/* npm ws's option values (rs.h): a window size given as a number. */
static int is_bits(int v)
{
	return v >= 8 && v <= 15;
}

int rs_ws_deflate_options_check(const struct rs_ws_deflate_options *o)
{
	int t = o->server_no_context_takeover, c = o->client_no_context_takeover;
	int sb = o->server_max_window_bits, cb = o->client_max_window_bits;

	if (t < RS_WS_DEFLATE_FALSE || t > RS_WS_DEFLATE_TRUE ||
	    c < RS_WS_DEFLATE_FALSE || c > RS_WS_DEFLATE_TRUE)
		return -EINVAL;
	if (!(is_bits(sb) || (sb >= RS_WS_DEFLATE_FALSE && sb <= RS_WS_DEFLATE_TRUE)))
		return -EINVAL;
	if (!(is_bits(cb) || (cb >= RS_WS_DEFLATE_FALSE && cb <= RS_WS_DEFLATE_TRUE)))
		return -EINVAL;
	return 0;
}

/* Appends "; name" or "; name=value" to out at *n. */
static int put_param(char *out, size_t cap, size_t *n, int k, int value)
{
	int w = value == 1 ? snprintf(out + *n, cap - *n, "; %s", param_names[k])
			   : snprintf(out + *n, cap - *n, "; %s=%d",
				      param_names[k], value);

	if (w < 0 || (size_t)w >= cap - *n)
		return -ENOSPC;
	*n += (size_t)w;
	return 0;
}

int rs_ws_deflate_offer(const struct rs_ws_deflate_options *o, char *out,
			size_t cap)
{
	size_t n = 0;
	int r = 0;

	if (rs_ws_deflate_options_check(o) < 0)
		return -EINVAL;
	if (cap < sizeof("permessage-deflate"))
		return -ENOSPC;
	memcpy(out, "permessage-deflate", sizeof("permessage-deflate"));
	n = sizeof("permessage-deflate") - 1;
	/* npm ws's offer(): a parameter for each truthy option (true is
	 * the parameter without a value, which a server refuses for
	 * server_max_window_bits, as npm ws's does); false offers nothing. */
	if (o->server_no_context_takeover == RS_WS_DEFLATE_TRUE)
		r = put_param(out, cap, &n, P_SNCT, 1);
	if (r == 0 && o->client_no_context_takeover == RS_WS_DEFLATE_TRUE)
		r = put_param(out, cap, &n, P_CNCT, 1);
	if (r == 0 && o->server_max_window_bits > 0)
		r = put_param(out, cap, &n, P_SMWB, o->server_max_window_bits);
	/* Without a size (not given, or true), npm ws offers the parameter
	 * bare: the server may then choose the client's window; false
	 * leaves it out. */
	if (r == 0 && o->client_max_window_bits != RS_WS_DEFLATE_FALSE)
		r = put_param(out, cap, &n, P_CMWB,
			      is_bits(o->client_max_window_bits)
				      ? o->client_max_window_bits : 1);
	return r < 0 ? r : (int)n;
}

/* Sets or adds parameter k (kept in place when already there). */
static void offer_set(struct pmd_offer *o, int k, int value)
{
	if (!o->given[k]) {
		o->given[k] = 1;
		o->order[o->count++] = k;
	}
	o->value[k] = value;
}

static void offer_delete(struct pmd_offer *o, int k)
{
	int j = 0;

	if (!o->given[k])
		return;
	o->given[k] = 0;
	for (int i = 0; i < o->count; i++)
		if (o->order[i] != k)
			o->order[j++] = o->order[i];
	o->count = j;
}

static void params_of(const struct pmd_offer *o,
		      struct rs_ws_deflate_params *p)
{
	memset(p, 0, sizeof(*p));
	p->server_no_context_takeover = o->given[P_SNCT];
	p->client_no_context_takeover = o->given[P_CNCT];
	/* A bare client_max_window_bits (value 1) means no size. */
	p->server_max_window_bits = o->given[P_SMWB] ? o->value[P_SMWB] : 0;
	p->client_max_window_bits =
		o->given[P_CMWB] && o->value[P_CMWB] != 1 ? o->value[P_CMWB] : 0;
}

int rs_ws_deflate_answer(const struct rs_ws_deflate_options *o,
			 const char *hdr, size_t len,
			 struct rs_ws_deflate_params *agreed, char *out,
			 size_t cap, const char **problem)
{
	struct ext_list l;
	struct pmd_offer *a = NULL;
	size_t n;
	int r = 0;

	*problem = NULL;
	memset(&l, 0, sizeof(l));
	l.server = 1;
	if (parse_extensions(hdr, len, &l) < 0) {
		*problem = l.problem;
		return -EPROTO;
	}
	if (l.noffers == 0)
		return 0;
	/* npm ws's acceptAsServer: the first offer that does not ask for
	 * server_no_context_takeover when the options say false, nor for a
	 * server window when they say false or a smaller one than they
	 * allow, and that lets the client's window be set when the options
	 * set it. */
	for (int i = 0; i < l.noffers && !a; i++) {
		struct pmd_offer *f = &l.offers[i];

		if (f->given[P_SNCT] &&
		    o->server_no_context_takeover == RS_WS_DEFLATE_FALSE)
			continue;
		if (f->given[P_SMWB] &&
		    (o->server_max_window_bits == RS_WS_DEFLATE_FALSE ||
		     (is_bits(o->server_max_window_bits) &&
		      o->server_max_window_bits > f->value[P_SMWB])))
			continue;
		if (is_bits(o->client_max_window_bits) && !f->given[P_CMWB])
			continue;
		a = f;
	}
	if (!a) {
		*problem = "none of the permessage-deflate offers can be accepted";
		return -EPROTO;
	}
	/* Completed with the options: true or a number sets, and
	 * client_max_window_bits false takes the client's size out (the
	 * client keeps 15 then). */
	if (o->server_no_context_takeover == RS_WS_DEFLATE_TRUE)
		offer_set(a, P_SNCT, 1);
	if (o->client_no_context_takeover == RS_WS_DEFLATE_TRUE)
		offer_set(a, P_CNCT, 1);
	if (is_bits(o->server_max_window_bits))
		offer_set(a, P_SMWB, o->server_max_window_bits);
	if (is_bits(o->client_max_window_bits))
		offer_set(a, P_CMWB, o->client_max_window_bits);
	else if ((a->given[P_CMWB] && a->value[P_CMWB] == 1) ||
		 o->client_max_window_bits == RS_WS_DEFLATE_FALSE)
		offer_delete(a, P_CMWB);
	if (cap < sizeof("permessage-deflate"))
		return -ENOSPC;
	memcpy(out, "permessage-deflate", sizeof("permessage-deflate"));
	n = sizeof("permessage-deflate") - 1;
	for (int i = 0; i < a->count && r == 0; i++)
		r = put_param(out, cap, &n, a->order[i], a->value[a->order[i]]);
	if (r < 0)
		return r;
	params_of(a, agreed);
	return 1;
}

int rs_ws_deflate_accept(const struct rs_ws_deflate_options *o,
			 const char *hdr, size_t len,
			 struct rs_ws_deflate_params *agreed,
			 const char **problem)
{
	struct ext_list l;
	struct pmd_offer *a;

	*problem = NULL;
	memset(&l, 0, sizeof(l));
	if (parse_extensions(hdr, len, &l) < 0) {
		*problem = l.problem;
		return -EPROTO;
	}
	if (l.others || l.noffers == 0) {
		*problem = "the server named an extension that was not offered";
		return -EPROTO;
	}
	/* npm ws's acceptAsClient reads the first element only. */
	a = &l.offers[0];
	if (a->given[P_CNCT] &&
	    o->client_no_context_takeover == RS_WS_DEFLATE_FALSE) {
		*problem = "client_no_context_takeover, which the options refuse";
		return -EPROTO;
	}
	if (!a->given[P_CMWB]) {
		if (is_bits(o->client_max_window_bits))
			offer_set(a, P_CMWB, o->client_max_window_bits);
	} else if (o->client_max_window_bits == RS_WS_DEFLATE_FALSE) {
		*problem = "client_max_window_bits, which was not offered";
		return -EPROTO;
	} else if (is_bits(o->client_max_window_bits) &&
		   a->value[P_CMWB] > o->client_max_window_bits) {
		*problem = "client_max_window_bits over the one offered";
		return -EPROTO;
	}
	params_of(a, agreed);
	return 0;
}

int rs_ws_deflate_wanted(const struct rs_ws_deflate_params *p, int server,
			 size_t threshold, int no_compress, size_t len)
{
	int reset = server ? p->server_no_context_takeover
			   : p->client_no_context_takeover;

	if (no_compress)
		return 0;
	if (!reset)
		return 1;
	return len >= (threshold ? threshold : RS_WS_DEFLATE_THRESHOLD);
}

/* ------------------------------------------------------------------------ */
/* Compression.                                                             */

/* zlib's raw deflate has no 256-byte window; node asks for 512 then. */
static int deflate_bits(int bits)
{
	return bits == 0 ? 15 : bits == 8 ? 9 : bits;
}

void rs_ws_deflater_init(struct rs_ws_deflater *d, int window_bits,
			 int no_context_takeover)
{
	memset(d, 0, sizeof(*d));
	d->window_bits = deflate_bits(window_bits);
	d->reset = no_context_takeover;
}

void rs_ws_deflater_free(struct rs_ws_deflater *d)
{
	if (d->ready)
		deflateEnd(&d->z);
	free(d->buf);
	d->ready = 0;
	d->buf = NULL;
	d->cap = 0;
}

/* Makes room for at least `more` bytes past `used` in d->buf. */
static int grow(uint8_t **buf, size_t *cap, size_t used, size_t more)
{
	size_t c = *cap ? *cap : 256;
	uint8_t *b;

	if (used + more <= *cap)
		return 0;
	while (c < used + more) {
		if (c > SIZE_MAX / 2)
			return -ENOMEM;
		c *= 2;
	}
	b = realloc(*buf, c);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*cap = c;
	return 0;
}

/* One deflate() call pattern to its end: until zlib leaves output room
 * with all input used. Appends at *used. */
static int deflate_run(struct rs_ws_deflater *d, size_t *used, int flush)
{
	for (;;) {
		int r;

		if (grow(&d->buf, &d->cap, *used, 64 + d->z.avail_in / 2) < 0)
			return -ENOMEM;
		d->z.next_out = d->buf + *used;
		d->z.avail_out = (uInt)(d->cap - *used > UINT32_MAX
						? UINT32_MAX : d->cap - *used);
		r = deflate(&d->z, flush);
		*used = (size_t)(d->z.next_out - d->buf);
		/* Z_BUF_ERROR: nothing to do (no input, and this flush was
		 * the last call's); not an error, as node treats it. */
		if (r != Z_OK && r != Z_BUF_ERROR)
			return -EIO;
		if (d->z.avail_out != 0 && d->z.avail_in == 0)
			return 0;
	}
}

long rs_ws_deflate(struct rs_ws_deflater *d, const void *in, size_t n,
		   int fin, const uint8_t **out)
{
	static const uint8_t none;
	size_t used = 0;
	int r;

	if (!d->ready) {
		/* node's zlib defaults, which npm ws keeps: level 6, memLevel
		 * 8, the default strategy. */
		memset(&d->z, 0, sizeof(d->z));
		if (deflateInit2(&d->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
				 -d->window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return -ENOMEM;
		d->ready = 1;
	}
	if (n > UINT32_MAX)
		return -EINVAL;
	/* node's stream: write(data) is deflate(Z_NO_FLUSH), also for no
	 * bytes (which sets zlib's last flush, so the sync flush behind it
	 * always writes its empty block), then flush(Z_SYNC_FLUSH). */
	d->z.next_in = (Bytef *)(n ? in : &none);
	d->z.avail_in = (uInt)n;
	r = deflate_run(d, &used, Z_NO_FLUSH);
	if (r == 0)
		r = deflate_run(d, &used, Z_SYNC_FLUSH);
	if (r < 0)
		return r;
	if (fin) {
		if (used < 4 || memcmp(d->buf + used - 4, ws_trailer, 4) != 0)
			return -EIO;
		used -= 4;
		if (d->reset && deflateReset(&d->z) != Z_OK)
			return -EIO;
	}
	*out = d->buf;
	return (long)used;
}

/* ------------------------------------------------------------------------ */
/* Decompression.                                                           */

void rs_ws_inflater_init(struct rs_ws_inflater *f, int window_bits,
			 int no_context_takeover, uint64_t max)
{
	memset(f, 0, sizeof(*f));
	/* Always 32 KiB, whatever the peer's window (RFC 7692 lets the
	 * receiver's be larger): zlib refuses a distance past a smaller
	 * window only when it reaches back past the current output buffer,
	 * so with the agreed window whether a message inflates would depend
	 * on how its input and output were split (fuzz_ws_deflate found it).
	 * A peer's data is judged by the deflate format alone. */
	(void)window_bits;
	f->window_bits = 15;
	f->reset = no_context_takeover;
	f->max = max;
}

void rs_ws_inflater_free(struct rs_ws_inflater *f)
{
	if (f->ready)
		inflateEnd(&f->z);
	free(f->buf);
	f->ready = 0;
	f->buf = NULL;
	f->len = 0;
	f->cap = 0;
}

int rs_ws_inflate(struct rs_ws_inflater *f, const void *in, size_t n)
{
	if (f->failed)
		return f->failed;
	if (!f->ready) {
		memset(&f->z, 0, sizeof(f->z));
		if (inflateInit2(&f->z, -f->window_bits) != Z_OK)
			return f->failed = -ENOMEM;
		f->ready = 1;
	}
	if (f->ended || n == 0)
		return 0;
	if (n > UINT32_MAX)
		return f->failed = -EINVAL;
	f->z.next_in = (Bytef *)in;
	f->z.avail_in = (uInt)n;
	/* Until the input is used and zlib holds back no output. */
	for (;;) {
		size_t room;
		int r;

		/* Room for at most max + 1 bytes: one more is too big. */
		if (f->max && f->len > f->max)
			return f->failed = -EMSGSIZE;
		if (grow(&f->buf, &f->cap, f->len, 1) < 0)
			return f->failed = -ENOMEM;
		room = f->cap - f->len;
		if (f->max && room > f->max + 1 - f->len)
			room = (size_t)(f->max + 1 - f->len);
		if (room > UINT32_MAX)
			room = UINT32_MAX;
		f->z.next_out = f->buf + f->len;
		f->z.avail_out = (uInt)room;
		r = inflate(&f->z, Z_SYNC_FLUSH);
		f->len = (size_t)(f->z.next_out - f->buf);
		if (f->max && f->len > f->max)
			return f->failed = -EMSGSIZE;
		if (r == Z_STREAM_END) {
			/* A final block: what follows it in this message is
			 * not read (node's inflate stream ends there). */
			f->ended = 1;
			return 0;
		}
		if (r == Z_MEM_ERROR)
			return f->failed = -ENOMEM;
		if (r == Z_BUF_ERROR && f->z.avail_in == 0)
			return 0;  /* every byte used, nothing held back */
		if (r != Z_OK)
			return f->failed = -EBADMSG;
		if (f->z.avail_in == 0 && f->z.avail_out != 0)
			return 0;
	}
}

int rs_ws_inflate_end(struct rs_ws_inflater *f, const uint8_t **out,
		      size_t *len)
{
	int r = f->ended ? rs_ws_inflate(f, NULL, 0)
			 : rs_ws_inflate(f, ws_trailer, sizeof(ws_trailer));

	if (r < 0)
		return r;
	*out = f->buf;
	*len = f->len;
	f->len = 0;
	if (f->ended || f->reset) {
		if (inflateReset(&f->z) != Z_OK)
			return f->failed = -EIO;
		f->ended = 0;
	}
	return 0;
}
