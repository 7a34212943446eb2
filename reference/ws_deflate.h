/*
 * ws_deflate.h: permessage-deflate (RFC 7692) with zlib, as npm ws 8.18.3
 * negotiates and applies it (lib/permessage-deflate.js, lib/extension.js).
 *
 * Protocol code with no I/O: the negotiation is header text in, parameters
 * and header text out; compression and decompression are bytes in, bytes
 * out (raw deflate, the trailing 00 00 ff ff of a message's last block
 * stripped on the way out and added on the way in). ws.c applies it on
 * the socket. No process-wide state: each direction of each socket has a
 * context of its own, so a fuzzer or a unit test drives one alone.
 */
#ifndef WIRECHECK_WS_DEFLATE_H
#define WIRECHECK_WS_DEFLATE_H

#include <stddef.h>
#include <stdint.h>

#include <zlib.h>

#include "rs.h"

/* npm ws's default threshold: with no context takeover on the sending
 * side, a message under this many bytes goes out uncompressed. */
#define RS_WS_DEFLATE_THRESHOLD 1024

/* ------------------------------------------------------------------------ */
/* Negotiation (RFC 7692, 7.1).                                             */

/* The parameters both sides agreed on. */
struct rs_ws_deflate_params {
	int server_no_context_takeover;  /* 1: the server resets after each
					  * message it compresses */
	int client_no_context_takeover;  /* 1: the same for the client */
	int server_max_window_bits;      /* 0: not given (15); else 8 to 15 */
	int client_max_window_bits;      /* 0: not given (15); else 8 to 15 */
};

/*
 * Whether o's parameters hold npm ws's values (rs.h): the two
 * no_context_takeover ones RS_WS_DEFLATE_FALSE, 0 or RS_WS_DEFLATE_TRUE,
 * the window sizes those or 8 to 15. Returns 0 or -EINVAL.
 */
int rs_ws_deflate_options_check(const struct rs_ws_deflate_options *o);

/*
 * The client's offer, the value of its Sec-WebSocket-Extensions header, as
 * npm ws's offer() writes it: "permessage-deflate" and, in this order,
 * server_no_context_takeover (when TRUE), client_no_context_takeover
 * (when TRUE), server_max_window_bits=N (without a value when TRUE), and
 * client_max_window_bits (=N when set, without a value when not given or
 * TRUE, left out when FALSE). Writes a NUL-terminated string to out.
 * Returns its length, or -ENOSPC when cap is too small, -EINVAL when
 * rs_ws_deflate_options_check refuses o.
 */
int rs_ws_deflate_offer(const struct rs_ws_deflate_options *o, char *out,
			size_t cap);

/*
 * A server's answer to the Sec-WebSocket-Extensions header [hdr, hdr+len)
 * of an Upgrade request, as npm ws's WebSocketServer with
 * perMessageDeflate: every permessage-deflate offer is checked (a header
 * that does not parse, an unknown parameter, a parameter given twice or a
 * bad value refuses the handshake even when an earlier offer was good),
 * then the first offer the options can accept is taken and completed with
 * the options (npm ws's acceptAsServer, FALSE values included: rs.h).
 * Other extensions are ignored.
 * Returns 1 when permessage-deflate is agreed (*agreed set, out holds the
 * answer's header value, NUL-terminated, its parameters in the offer's
 * order and new ones behind them, as npm ws formats them), 0 when the
 * header has no permessage-deflate offer, -EPROTO when it is invalid or
 * no offer can be accepted (npm ws answers 400 then; *problem says why),
 * -ENOSPC when cap is too small.
 */
int rs_ws_deflate_answer(const struct rs_ws_deflate_options *o,
			 const char *hdr, size_t len,
			 struct rs_ws_deflate_params *agreed, char *out,
			 size_t cap, const char **problem);

/*
 * A client's check of the server's Sec-WebSocket-Extensions header (npm
 * ws's acceptAsClient): exactly one extension, permessage-deflate, with
 * valid parameters (client_max_window_bits must have a value, at most the
 * one offered, and is refused when the options say FALSE, as is
 * client_no_context_takeover when they say FALSE). Returns 0 and sets
 * *agreed, or -EPROTO (*problem says why; the client fails the
 * handshake).
 */
int rs_ws_deflate_accept(const struct rs_ws_deflate_options *o,
			 const char *hdr, size_t len,
			 struct rs_ws_deflate_params *agreed,
			 const char **problem);

/*
 * npm ws's compress decision for the first frame of a message of len
 * bytes (lib/sender.js, send()): the caller did not say no_compress, and
 * either the sending side keeps its context (every message is compressed,
 * even an empty one) or the message has at least threshold bytes
 * (0: RS_WS_DEFLATE_THRESHOLD). Later frames of the message follow the
 * first. Returns 1 to compress, else 0.
 */
int rs_ws_deflate_wanted(const struct rs_ws_deflate_params *p, int server,
			 size_t threshold, int no_compress, size_t len);

/* ------------------------------------------------------------------------ */
/* Compression: one context per direction.                                 */

/*
 * The sending side's context. zlib's settings are npm ws's (node's zlib
 * defaults): level 6 (Z_DEFAULT_COMPRESSION), memLevel 8, the default
 * strategy, the window the peer allowed (8 becomes 9, as node does: zlib's
 * raw deflate has no 256-byte window). Zero-initialised by
 * rs_ws_deflater_init; zlib's state is allocated at the first message.
 */
struct rs_ws_deflater {
	z_stream z;
	int ready;        /* deflateInit2 done */
	int window_bits;
	int reset;        /* no context takeover: reset after each message */
	uint8_t *buf;     /* the last output; owned */
	size_t cap;
};

/* Sets up d for a window of window_bits (0: 15) and the takeover rule. */
void rs_ws_deflater_init(struct rs_ws_deflater *d, int window_bits,
			 int no_context_takeover);
/* Frees zlib's state and the output buffer. d may be set up again. */
void rs_ws_deflater_free(struct rs_ws_deflater *d);
/*
 * Compresses one frame's payload [in, in+n) (n may be 0, in NULL then) as
 * node's deflate stream does for npm ws: the bytes with Z_NO_FLUSH, then a
 * Z_SYNC_FLUSH. fin 1 (the message's last frame) strips the 00 00 ff ff
 * that ends the flush and, without context takeover, resets the context.
 * Sets *out to the compressed bytes (owned by d, valid until the next
 * call) and returns their length; -ENOMEM, or -EIO when zlib fails.
 */
long rs_ws_deflate(struct rs_ws_deflater *d, const void *in, size_t n,
		   int fin, const uint8_t **out);

/*
 * The receiving side's context: the compressed bytes of a message are fed
 * in any pieces (every split gives the same message), then
 * rs_ws_inflate_end adds the 00 00 ff ff and gives the message.
 */
struct rs_ws_inflater {
	z_stream z;
	int ready;
	int window_bits;
	int reset;        /* no context takeover */
	int ended;        /* the data held a final block (BFINAL): the rest of
			   * the message is ignored, the context restarts */
	int failed;
	uint64_t max;     /* the largest message; 0: no limit */
	uint8_t *buf;     /* the message so far; owned */
	size_t len;
	size_t cap;
};

/* Sets up f for the peer's window of window_bits (0: 15), the takeover
 * rule and a largest message of max bytes (0: no limit). It inflates with
 * a 32 KiB window whatever window_bits says: a larger window than the
 * peer's is allowed (RFC 7692 7.1.2), and zlib's check of a smaller one
 * depends on how the output is buffered, which would make the result
 * depend on where the input splits. */
void rs_ws_inflater_init(struct rs_ws_inflater *f, int window_bits,
			 int no_context_takeover, uint64_t max);
void rs_ws_inflater_free(struct rs_ws_inflater *f);
/*
 * Decompresses [in, in+n), appending to the message. Returns 0;
 * -EMSGSIZE when the message grows past max (close 1009, as npm ws);
 * -EBADMSG when the data is not valid deflate (close 1007, as npm ws's
 * inflateOnError); -ENOMEM. After an error every call fails the same way.
 */
int rs_ws_inflate(struct rs_ws_inflater *f, const void *in, size_t n);
/*
 * Ends the message: feeds the 00 00 ff ff, sets *out and *len to the
 * message (owned by f, valid until the next rs_ws_inflate), and gets f
 * ready for the next message (a reset without context takeover). Returns
 * 0 or the errors of rs_ws_inflate.
 */
int rs_ws_inflate_end(struct rs_ws_inflater *f, const uint8_t **out,
		      size_t *len);

#endif
