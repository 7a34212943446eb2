/*
 * say.c: a parser's error message (say.h).
 */
#include "say.h"

#include <stdarg.h>
#include <stdio.h>

int wc_say(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}
