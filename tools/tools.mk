# Build fragment for tools/tools: add sources, programs and tests with +=.
bin_PROGRAMS += tools/nth-trace
tools_nth_trace_SOURCES = tools/nth-trace.c
tools_nth_trace_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
tools_nth_trace_LDADD = libnth_trace_fmt.la $(ZLIB_LIBS)
