/*
 * ws_frame.h: the WebSocket frame codec (RFC 6455, section 5); the opening
 * handshake is ws_handshake.h.
 *
 * Protocol code with no I/O, as wslay's frame layer: bytes in, events out;
 * a frame description in, bytes out into the caller's buffer, however short.
 * No process-wide state (no config, no statistics, no global list), so a
 * fuzzer can start each input from a fresh parser. The mask keys come from a
 * generator the caller seeds, so that a client's frames are the same in every
 * run. The only allocation is the parser's message buffer, which it owns.
 */
#ifndef WIRECHECK_WS_FRAME_H
#define WIRECHECK_WS_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "utf8.h"

enum rs_ws_opcode {
	RS_WS_OP_CONT = 0x0,
	RS_WS_OP_TEXT = 0x1,
	RS_WS_OP_BINARY = 0x2,
	RS_WS_OP_CLOSE = 0x8,
	RS_WS_OP_PING = 0x9,
	RS_WS_OP_PONG = 0xa,
};

/* Close codes (RFC 6455, 7.4.1) this stack sends or reports. */
#define RS_WS_CLOSE_NORMAL 1000
#define RS_WS_CLOSE_GOING_AWAY 1001
#define RS_WS_CLOSE_PROTOCOL 1002      /* a protocol error */
#define RS_WS_CLOSE_NO_STATUS 1005     /* a close frame without a code */
#define RS_WS_CLOSE_ABNORMAL 1006      /* closed without a close frame */
#define RS_WS_CLOSE_INVALID_DATA 1007  /* text that is not UTF-8 */
#define RS_WS_CLOSE_TOO_BIG 1009       /* a message over the maximum */
#define RS_WS_CLOSE_INTERNAL 1011      /* out of memory */

#define RS_WS_MAX_HEADER 14   /* 2 + 8 (length) + 4 (mask key) */
#define RS_WS_MAX_CONTROL 125 /* a control frame's payload (5.5) */

/* ------------------------------------------------------------------------ */
/* Mask keys: a seeded generator (xorshift64*), one per socket.             */

struct rs_ws_rng {
	uint64_t state;
};
/* Seeds the generator; the same seed gives the same keys. Any seed works. */
void rs_ws_rng_seed(struct rs_ws_rng *r, uint64_t seed);
/* Fills out with the next n bytes of the generator. */
void rs_ws_rng_bytes(struct rs_ws_rng *r, uint8_t *out, size_t n);

/*
 * XORs n bytes of src with the mask key into dst (dst may be src), as if
 * they were bytes from offset `at` of the payload (the key repeats every 4).
 */
void rs_ws_mask(uint8_t *dst, const uint8_t *src, size_t n,
		const uint8_t key[4], uint64_t at);

/* ------------------------------------------------------------------------ */
/* The encoder.                                                             */

/*
 * Writes the header of one frame to out: FIN, RSV1, the opcode, the length
 * in its shortest form (7 bits up to 125, 16 bits up to 65535, else 64), and
 * the mask key when key is not NULL (the payload must then be masked with
 * it). Returns the header's length, 2 to RS_WS_MAX_HEADER.
 */
size_t rs_ws_header(uint8_t out[RS_WS_MAX_HEADER], int fin, int rsv1,
		    int opcode, uint64_t len, const uint8_t *key);

/*
 * One frame on its way out, with cursors: the header's bytes [hmark,
 * hlimit) and the payload's [pmark, plen) are still to be written. The
 * payload is the caller's and must stay valid and unchanged until the frame
 * is done; it is masked while it is copied out, never in place.
 */
struct rs_ws_encoder {
	uint8_t head[RS_WS_MAX_HEADER];
	uint8_t hmark;
	uint8_t hlimit;
	uint8_t masked;
	uint8_t key[4];
	const uint8_t *payload;
	uint64_t pmark;
	uint64_t plen;
};
/* Starts a frame (see rs_ws_header for the arguments). */
void rs_ws_encoder_begin(struct rs_ws_encoder *e, int fin, int rsv1,
			 int opcode, const void *payload, size_t len,
			 const uint8_t *key);
/*
 * Writes as much of the frame as fits in out[0, cap) and moves the cursors.
 * Returns the number of bytes written: less than cap only when the frame is
 * done (rs_ws_encoder_done), 0 once it was done before the call.
 */
size_t rs_ws_encoder_write(struct rs_ws_encoder *e, uint8_t *out, size_t cap);
/* 1 when every byte of the frame has been written. */
int rs_ws_encoder_done(const struct rs_ws_encoder *e);

/* ------------------------------------------------------------------------ */
/* The frame of one send(data, kind, options).                             */

/* The kind of the caller's data: text (a string) or bytes (a buffer). */
enum rs_ws_kind { RS_WS_KIND_TEXT = 1, RS_WS_KIND_BYTES = 2 };
/* The `binary` option: absent, or given as false or true. */
#define RS_WS_BINARY_ABSENT (-1)

/*
 * The frame type of a message. by_kind 0 (the fixed strategy) is npm ws's
 * rule (websocket.js send(): `binary: typeof data !== 'string'`, then the
 * caller's options over it): the binary option when given, else the kind.
 * by_kind 1 (the legacy) takes the kind and never reads the option.
 * Returns RS_WS_OP_TEXT or RS_WS_OP_BINARY, or -EINVAL for a kind or a
 * binary value out of range (checked on both strategies).
 */
int rs_ws_message_type(int by_kind, int kind, int binary);

/*
 * A sender's fragment state, as npm ws's Sender keeps it (_firstFragment):
 * a send with fin 0 opens a message; until a send with fin 1 ends it, each
 * later frame is a continuation (opcode 0), whatever its own type.
 */
struct rs_ws_fragments {
	int open;  /* 1 between a fin=0 send and the fin=1 send that ends it */
};

/*
 * The bytes that the frame of one send takes at most: its header and its
 * payload (3 * len for legacy text, which may grow by U+FFFD).
 */
size_t rs_ws_send_size(int by_kind, int kind, size_t len, int masked);
/*
 * Encodes the frame of one send into out[0, cap): the type by
 * rs_ws_message_type, opcode 0 inside an open fragmented message (f),
 * FIN from fin, RSV1 from rsv1, masked with key when key is not NULL. The
 * fixed strategy sends the payload as given; the legacy one sends text
 * decoded and encoded again, each ill-formed sequence as U+FFFD
 * (rs_utf8_replace: `ff 68` becomes `ef bf bd 68`).
 * Returns the frame's length; -EINVAL for a bad kind, binary or fin (f
 * unchanged then, nothing written), -ENOSPC when cap is under
 * rs_ws_send_size.
 */
long rs_ws_encode_send(struct rs_ws_fragments *f, int by_kind, int kind,
		       int binary, int fin, int rsv1, const uint8_t *key,
		       const void *data, size_t len, uint8_t *out, size_t cap);

/* ------------------------------------------------------------------------ */
/* The incremental parser: every split of the input gives the same events.  */

struct rs_ws_parser_options {
	int server;            /* 1: frames must be masked; 0: must not be */
	int rsv1_ok;           /* 1: permessage-deflate was agreed (RSV1 on a
				* message's first frame marks it compressed) */
	uint64_t max_message;  /* larger messages close 1009; 0: no limit */
};

enum rs_ws_event_kind {
	RS_WS_EV_NONE,     /* every byte given was used; feed more */
	RS_WS_EV_MESSAGE,  /* a whole data message */
	RS_WS_EV_PING,
	RS_WS_EV_PONG,
	RS_WS_EV_CLOSE,    /* the peer's close frame (its code and reason) */
	RS_WS_EV_ERROR,    /* the input broke the protocol: close with code */
};

struct rs_ws_event {
	enum rs_ws_event_kind kind;
	int opcode;          /* MESSAGE: RS_WS_OP_TEXT or RS_WS_OP_BINARY */
	int compressed;      /* MESSAGE: RSV1 was set on its first frame (the
			      * payload is still deflated; text is not yet
			      * validated then) */
	uint32_t frames;     /* MESSAGE: how many frames it came in */
	const uint8_t *data; /* the payload (MESSAGE, PING, PONG) or the close
			      * reason (CLOSE); valid until the next feed */
	size_t len;
	int code;            /* CLOSE: the peer's code (1005 when none);
			      * ERROR: the code to close with (1002, 1007,
			      * 1009, 1011) */
	const char *problem; /* ERROR: what was wrong (a static string) */
	uint64_t offset;     /* stream offset of the frame that completed the
			      * event (ERROR: of the frame at fault) */
};

struct rs_ws_parser {
	struct rs_ws_parser_options opt;
	int state;
	uint64_t offset;       /* bytes consumed so far */
	uint64_t frame_start;  /* offset of the current frame's first byte */
	/* The frame being read. */
	uint8_t head[RS_WS_MAX_HEADER];
	uint8_t hmark;         /* header bytes read */
	uint8_t hlimit;        /* header bytes needed (2 until byte 2 is in) */
	uint8_t fin, rsv1, opcode, masked;
	uint8_t key[4];
	uint64_t plen;         /* payload length */
	uint64_t pmark;        /* payload bytes read */
	/* The data message being reassembled (opcode 0: none). */
	int msg_opcode;
	int msg_compressed;
	uint32_t msg_frames;
	uint8_t *msg;
	size_t msg_len;
	size_t msg_cap;
	struct rs_utf8 utf8;
	/* The control frame being read. */
	uint8_t ctl[RS_WS_MAX_CONTROL];
	/* Set by an ERROR or CLOSE event: what every later feed returns. */
	int error_code;
	const char *problem;
};

/* Initialises a parser; it allocates nothing until a data payload. */
void rs_ws_parser_init(struct rs_ws_parser *p,
		       const struct rs_ws_parser_options *opt);
/* Frees the message buffer. The parser may be initialised again. */
void rs_ws_parser_free(struct rs_ws_parser *p);
/*
 * Reads from in[0, n) until an event is complete or the input is used up,
 * and returns the number of bytes it used; *ev says what happened
 * (RS_WS_EV_NONE: nothing yet, give the rest and more). Call again with the
 * rest of the input after an event. After an ERROR, every call returns 0
 * bytes and the same ERROR; after a CLOSE, the parser reads no more (0
 * bytes, RS_WS_EV_NONE): RFC 6455 5.5.1, nothing follows a close frame.
 */
size_t rs_ws_parser_feed(struct rs_ws_parser *p, const uint8_t *in, size_t n,
			 struct rs_ws_event *ev);

/*
 * 1 when code may travel in a close frame (RFC 6455 7.4: 1000-1003,
 * 1007-1014, 3000-4999), else 0.
 */
int rs_ws_close_code_valid(int code);

#endif
