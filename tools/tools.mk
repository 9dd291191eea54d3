# Build fragment for tools/tools: add sources, programs and tests with +=.
bin_PROGRAMS += tools/nth-trace
tools_nth_trace_SOURCES = tools/nth-trace.c tools/input_kind.c tools/input_kind.h \
	tools/default_out.c tools/default_out.h
tools_nth_trace_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS)
tools_nth_trace_LDADD = libnth_trace_fmt.la $(ZLIB_LIBS)
dist_man_MANS += doc/nth-trace.1
