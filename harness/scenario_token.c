/*
 * scenario_token.c: a scenario line cut into tokens (words, key=value,
 * quoted strings with their escapes), the token helpers the parser's files
 * share, and its error message, "WHERE:LINE: PROBLEM" (scenario_int.h).
 */
#include "scenario.h"
#include "scenario_int.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sc__fail(struct parser *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "%s:%d: %s", p->where, p->line, msg);
	return -1;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Unescapes a string token in place, from s (after the opening quote) to
 * the closing quote. Returns the end (after the quote) or NULL. */
static char *read_string(struct parser *p, char *s, struct token *t)
{
	char *out = s;

	t->text = s;
	t->quoted = 1;
	while (*s && *s != '"') {
		if (*s != '\\') {
			*out++ = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case 'n': *out++ = '\n'; s++; break;
		case 'r': *out++ = '\r'; s++; break;
		case 't': *out++ = '\t'; s++; break;
		case '0': *out++ = '\0'; s++; break;
		case '\\': *out++ = '\\'; s++; break;
		case '"': *out++ = '"'; s++; break;
		case '\0':
			sc__fail(p, "unterminated string (a '\\' at the end of the line)");
			return NULL;
		case 'x': {
			int hi = s[1] ? hexval(s[1]) : -1;
			int lo = hi >= 0 && s[2] ? hexval(s[2]) : -1;

			if (lo < 0) {
				sc__fail(p, "bad escape '\\x%.2s': expected two hex digits", s + 1);
				return NULL;
			}
			*out++ = (char)(hi * 16 + lo);
			s += 3;
			break;
		}
		default:
			sc__fail(p, "unknown escape '\\%c' in a string", *s ? *s : '?');
			return NULL;
		}
	}
	if (*s != '"') {
		sc__fail(p, "unterminated string");
		return NULL;
	}
	t->len = (size_t)(out - t->text);
	*out = '\0';
	return s + 1;
}

/* Splits a line (modified in place) into tokens. */
int sc__tokenize(struct parser *p, char *s)
{
	p->ntok = 0;
	for (;;) {
		struct token *t;

		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s || *s == '#')
			return 0;
		if (p->ntok == SC_MAX_TOKENS)
			return sc__fail(p, "too many words on one line (at most %d)", SC_MAX_TOKENS);
		t = &p->tok[p->ntok++];
		memset(t, 0, sizeof(*t));
		if (*s == '"') {
			s = read_string(p, s + 1, t);
			if (!s)
				return -1;
			if (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '#')
				return sc__fail(p, "expected a space after a string");
			continue;
		}
		t->text = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '#')
			s++;
		t->len = (size_t)(s - t->text);
		if (*s == '#') {
			*s = '\0';
			return 0;
		}
		if (*s)
			*s++ = '\0';
	}
}

int sc__is_word(const struct token *t, const char *w)
{
	return !t->quoted && strcmp(t->text, w) == 0;
}

/* Splits "key=value"; returns the value or NULL when t is not key=. */
const char *sc__key_value(const struct token *t, const char *key)
{
	size_t n = strlen(key);

	if (t->quoted || strncmp(t->text, key, n) != 0 || t->text[n] != '=')
		return NULL;
	return t->text + n + 1;
}

unsigned char *sc__dup_bytes(const struct token *t)
{
	unsigned char *d = malloc(t->len ? t->len : 1);

	if (d)
		memcpy(d, t->text, t->len);
	return d;
}
