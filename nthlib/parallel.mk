# Build fragment for nthlib/parallel: parallel regions (teams of
# nano-threads, the team barrier, loop schedules).
libnth_la_SOURCES += nthlib/parallel.c
