/*
 * runtime.c -- the shim's shared machinery: libc's own functions, the
 * per-thread record behind pthread_t, time helpers, and start-up
 * (clearing __libc_single_threaded, remembering the process's CPU mask).
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shim.h"

/* libc's functions, looked up in libc itself: RTLD_NEXT would depend on
 * the order of the objects, and RTLD_DEFAULT would find the shim. */
static void *shim_real(const char *name)
{
    static void *libc;
    void *h = __atomic_load_n(&libc, __ATOMIC_ACQUIRE);
    if (!h) {
        h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            h = RTLD_NEXT;
        __atomic_store_n(&libc, h, __ATOMIC_RELEASE);
    }
    void *f = dlsym(h, name);
    if (!f) {
        static const char msg[] = "nthlib: pthread shim: a libc function is missing: ";
        (void)!write(2, msg, sizeof msg - 1);
        (void)!write(2, name, strlen(name));
        (void)!write(2, "\n", 1);
        abort();
    }
    return f;
}

/* The call sites REAL recorded (shim.h), bounds given by the linker. */
extern struct shim_real_site __start_shim_real_sites[], __stop_shim_real_sites[];

void shim_real_resolve_all(void)
{
    static int state;            /* 0 not yet, 1 being resolved, 2 done */
    int s = 0;
    if (__atomic_compare_exchange_n(&state, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        for (struct shim_real_site *p = __start_shim_real_sites; p < __stop_shim_real_sites; p++)
            if (!__atomic_load_n(p->slot, __ATOMIC_ACQUIRE))
                __atomic_store_n(p->slot, shim_real(p->name), __ATOMIC_RELEASE);
        __atomic_store_n(&state, 2, __ATOMIC_RELEASE);
        return;
    }
    /* Only before the constructor, on another kernel thread: no
     * nano-thread to yield to yet. */
    while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2)
        (void)syscall(SYS_sched_yield);
}

void shim_note_refused(const char *fn)
{
    static int said;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        return;
    static const char a[] = "nthlib: pthread shim: ";
    static const char b[] = " refused (ENOTSUP): the shim has no process-shared or robust "
                            "mutexes, condvars, rwlocks or barriers (README \"Limits\"); "
                            "run this program without the shim\n";
    (void)!write(2, a, sizeof a - 1);
    (void)!write(2, fn, strlen(fn));
    (void)!write(2, b, sizeof b - 1);
}

cpu_set_t shim_process_cpus;

/* The runtime's code (libnth): its own calls to functions the shim also
 * exports (sched_yield, poll, write) must reach libc, not nano-thread
 * versions that would re-enter the scheduler from inside it. */
static uintptr_t runtime_lo, runtime_hi;

struct code_range {
    uintptr_t target, lo, hi;
};

static int find_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct code_range *r = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (r->target >= lo && r->target < hi) {
            r->lo = lo;
            r->hi = hi;
            return 1;
        }
    }
    return 0;
}

void shim_code_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
    struct code_range r = { (uintptr_t)addr, 0, 0 };
    dl_iterate_phdr(find_range, &r);
    *lo = r.lo;
    __atomic_store_n(hi, r.hi, __ATOMIC_RELEASE);
}

static void shim_start(void);

int shim_runtime_caller(const void *ra)
{
    /* Other libraries' constructors may call the shim before its own. */
    if (__builtin_expect(!__atomic_load_n(&runtime_hi, __ATOMIC_ACQUIRE), 0))
        shim_start();
    return (uintptr_t)ra - runtime_lo < runtime_hi - runtime_lo;
}

/* Before main: remember the CPUs the process may use (the VPs are bound to
 * one CPU each later, so sched_getaffinity then tells only a VP's). */
static void shim_start(void)
{
    static int done;
    if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
        return;
    shim_real_resolve_all();
    /* The system call: the shim's sched_getaffinity answers from this. */
    if (syscall(SYS_sched_getaffinity, 0, sizeof shim_process_cpus, &shim_process_cpus) <= 0)
        CPU_ZERO(&shim_process_cpus);
    shim_code_range((const void *)(uintptr_t)&nth_yield, &runtime_lo, &runtime_hi);
    shim_cpumask_init();
}

/* The per-thread TLS only from the constructor, never from the lazy
 * shim_start above: that one may run inside the runtime's start-up (its
 * first read()), which is no time to change how switches work. */
__attribute__((constructor)) static void shim_constructor(void)
{
    shim_start();
    shim_tls_init();
}

/* ---- the per-thread record ---------------------------------------------- */

static nth_key_t self_key;
static int self_key_state;       /* 0 none, 1 being made, 2 ready */

static void make_key(void)
{
    int s = 0;
    if (__atomic_compare_exchange_n(&self_key_state, &s, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        /* From the reserve: the program keeps all PTHREAD_KEYS_MAX keys. */
        if (nth_key_create_reserved(&self_key, NULL) != 0) {
            static const char msg[] = "nthlib: pthread shim: cannot create the thread key\n";
            (void)!write(2, msg, sizeof msg - 1);
            abort();
        }
        __atomic_store_n(&self_key_state, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&self_key_state, __ATOMIC_ACQUIRE) != 2)
        nth_yield();
}

void shim_set_self(struct shim_thread *st)
{
    if (__atomic_load_n(&self_key_state, __ATOMIC_ACQUIRE) != 2)
        make_key();
    nth_setspecific(self_key, st);
}

struct shim_thread *shim_self_peek(void)
{
    if (__atomic_load_n(&self_key_state, __ATOMIC_ACQUIRE) != 2)
        return NULL;
    return nth_getspecific(self_key);
}

/* Records made inside signal handlers (shim_self_in_handler): there no
 * allocation, no key (nth_setspecific allocates), no runtime start-up. A
 * record is claimed from this pool for its owner -- a nano-thread (its
 * descriptor and id) or a kernel thread that runs none (its id: main
 * before the runtime starts) -- and adopted by the owner's first
 * shim_self outside a handler, which then keys it as usual. */
#define SPARE_RECORDS 8
static struct spare {
    int state;                   /* 0 free, 1 being filled, 2 ready (atomic) */
    void *nt;                    /* the owning nano-thread, or NULL */
    uint64_t nid;                /* its id (a reused descriptor differs) */
    pid_t tid;                   /* the owning kernel thread when nt is NULL */
    struct shim_thread rec;
} spares[SPARE_RECORDS];

static void record_init(struct shim_thread *st, nth_t nt)
{
    st->nt = nt;
    st->nid = nt ? nth_id(nt) : 0;
    st->cancel_state = PTHREAD_CANCEL_ENABLE;
    st->cancel_type = PTHREAD_CANCEL_DEFERRED;
    st->sched_policy = SCHED_OTHER;
    nth_sem_init(&st->done_sem, 0);
    shim_sig_init(st, NULL);
}

static struct spare *spare_find(void *nt, uint64_t nid, pid_t tid)
{
    for (int i = 0; i < SPARE_RECORDS; i++) {
        struct spare *sp = &spares[i];
        if (__atomic_load_n(&sp->state, __ATOMIC_ACQUIRE) != 2)
            continue;
        if (nt ? sp->nt == nt && sp->nid == nid : !sp->nt && sp->tid == tid)
            return sp;
    }
    return NULL;
}

struct shim_thread *shim_self_in_handler_peek(void)
{
    if (nth_vp_id() < 0 && !nth_on_standin())
        return NULL;             /* nth_self() could start the runtime */
    return shim_self_peek();
}

struct shim_thread *shim_self_in_handler(void)
{
    /* nth_self() (and the key lookup under it) starts the runtime when it
     * has not started: only on a kernel thread that runs a nano-thread. */
    int nano = nth_vp_id() >= 0 || nth_on_standin();
    nth_t nt = nano ? nth_self() : NULL;
    if (nt) {
        struct shim_thread *st = shim_self_peek();
        if (st)
            return st;
    }
    uint64_t nid = nt ? nth_id(nt) : 0;
    pid_t tid = nt ? 0 : (pid_t)syscall(SYS_gettid);
    struct spare *sp = spare_find(nt, nid, tid);
    if (sp)
        return &sp->rec;
    for (int i = 0; i < SPARE_RECORDS; i++) {
        int z = 0;
        sp = &spares[i];
        if (!__atomic_compare_exchange_n(&sp->state, &z, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
            continue;
        sp->nt = nt;
        sp->nid = nid;
        sp->tid = tid;
        record_init(&sp->rec, nt);
        __atomic_store_n(&sp->state, 2, __ATOMIC_RELEASE);
        return &sp->rec;
    }
    /* SPARE_RECORDS threads asked in handlers and never outside: this one
     * shares the last record (pthread_equal to that thread's). */
    static const char msg[] = "nthlib: pthread shim: out of records for pthread_self in signal handlers\n";
    (void)!write(2, msg, sizeof msg - 1);
    return &spares[SPARE_RECORDS - 1].rec;
}

struct shim_thread *shim_self(void)
{
    if (__atomic_load_n(&self_key_state, __ATOMIC_ACQUIRE) != 2)
        make_key();
    struct shim_thread *st = nth_getspecific(self_key);
    if (st)
        return st;
    /* One made for it in a signal handler: the same pthread_t. */
    nth_t nt = nth_self();
    struct spare *sp = spare_find(nt, nt ? nth_id(nt) : 0, 0);
    if (!sp)
        sp = spare_find(NULL, 0, (pid_t)syscall(SYS_gettid));
    if (sp) {
        st = &sp->rec;
        st->nt = nt;
        st->nid = nt ? nth_id(nt) : 0;
        /* Its mask was read in the handler, with the handler's mask on
         * the kernel thread: the thread's own is the one here. */
        shim_sig_init(st, NULL);
        nth_setspecific(self_key, st);
        shim_sigwatch_add(st);
        shim_sig_started(st);
        return st;
    }
    /* A nano-thread the shim did not start: main's, or the runtime's. */
    st = calloc(1, sizeof *st);
    if (!st) {
        static const char msg[] = "nthlib: pthread shim: out of memory for a thread record\n";
        (void)!write(2, msg, sizeof msg - 1);
        abort();
    }
    record_init(st, nt);
    nth_setspecific(self_key, st);
    shim_sigwatch_add(st);
    shim_sig_started(st);
    return st;
}

/* Before a second thread runs: libstdc++ and libc skip atomic operations
 * while this flag is set. Not before glibc has set itself up for threads
 * (nth_libc_threads_prepare): the runtime's first kernel thread may come
 * after the flag is cleared, and glibc would then never install its
 * SIGSETXID handler, so that set*id() killed the process. */
void shim_going_multithreaded(void)
{
    if (__libc_single_threaded) {
        if (nth_libc_threads_prepare() != 0) {
            static const char msg[] = "nthlib: pthread shim: cannot start glibc's threads (set*id may fail)\n";
            (void)!write(2, msg, sizeof msg - 1);
        }
        __libc_single_threaded = 0;
    }
}

/* ---- time ------------------------------------------------------------------ */

int64_t shim_now(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t shim_ts_ns(const struct timespec *ts)
{
    if (ts->tv_sec > INT64_MAX / 1000000000LL - 1)
        return INT64_MAX;
    return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

struct timespec shim_ns_ts(int64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };
    return ts;
}

int shim_check_ts(const struct timespec *ts)
{
    return (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L || ts->tv_sec < 0) ? EINVAL : 0;
}

int shim_check_deadline(const struct timespec *ts)
{
    return (ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L) ? EINVAL : 0;
}

uint64_t shim_slices_begin(clockid_t clock, int64_t deadline)
{
    uint64_t real = UINT64_MAX;
    if (deadline != INT64_MAX) {
        int64_t left = deadline - shim_now(clock);
        /* Monotonic, as the alarms: a REALTIME deadline as time left. */
        real = (uint64_t)shim_now(CLOCK_MONOTONIC) + (uint64_t)(left > 0 ? left : 0);
        if (real == 0)
            real = 1;   /* 0 says "no slices" */
    }
    return nth_wait_slices(real);
}

void shim_backoff(int64_t until, int64_t *step)
{
    if (*step == 0) {
        *step = 20000;            /* first: just let the others run */
        nth_yield();
        return;
    }
    int64_t now = shim_now(CLOCK_MONOTONIC);
    int64_t end = now + *step;
    if (end > until)
        end = until;
    if (end > now)
        shim_nap(CLOCK_MONOTONIC, end);   /* pthread_kill ends it early */
    if (*step < SHIM_SLICE_NS)
        *step *= 2;
}

/* Tries before giving up: each fails only when another VP took the caller
 * from the target's queue first (or a stall stand-in ran it). */
#define SHIM_HOME_TRIES 16

void shim_go_home(const struct shim_home *h)
{
    if (h->vp < 0 || shim_errno_loc() == h->errp)
        return;
    int e = errno;
    for (int i = 0; i < SHIM_HOME_TRIES && shim_errno_loc() != h->errp; i++)
        if (nth_move_to_vp(h->vp) != EAGAIN)
            break;
    errno = e;
}
