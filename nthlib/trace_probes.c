/*
 * trace_probes.c -- libnth-probes.so: function-level probes for programs
 * compiled with -finstrument-functions (C, C++, Fortran), linked with this
 * library or preloaded. Each entry and exit becomes a nested slice on the
 * running nano-thread's "functions" track.
 *
 * Names are resolved once per function and kernel thread, the first time the
 * function is entered, and travel in the trace as NAME records (so a trace
 * converted after a kill still has them): dladdr() for exported symbols,
 * then the ELF symbol table and DWARF through elfutils libdw for static
 * functions and "file:line" in -g builds.
 *
 * NTH_PROBES_EXCLUDE  comma-separated fnmatch(3) patterns of function names
 *                     not to record (e.g. "small_*,*_helper"), matched
 *                     against the name shown in the trace (without its
 *                     "(file:line)"), the procedure name alone for a
 *                     Fortran module procedure, and the linker symbol.
 * NTH_PROBES_MIN_NS   calls shorter than this many ns are not recorded
 *                     (their entry is kept back until it is known to matter).
 *
 * Without the runtime, the library starts tracing itself from NTH_TRACE
 * (nth_trace_start_standalone). Everything here is no_instrument_function
 * and guarded against re-entry (name lookup calls malloc, libdw, ...).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <dlfcn.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_LIBDW
#include <elfutils/libdwfl.h>
#endif
#include "nth/trace.h"
#include "env_msg.h"

#define NOI __attribute__((no_instrument_function))
#define CACHE 4096               /* functions remembered per kernel thread */
#define DEPTH 256                /* nesting followed per kernel thread */

struct frame { const void *fn; uint64_t t; int emitted, excluded; };
struct cache_ent { const void *fn; int excluded; };

static __thread struct {
    int busy;
    int depth;
    struct frame stack[DEPTH];
    struct cache_ent cache[CACHE];
} tl;

static char **exclude;
static uint64_t min_ns;
static int resolve_lock;

#ifdef HAVE_LIBDW
static Dwfl *dwfl;
static const Dwfl_Callbacks dwfl_cb = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};
#endif

/* The name a user knows a function by. gfortran writes a procedure P of
 * module M as the symbol "__M_MOD_P" (module and procedure names are lower
 * case in symbols, so "_MOD_" cannot be part of either); it is shown as
 * "M::P", as gdb shows it. Any other symbol is shown as it is. *proc points
 * at the procedure name alone ("P"; the whole name for other symbols). */
static NOI void display_name(const char *sym, char *buf, size_t len, const char **proc)
{
    const char *mod = strncmp(sym, "__", 2) ? NULL : strstr(sym + 2, "_MOD_");
    if (mod && mod > sym + 2 && mod[5]) {
        int n = snprintf(buf, len, "%.*s::%s", (int)(mod - sym - 2), sym + 2, mod + 5);
        size_t at = (size_t)(mod - sym - 2) + 2;   /* where P starts in buf */
        *proc = n > 0 && at < strlen(buf) ? buf + at : buf;
    } else {
        snprintf(buf, len, "%s", sym);
        *proc = buf;
    }
}

/* Name of fn into buf; returns 1 if excluded by NTH_PROBES_EXCLUDE. */
static NOI int resolve(const void *fn, char *buf, size_t len)
{
    const char *sym = NULL, *file = NULL;
    int line = 0;
    Dl_info di;
    if (dladdr(fn, &di) && di.dli_sname && di.dli_saddr == fn)
        sym = di.dli_sname;
    while (__atomic_exchange_n(&resolve_lock, 1, __ATOMIC_ACQUIRE))
        ;   /* libdw is not thread-safe; held only on a function's first call */
#ifdef HAVE_LIBDW
    if (!dwfl) {
        dwfl = dwfl_begin(&dwfl_cb);
        if (dwfl) {
            dwfl_report_begin(dwfl);
            dwfl_linux_proc_report(dwfl, getpid());
            dwfl_report_end(dwfl, NULL, NULL);
        }
    }
    if (dwfl) {
        Dwfl_Module *m = dwfl_addrmodule(dwfl, (Dwarf_Addr)(uintptr_t)fn);
        if (m) {
            if (!sym)
                sym = dwfl_module_addrname(m, (Dwarf_Addr)(uintptr_t)fn);
            Dwfl_Line *l = dwfl_module_getsrc(m, (Dwarf_Addr)(uintptr_t)fn);
            if (l)
                file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
        }
    }
#endif
    char shown[256];
    const char *proc = shown;
    int ex = 0;
    if (sym) {
        display_name(sym, shown, sizeof shown, &proc);
        /* What the user sees is what a pattern names; the symbol too, so
         * that patterns written for it keep working. */
        for (char **p = exclude; p && *p && !ex; p++)
            ex = fnmatch(*p, shown, 0) == 0 || fnmatch(*p, proc, 0) == 0 || fnmatch(*p, sym, 0) == 0;
    }
    if (sym && file) {
        const char *base = strrchr(file, '/');
        snprintf(buf, len, "%s (%s:%d)", shown, base ? base + 1 : file, line);
    } else if (sym) {
        snprintf(buf, len, "%s", shown);
    } else {
        snprintf(buf, len, "%p", fn);
    }
    __atomic_store_n(&resolve_lock, 0, __ATOMIC_RELEASE);
    return ex;
}

static NOI int excluded(const void *fn)
{
    size_t h = ((uintptr_t)fn >> 4) * 0x9e3779b97f4a7c15ull >> 52;   /* 12 bits = CACHE */
    for (size_t i = 0; i < 8; i++) {
        struct cache_ent *e = &tl.cache[(h + i) & (CACHE - 1)];
        if (e->fn == fn)
            return e->excluded;
        if (!e->fn) {
            char name[256];
            e->excluded = resolve(fn, name, sizeof name);
            e->fn = fn;
            if (!e->excluded)
                nth_trace_register_function(fn, name);
            return e->excluded;
        }
    }
    /* Cache neighbourhood full: name it again (a duplicate NAME is harmless). */
    char name[256];
    int ex = resolve(fn, name, sizeof name);
    if (!ex)
        nth_trace_register_function(fn, name);
    return ex;
}

/* Record the entries kept back so far, outermost first. */
static NOI void emit_pending(void)
{
    for (int i = 0; i < tl.depth && i < DEPTH; i++)
        if (!tl.stack[i].emitted && !tl.stack[i].excluded) {
            nth_trace_function_enter(tl.stack[i].fn, tl.stack[i].t);
            tl.stack[i].emitted = 1;
        }
}

NOI void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    if (!nth_trace_enabled() || tl.busy)
        return;
    tl.busy = 1;
    int d = tl.depth++;
    if (d < DEPTH) {
        struct frame *f = &tl.stack[d];
        f->fn = fn;
        f->excluded = excluded(fn);
        f->emitted = 0;
        f->t = nth_trace_clock_ns();
        if (!f->excluded && !min_ns) {
            nth_trace_function_enter(fn, f->t);
            f->emitted = 1;
        }
    }
    tl.busy = 0;
}

NOI void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    if (tl.busy || tl.depth == 0)
        return;
    tl.busy = 1;
    int d = --tl.depth;
    if (d < DEPTH && nth_trace_enabled()) {
        struct frame *f = &tl.stack[d];
        uint64_t now = nth_trace_clock_ns();
        if (f->fn == fn && !f->excluded) {
            if (!f->emitted && now - f->t >= min_ns) {
                tl.depth++;          /* this frame's ancestors, then itself */
                emit_pending();
                tl.depth--;
            }
            if (f->emitted)
                nth_trace_function_exit(fn, now);
        }
    }
    tl.busy = 0;
}

static NOI void probes_init(void) __attribute__((constructor));
static NOI void probes_init(void)
{
    const char *ex = getenv("NTH_PROBES_EXCLUDE");
    const char *mn = getenv("NTH_PROBES_MIN_NS");
    if (mn) {
        char *end;
        unsigned long long v = strtoull(mn, &end, 10);
        if (end == mn || *end || *mn == '-') {
            nth_env_bad("NTH_PROBES_MIN_NS", mn, "nanoseconds, an integer >= 0");
            /* Said once per process tree, as NTH_TRACE_MALLOC: the
             * default (0) is what the children get too (nthrun runs with
             * the preload, then execs the program: the line came twice).
             * A constructor runs before main, no thread races setenv(). */
            (void)setenv("NTH_PROBES_MIN_NS", "0", 1);
        } else
            min_ns = v;
    }
    if (ex && *ex) {
        size_t n = 2;
        for (const char *c = ex; *c; c++) n += *c == ',';
        char *copy = strdup(ex);
        exclude = calloc(n, sizeof *exclude);
        if (copy && exclude) {
            size_t k = 0;
            for (char *s = strtok(copy, ","); s && k < n - 1; s = strtok(NULL, ","))
                exclude[k++] = s;
        }
    }
    if (!nth_trace_enabled())
        nth_trace_start_standalone();
}
