/*
 * trace_text.c -- UTF-8 checking and escaping of names for the JSON and
 * Paraver writers (see trace_text.h for why names need it).
 */
#include "trace_text.h"

#include <stdio.h>

size_t nth_tr_utf8_len(const unsigned char *s, size_t n)
{
    if (!n)
        return 0;
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;   /* range of the second byte */
    if (c >= 0xc2 && c <= 0xdf) len = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0;          /* overlong */
        if (c == 0xed) hi = 0x9f;          /* surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90;          /* overlong */
        if (c == 0xf4) hi = 0x8f;          /* beyond U+10FFFF */
    } else
        return 0;                          /* 0x80-0xc1, 0xf5-0xff */
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

char *nth_tr_json_escape(char *dst, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t end = 0;
    while (end < n && u[end]) end++;
    char *p = dst;
    for (size_t i = 0; i < end;) {
        unsigned char c = u[i];
        if (c == '"' || c == '\\') { *p++ = '\\'; *p++ = (char)c; i++; continue; }
        if (c < 0x20 || c == 0x7f) { p += sprintf(p, "\\u%04x", c); i++; continue; }
        size_t k = nth_tr_utf8_len(u + i, end - i);
        if (!k) { p += sprintf(p, "\\u%04x", c); i++; continue; }
        for (size_t q = 0; q < k; q++) *p++ = (char)u[i + q];
        i += k;
    }
    *p = 0;
    return p;
}

const char *nth_tr_text_line(const char *s, char *buf, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t end = 0;
    while (u[end]) end++;
    size_t o = 0;
    for (size_t i = 0; i < end;) {
        size_t k = nth_tr_utf8_len(u + i, end - i);
        if (o + (k ? k : 1) >= len)
            break;
        if (!k) { buf[o++] = '?'; i++; continue; }
        if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f)) { buf[o++] = ' '; i++; continue; }
        for (size_t q = 0; q < k; q++) buf[o++] = (char)u[i + q];
        i += k;
    }
    buf[o] = 0;
    return buf;
}
