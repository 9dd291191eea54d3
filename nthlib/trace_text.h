/*
 * trace_text.h -- names (nano-threads, registered objects, states, host) made
 * safe for the text formats the converter writes: JSON (RFC 8259 requires
 * UTF-8) and Paraver's line-oriented .pcf/.row. Names come from user code
 * (nth_setname, nth_trace_register_*) or from a damaged .bin, so any byte can
 * be there. Internal to the converter.
 */
#ifndef NTH_TRACE_TEXT_H
#define NTH_TRACE_TEXT_H

#include <stddef.h>

/* Bytes of the well-formed UTF-8 sequence at s[0..n) (1-4), or 0 when it is
 * not one: a stray continuation byte, a cut sequence, an overlong form, a
 * surrogate (U+D800-DFFF) or beyond U+10FFFF (RFC 3629 section 4, the table
 * of well-formed byte sequences; what strict decoders such as python3's
 * accept). Pure; thread-safe. */
size_t nth_tr_utf8_len(const unsigned char *s, size_t n);

/* Write s[0..n) (stopping at a NUL) into dst as the inside of a JSON string
 * (no quotes): '"' and '\\' backslashed, control characters (below 0x20 and
 * DEL) as \u00XX, well-formed UTF-8 copied, and each byte of an ill-formed
 * sequence as \u00XX, its Latin-1 reading. Why \u00XX and not U+FFFD: the
 * usual source of such bytes is Latin-1 text ("\xe9t\xe9"), which then reads
 * right ("été") in a viewer, and no byte is lost, so a damaged name can still
 * be told from another. dst needs 6 * n + 1 bytes; it is NUL-terminated.
 * Returns the end of the written text (at the NUL). Thread-safe. */
char *nth_tr_json_escape(char *dst, const char *s, size_t n);

/* s made into one line of valid UTF-8 for Paraver's .pcf/.row, in buf (size
 * len > 0, truncated at a character boundary): control characters become a
 * space (a newline would start a new record), ill-formed bytes '?'. Returns
 * buf. Thread-safe. */
const char *nth_tr_text_line(const char *s, char *buf, size_t len);

#endif
