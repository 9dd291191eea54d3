/*
 * trace_convert.h -- reading binary trace files and writing them as Chrome
 * JSON (Perfetto), gzipped JSON or Paraver; statistics. Used by libnth at
 * exit and by the `nth-trace` tool. Internal.
 *
 * A binary file is untrusted input (a killed process, a disk that filled up,
 * another version): every length and index is checked; anything that does
 * not fit is skipped and counted as a warning, never a crash.
 */
#ifndef NTH_TRACE_CONVERT_H
#define NTH_TRACE_CONVERT_H

#include <stdio.h>
#include <stdint.h>
#include "trace_format.h"
#include "nth/trace.h"

#define NTH_TR_STACK 16          /* state levels shown per nano-thread */
#define NTH_TR_REGIONS 16        /* nested parallel regions shown */
#define NTH_TR_FUNCS 64          /* nested function probes shown */

struct nth_tr_name {
    uint16_t kind;
    uint64_t key, key2;
    char *name;
    size_t seq;                  /* file order: later registrations win */
};

struct nth_tr_level {
    unsigned state;
    int implicit;                /* READY or SYNCH pushed by a switch-out, popped by the switch-in */
    uint64_t obj, since;
    unsigned kind;               /* enum nth_trace_obj_kind of obj (0: unknown) */
};

/* One nano-thread as the replay sees it. */
struct nth_tr_thread {
    uint64_t id;
    unsigned index;              /* 1-based, in order of first appearance */
    int vp;                      /* last VP it ran on, -1 = none yet */
    uint64_t last;               /* time of its last record replayed */
    uint64_t wobj;               /* NTH_REC_WAIT_OBJ not yet taken by a switch */
    unsigned wkind;
    int depth, extra;            /* state stack depth; pushes beyond NTH_TR_STACK */
    struct nth_tr_level stack[NTH_TR_STACK];
    int rdepth, rextra;
    uint64_t region[NTH_TR_REGIONS], rsince[NTH_TR_REGIONS];
    unsigned rteam[NTH_TR_REGIONS], rmember[NTH_TR_REGIONS];
    int fdepth, fextra;
    uint64_t func[NTH_TR_FUNCS], fsince[NTH_TR_FUNCS];
};

/* One loaded file (one process). */
struct nth_tr_file {
    const char *path;
    struct nth_trace_file_header hdr;
    struct nth_trace_rec *recs;  /* timed records, sorted by ts (stable) */
    size_t nrecs;
    size_t nfile;                /* records in the file after its header (32
                                  * bytes each, a name's text included): the
                                  * "records" of every line that counts them */
    struct nth_tr_name *names;   /* sorted by (kind, key, key2) */
    size_t nnames;
    struct nth_tr_thread *threads;   /* by index - 1 */
    size_t nthreads;
    size_t *hash; size_t hmask;  /* id -> index + 1, open addressing */
    unsigned nvps;               /* highest VP seen + 1 (at least 1) */
    uint64_t first_ts, last_ts;
    uint64_t lost;               /* sum of LOST records */
    unsigned warnings;
};

/* Load and validate a binary trace. Returns 0 (f->warnings counts what was
 * skipped, each explained on `warn` if not NULL); ENOENT and other open(2)
 * errors; EINVAL if it is no nthlib trace (too short, bad magic) or one of
 * another format version or record size, said on `warn` in one line that
 * names the reason (the caller adds nothing); ENOMEM. */
int nth_tr_load(const char *path, struct nth_tr_file *f, FILE *warn);
void nth_tr_free(struct nth_tr_file *f);
const char *nth_tr_name(const struct nth_tr_file *f, uint16_t kind, uint64_t key, uint64_t key2);
struct nth_tr_thread *nth_tr_thread(struct nth_tr_file *f, uint64_t id);
/* Built-in name of a state or NULL. */
const char *nth_tr_state_builtin(unsigned state);
/* "mutex", "condvar", ... for an enum nth_trace_obj_kind; "object" if unknown. */
const char *nth_tr_obj_kind_name(unsigned kind);
/* The label of a synchronisation object: its registered name, else
 * "<kind> 0x<address>"; a join names the joined nano-thread ("join NAME #ID").
 * Written into buf (n bytes), returned. */
const char *nth_tr_obj_label(const struct nth_tr_file *f, unsigned kind, uint64_t obj, char *buf, size_t n);

/* What the replay of a file reports, in timestamp order. Any may be NULL.
 * State slices on one nano-thread never overlap (the stack shows its top);
 * `since` is when the slice that ends began. */
struct nth_tr_sink {
    void *ctx;
    void (*state_begin)(void *, struct nth_tr_file *, uint64_t ts, struct nth_tr_thread *, const struct nth_tr_level *);
    void (*state_end)(void *, struct nth_tr_file *, uint64_t ts, struct nth_tr_thread *, const struct nth_tr_level *);
    void (*run_begin)(void *, struct nth_tr_file *, uint64_t ts, unsigned vp, struct nth_tr_thread *);   /* NULL thread = idle */
    void (*run_end)(void *, struct nth_tr_file *, uint64_t ts, uint64_t since, unsigned vp, struct nth_tr_thread *);
    void (*region_begin)(void *, struct nth_tr_file *, uint64_t ts, struct nth_tr_thread *, uint64_t region, unsigned team,
                         unsigned member);
    void (*region_end)(void *, struct nth_tr_file *, uint64_t ts, uint64_t since, struct nth_tr_thread *, uint64_t region);
    void (*event)(void *, struct nth_tr_file *, uint64_t ts, struct nth_tr_thread *, int vp, uint32_t type, uint64_t value);
    void (*counter)(void *, struct nth_tr_file *, uint64_t ts, uint32_t kind, int vp, uint64_t value);
    void (*lost)(void *, struct nth_tr_file *, uint64_t ts, uint64_t count);
    void (*func_begin)(void *, struct nth_tr_file *, uint64_t ts, struct nth_tr_thread *, uint64_t fn);
    void (*func_end)(void *, struct nth_tr_file *, uint64_t ts, uint64_t since, struct nth_tr_thread *, uint64_t fn);
};

/* Replay f's records through sink; every slice still open at the end is
 * closed at f->last_ts, so every begin has its end. Resets thread state. */
void nth_tr_replay(struct nth_tr_file *f, const struct nth_tr_sink *sink);

/* The same replay one record at a time, so that a writer can interleave
 * several files by time (merge). open: NULL when out of memory. step: one
 * record through the sink, or, once they are all done, the closing of what
 * is open (at f->last_ts); 0 when nothing is left. next_ts: the record the
 * next step replays (f->last_ts for the closing, UINT64_MAX when done).
 * low: no event a later step reports is earlier than this (a switch's
 * OVERHEAD slice begins up to its overhead before the switch record, so
 * it is the next record's time less the file's largest overhead;
 * UINT64_MAX when done). One replay per file at a time. */
struct nth_tr_replay;
struct nth_tr_replay *nth_tr_replay_open(struct nth_tr_file *f, const struct nth_tr_sink *sink);
int nth_tr_replay_step(struct nth_tr_replay *p);
uint64_t nth_tr_replay_next_ts(const struct nth_tr_replay *p);
uint64_t nth_tr_replay_low(const struct nth_tr_replay *p);
void nth_tr_replay_close(struct nth_tr_replay *p);

/* Writers. base_ns is the CLOCK_MONOTONIC time written as 0. Return 0 or an
 * error code (errno of the output file). */
/* JSON: gzip if gz; else plain, moved to out.gz once it passes gz_above
 * bytes (0: never; nth_out_open_auto). The name written goes to wrote
 * (wn bytes; may be NULL). */
int nth_tr_write_json(struct nth_tr_file *files, int n, const char *out, int gz, uint64_t gz_above, char *wrote,
                      size_t wn);
int nth_tr_write_prv(struct nth_tr_file *files, int n, const char *out);
int nth_tr_write_stats(struct nth_tr_file *f, FILE *out);

/* The first word of the converter's warning lines: "nth-trace" for the
 * tool; the runtime sets "nthlib" before it converts at exit, since every
 * line a program under nthlib prints starts with "nthlib:". Set before
 * converting, from one thread. */
extern const char *nth_tr_msg_prefix;

/* Nonzero: a file without the end record is what the caller expects (nthrun
 * converting what its program left after _exit() or SIGKILL says so in its
 * own line), so nth_tr_load neither warns about it nor counts it. Other
 * damage is still warned about. Set before loading, from one thread. */
extern int nth_tr_no_end_ok;

/* Load `n` binary files and write `out` in the format its suffix names
 * (.json, .json.gz, .prv). Returns 0, EINVAL for an unknown suffix or a file
 * that is no trace, or the load/write error; *warnings (may be NULL) gets
 * the number of things skipped while loading; *failed (may be NULL) the
 * file an error is about: the input that could not be loaded, else out
 * (a missing .bin was reported as "cannot write OUT: ENOENT"). */
int nth_trace_convert(const char *const *bins, int n, const char *out, FILE *warn, unsigned *warnings,
                      const char **failed);

/* Plain JSON bigger than this is written gzipped for a name without a
 * suffix, and said to be big for an explicit .json: 256 MiB, the JSON
 * chrome://tracing loads at most, and with Perfetto's 2-4x in-memory
 * expansion well inside the ~2 GB of its in-browser engine (a 900 MB JSON
 * has crashed its UI). NTH_TRACE_JSON_MAX sets another (bytes, K/M/G). */
#define NTH_TRACE_JSON_MAX_DEFAULT (256ull << 20)

/* 1 if out names no format (its last path component has no '.'; not
 * empty, not a directory name ending in '/'): nth_trace_convert_to then
 * writes OUT.json, or OUT.json.gz past the JSON size limit. Pure. */
int nth_trace_name_auto(const char *out);

/* nth_trace_convert, and the name of the file written into wrote (wn bytes,
 * may be NULL): out itself, or for a name without a suffix OUT.json or
 * OUT.json.gz. The size limit is NTH_TRACE_JSON_MAX if set (a bad value
 * is said on `warn` in one line and the default used). An explicit .json
 * past the limit is written, and said on `warn` in one line with its size
 * and the smaller choices. Same errors as nth_trace_convert; one thread. */
int nth_trace_convert_to(const char *const *bins, int n, const char *out, FILE *warn, unsigned *warnings,
                         const char **failed, char *wrote, size_t wn);

#endif
