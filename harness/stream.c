/*
 * stream.c: a byte stream as the trace records it (stream.h).
 */
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wc_stream_init(struct wc_stream *s)
{
	s->sha = EVP_MD_CTX_new();
	return s->sha && EVP_DigestInit_ex(s->sha, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

void wc_stream_take(struct wc_stream *s, const unsigned char *buf, size_t n)
{
	if (s->bytes < WC_STREAM_HEAD) {
		size_t room = WC_STREAM_HEAD - (size_t)s->bytes;

		memcpy(s->head + s->bytes, buf, n < room ? n : room);
	}
	s->bytes += n;
	(void)EVP_DigestUpdate(s->sha, buf, n);
}

json_t *wc_stream_json(struct wc_stream *s, json_t *o)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1] = "";

	if (!o)
		return NULL;
	if (s->sha)
		(void)EVP_DigestFinal_ex(s->sha, md, &mdlen);
	for (unsigned int i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	json_object_set_new(o, "bytes", json_integer((json_int_t)s->bytes));
	json_object_set_new(o, "sha256", json_string(hex));
	if (s->bytes <= WC_STREAM_HEAD) {
		char *dump = malloc(2 * (size_t)s->bytes + 1);

		if (dump) {
			for (uint64_t i = 0; i < s->bytes; i++)
				snprintf(dump + 2 * i, 3, "%02x", s->head[i]);
			dump[2 * s->bytes] = '\0';
			json_object_set_new(o, "hex", json_string(dump));
			free(dump);
		}
	}
	return o;
}

void wc_stream_free(struct wc_stream *s)
{
	EVP_MD_CTX_free(s->sha);
	memset(s, 0, sizeof(*s));
}
