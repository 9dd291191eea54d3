# Build fragment for nthlib/trace: recording (libnth_trace_rec) and the
# readers/writers shared with the nth-trace tool (libnth_trace_fmt). Both are
# convenience libraries linked into libnth; tests and tools link them directly
# because libnth exports only its public API.
nthinclude_HEADERS += include/nth/trace.h
noinst_LTLIBRARIES += libnth_trace_fmt.la libnth_trace_rec.la
libnth_trace_fmt_la_SOURCES = nthlib/trace_format.h nthlib/trace_convert.h nthlib/trace_convert.c \
	nthlib/trace_read.c nthlib/trace_replay.c nthlib/trace_out.h nthlib/trace_out.c \
	nthlib/trace_json.c nthlib/trace_prv.c nthlib/trace_stats.c \
	nthlib/trace_text.h nthlib/trace_text.c
libnth_trace_fmt_la_CFLAGS = $(AM_CFLAGS) $(ZLIB_CFLAGS) -fvisibility=hidden
libnth_trace_fmt_la_LIBADD = $(ZLIB_LIBS)
libnth_trace_rec_la_SOURCES = nthlib/trace_hooks.h nthlib/trace_rt.h nthlib/trace_record.c \
	nthlib/trace_writer.c nthlib/trace_claim.c nthlib/trace_exit.c nthlib/trace_tool.h nthlib/trace_clock.h nthlib/trace_clock.c
libnth_trace_rec_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
# Where the nth-trace converter is (nthlib/trace_tool.h): this build's, else
# the installed one. For the fatal-signal path (trace_exit.c) and for nthrun
# (pthread-shim/shim.mk).
NTH_TOOL_CPPFLAGS = -DNTH_TOOL_BUILD_PATH='"$(abs_top_builddir)/tools/nth-trace"' \
	-DNTH_TOOL_INSTALL_PATH='"$(bindir)/nth-trace"'
libnth_trace_rec_la_CPPFLAGS = $(AM_CPPFLAGS) $(NTH_TOOL_CPPFLAGS)
# libc's own functions for the runtime's kernel threads (the core's VPs and
# spares use them too, through libnth, which includes this library).
libnth_trace_rec_la_SOURCES += nthlib/libc_real.h nthlib/libc_real.c
libnth_trace_rec_la_LIBADD = libnth_trace_fmt.la
libnth_la_LIBADD += libnth_trace_rec.la

# libnth-probes.so: -finstrument-functions probes on top of libnth.
lib_LTLIBRARIES += libnth-probes.la
libnth_probes_la_SOURCES = nthlib/trace_probes.c
libnth_probes_la_CFLAGS = $(AM_CFLAGS) $(LIBDW_CFLAGS)
libnth_probes_la_LIBADD = libnth.la $(LIBDW_LIBS) -ldl
libnth_probes_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0

# libnth-malloc.so (preloaded, NTH_TRACE_MALLOC=1): malloc counter tracks.
lib_LTLIBRARIES += libnth-malloc.la
libnth_malloc_la_SOURCES = nthlib/trace_malloc.c
libnth_malloc_la_LIBADD = libnth.la
libnth_malloc_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0

# The runtime's call sites (trace_core.h): in libnth itself, since they read
# the core's descriptors.
libnth_la_SOURCES += nthlib/trace_core.h nthlib/trace_runtime.c
