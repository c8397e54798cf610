/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Formats an error message into a caller's (err, errlen) buffer, if any. */
#ifndef CCLD_ERRBUF_H
#define CCLD_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline __attribute__((format(printf, 3, 4)))
void put_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

#endif
