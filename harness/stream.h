/*
 * stream.h: a byte stream as the trace records it (docs/cli.md, "The
 * trace"): its length, its sha256, and its first bytes, dumped as hex when
 * the whole stream fits. What the peer received on a connection and what a
 * peer program wrote on its stdout are both recorded this way.
 */
#ifndef WIRECHECK_STREAM_H
#define WIRECHECK_STREAM_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

#define WC_STREAM_HEAD 4096 /* streams up to this size get a hex dump */

struct wc_stream {
	uint64_t bytes;       /* taken so far */
	EVP_MD_CTX *sha;      /* NULL before wc_stream_init */
	unsigned char head[WC_STREAM_HEAD]; /* the first bytes */
};

/* Starts the digest. Returns 0, or -1 (no memory, or no sha256). */
int wc_stream_init(struct wc_stream *s);

/* Takes the next n bytes of the stream. */
void wc_stream_take(struct wc_stream *s, const unsigned char *buf, size_t n);

/* Sets "bytes", "sha256" (empty before wc_stream_init) and, when the whole
 * stream is in head, "hex" on the object o. Ends the digest: take no more
 * bytes after it. Returns o. */
json_t *wc_stream_json(struct wc_stream *s, json_t *o);

/* Frees the digest; the stream is then as zeroed. */
void wc_stream_free(struct wc_stream *s);

#endif
