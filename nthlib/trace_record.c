/*
 * trace_record.c -- the record path: per-kernel-thread (= per-VP) buffers and
 * the instrumentation API of nth/trace.h. No lock anywhere here: each buffer
 * has one producer, its kernel thread, and buffers join the global list with
 * a compare-and-swap push.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "trace_rt.h"
#include "trace_clock.h"

int nth_trace_on;
struct nth_trace_buf *nth_trace_bufs;
uint64_t nth_trace_ring_cap = 1u << 15;
uint64_t nth_trace_alloc_lost;

/* The calling kernel thread's recording state, in one initial-exec TLS
 * block: one %fs-relative access, where the default (global-dynamic) model
 * of a shared library costs a __tls_get_addr call per variable and per
 * record (a third of the record path's instructions, callgrind; see
 * bench/RESULTS.md). libnth is loaded with the program (linked or
 * preloaded), so its TLS is in the static block; a late dlopen of libnth
 * fits in glibc's static TLS surplus, as blocking.c's spare pointer does. */
struct tl_state {
    struct nth_trace_buf *buf;
    uint64_t running;                 /* nano-thread on this VP, for the API */
    uint16_t vp;
};
static __thread struct tl_state tl __attribute__((tls_model("initial-exec"))) = { NULL, 0, NTH_TRACE_NO_VP };
int nth_trace_tls_carry(int (*add)(const void *addr, size_t len))
{
    return add(&tl, sizeof tl);
}
#define tl_buf (tl.buf)
#define tl_vp (tl.vp)
#define tl_running (tl.running)

/* Re-arm b's marks from a fresh tail (trace_rt.h): room up to tail + cap
 * (none while a loss waits to be reported), and the next wake-up
 * threshold above head: half full, three quarters, then full. */
static void arm(struct nth_trace_buf *b, uint64_t head, uint64_t tail)
{
    uint64_t used = head - tail;
    b->room_end = b->lost ? 0 : tail + b->cap;
    b->kick_at = tail + (used < b->cap / 2 ? b->cap / 2 : used < b->cap / 4 * 3 ? b->cap / 4 * 3 : b->cap);
}

/* The ring's memory. A VP's ring (tl_vp is set before a VP's first
 * record) comes with its pages already mapped, up to RING_POPULATE_MAX:
 * faulted in on demand they cost the VP a page fault per 128 records until
 * the ring had wrapped once -- 512 faults for the two 1 MiB rings of LU
 * 1000 on 2 VPs, 15-117 in each of the first traced runs of
 * bench/lu-trace-ab, none after (a fault in a VP stalls its team; 2.2-2.8
 * us each on this project's VM, 1.3-1.6 populated). MADV_POPULATE_WRITE
 * takes them at the VP's start, outside the work being traced; a VP
 * records from its start to its end, so that part of the ring is soon
 * used anyway. Bounded, because NTH_TRACE_BUFFER may be up to 1 GiB per
 * VP: past the bound, pages come on demand as before, and so they do for
 * any kernel thread that is no VP (a program's own thread calling the
 * API, a probed thread, which may record a handful of events; a watchdog
 * stand-in, whose first lease serves a stalled VP's nano-threads at
 * once). A kernel without MADV_POPULATE_WRITE (before Linux 5.14)
 * refuses it: demand paging then. Page-aligned, hence line-aligned: each 32-byte record lies
 * in one cache line (from malloc, 16-byte aligned, every other record
 * straddled two lines, a split store). Never unmapped, as buffers are
 * never freed. NULL if out of memory. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14 */
#endif
#define RING_POPULATE_MAX ((size_t)4 << 20)
static struct nth_trace_rec *ring_new(uint64_t cap, int populate)
{
    size_t len = cap * sizeof(struct nth_trace_rec);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (populate)
        (void)madvise(p, len < RING_POPULATE_MAX ? len : RING_POPULATE_MAX, MADV_POPULATE_WRITE);
    return p;
}

static struct nth_trace_buf *buf_new(void)
{
    struct nth_trace_buf *b;
    /* Line-aligned: the consumer's tail on a line of its own. */
    if (posix_memalign((void **)&b, 64, sizeof *b))
        return NULL;
    memset(b, 0, sizeof *b);
    /* A VP's own kernel thread; not a watchdog stand-in on loan, whose first
     * lease must not wait for its pages (nth_trace__loan sets tl_vp first). */
    int vp_thread = tl_vp != NTH_TRACE_NO_VP && !(tl_vp & NTH_TRACE_LOAN_VP);
    if (!(b->ring = ring_new(nth_trace_ring_cap, vp_thread))) {
        free(b);
        return NULL;
    }
    b->cap = nth_trace_ring_cap;
    arm(b, 0, 0);
    struct nth_trace_buf *old = __atomic_load_n(&nth_trace_bufs, __ATOMIC_RELAXED);
    do
        b->next = old;
    while (!__atomic_compare_exchange_n(&nth_trace_bufs, &old, b, 1,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED));
    tl_buf = b;
    return b;
}

static inline struct nth_trace_buf *buf_get(void)
{
    struct nth_trace_buf *b = tl_buf;
    return __builtin_expect(b != NULL, 1) ? b : buf_new();
}

static uint64_t reserve_slow(struct nth_trace_buf *b, uint64_t n, uint64_t ts);

/* Reserve n consecutive slots (all or none), reporting earlier losses first.
 * Returns the first slot index, or UINT64_MAX after counting n lost. The
 * common case (room by the marks) inline: two loads of the producer's own
 * fields; the rest out of line. */
static inline uint64_t reserve(struct nth_trace_buf *b, uint64_t n, uint64_t ts)
{
    uint64_t head = b->head;
    if (__builtin_expect(head + n <= b->room_end, 1))
        return head;
    return reserve_slow(b, n, ts);
}

static __attribute__((noinline)) uint64_t reserve_slow(struct nth_trace_buf *b, uint64_t n, uint64_t ts)
{
    uint64_t head = b->head;
    uint64_t tail = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
    uint64_t need = n + (b->lost ? 1 : 0);
    if (head - tail + need > b->cap) {
        b->lost += n;
        b->lost_total += n;
        arm(b, head, tail);
        return UINT64_MAX;
    }
    if (b->lost) {
        struct nth_trace_rec *r = &b->ring[head & (b->cap - 1)];
        *r = (struct nth_trace_rec){ .ts = ts, .type = NTH_REC_LOST, .vp = tl_vp, .value = b->lost };
        b->lost = 0;
        head++;
        __atomic_store_n(&b->head, head, __ATOMIC_RELEASE);
    }
    arm(b, head, tail);
    return head;
}

/* Half full: wake the writer now rather than at the next flush tick.
 * Three quarters: the idle writer has had no CPU since (the CPUs are
 * busy), wake the normal-policy rescuer. Each a threshold crossed (by the
 * fresh tail: the writer may have drained since the marks were set), so a
 * system call per half buffer at most. */
static __attribute__((noinline)) void publish_slow(struct nth_trace_buf *b, uint64_t head, uint64_t n)
{
    uint64_t tail = __atomic_load_n(&b->tail, __ATOMIC_ACQUIRE);
    uint64_t before = head - tail, after = head + n - tail;
    if (after >= b->cap / 2 && before < b->cap / 2)
        nth_trace_kick_writer();
    if (after >= b->cap / 4 * 3 && before < b->cap / 4 * 3)
        nth_trace_kick_rescuer();
    arm(b, head + n, tail);
}

static inline void publish(struct nth_trace_buf *b, uint64_t head, uint64_t n)
{
    __atomic_store_n(&b->head, head + n, __ATOMIC_RELEASE);
    if (__builtin_expect(head + n >= b->kick_at, 0))
        publish_slow(b, head, n);
}

static void rec2(uint16_t type, uint32_t arg, uint64_t id, uint64_t value,
                 uint16_t type2, uint32_t arg2, uint64_t value2, int two)
{
    struct nth_trace_buf *b = buf_get();
    if (!b) {
        __atomic_fetch_add(&nth_trace_alloc_lost, 1u + (two != 0), __ATOMIC_RELAXED);
        return;
    }
    uint64_t ts = nth_trace_now_inline();
    uint64_t n = two ? 2 : 1;
    uint64_t h = reserve(b, n, ts);
    if (h == UINT64_MAX)
        return;
    b->ring[h & (b->cap - 1)] = (struct nth_trace_rec){ ts, type, tl_vp, arg, id, value };
    if (two)
        b->ring[(h + 1) & (b->cap - 1)] = (struct nth_trace_rec){ ts, type2, tl_vp, arg2, id, value2 };
    publish(b, h, n);
}

/* One record stamped at_ns (0 = now) in the common case -- a buffer, a
 * time (given, or the TSC clock), room by the marks -- with nothing live
 * across a call, so that its callers save no register. Returns 0 having
 * written nothing otherwise: the caller then takes the general path,
 * which starts over. 103 -> ~50 instructions per record (callgrind,
 * bench/RESULTS.md "trace2"). */
static inline __attribute__((always_inline)) int rec1_fast(uint16_t type, uint32_t arg, uint64_t id, uint64_t value, uint64_t at_ns)
{
    struct nth_trace_buf *b = tl_buf;
    uint64_t ts = at_ns;
    if (__builtin_expect(b == NULL, 0) || (!ts && __builtin_expect(!nth_trace_tsc_now(&ts), 0)))
        return 0;
    uint64_t head = b->head;
    if (__builtin_expect(head + 1 > b->room_end, 0))
        return 0;
    b->ring[head & (b->cap - 1)] = (struct nth_trace_rec){ ts, type, tl_vp, arg, id, value };
    __atomic_store_n(&b->head, head + 1, __ATOMIC_RELEASE);
    if (__builtin_expect(head + 1 >= b->kick_at, 0))
        publish_slow(b, head, 1);
    return 1;
}

/* One record stamped at_ns (0 = now), general path. */
static __attribute__((noinline)) void rec_at_slow(uint16_t type, uint64_t id, uint64_t value, uint64_t at_ns)
{
    struct nth_trace_buf *b = buf_get();
    if (!b) {
        __atomic_fetch_add(&nth_trace_alloc_lost, 1, __ATOMIC_RELAXED);
        return;
    }
    uint64_t ts = at_ns ? at_ns : nth_trace_now_inline();
    uint64_t h = reserve(b, 1, ts);
    if (h == UINT64_MAX)
        return;
    b->ring[h & (b->cap - 1)] = (struct nth_trace_rec){ ts, type, tl_vp, 0, id, value };
    publish(b, h, 1);
}

/* One record stamped at_ns (0 = now): the function probes' path. */
static inline void rec_at(uint16_t type, uint64_t id, uint64_t value, uint64_t at_ns)
{
    if (__builtin_expect(!rec1_fast(type, 0, id, value, at_ns), 0))
        rec_at_slow(type, id, value, at_ns);
}

/* The runtime's one-record sites (regions, READY, pushes and pops). */
void nth_trace__rec(uint16_t type, uint32_t arg, uint64_t id, uint64_t value)
{
    if (__builtin_expect(!rec1_fast(type, arg, id, value, 0), 0))
        rec2(type, arg, id, value, 0, 0, 0, 0);
}

void nth_trace__overhead(uint64_t id, uint64_t since_ns)
{
    struct nth_trace_buf *b = buf_get();
    if (!b) {
        __atomic_fetch_add(&nth_trace_alloc_lost, 2, __ATOMIC_RELAXED);
        return;
    }
    uint64_t ts = nth_trace_now_inline();
    uint64_t h = reserve(b, 2, ts);
    if (h == UINT64_MAX)
        return;
    b->ring[h & (b->cap - 1)] = (struct nth_trace_rec){ since_ns, NTH_REC_STATE_PUSH, tl_vp, NTH_TRACE_OVERHEAD, id, 0 };
    b->ring[(h + 1) & (b->cap - 1)] = (struct nth_trace_rec){ ts, NTH_REC_STATE_POP, tl_vp, 0, id, 0 };
    publish(b, h, 2);
}

/* Slots for a NAME record and its bytes: 0 when there is no name. */
static inline uint64_t name_slots(const char *name, size_t *len)
{
    if (!name)
        return 0;
    *len = strnlen(name, NTH_TRACE_NAME_MAX);
    return 1 + (*len + sizeof(struct nth_trace_rec) - 1) / sizeof(struct nth_trace_rec);
}

/* Write the NAME record at slot h and its bytes after it (slots - 1 of them). */
static void name_put(struct nth_trace_buf *b, uint64_t h, uint64_t ts, uint16_t kind, uint64_t key,
                     uint64_t key2, const char *name, size_t len, uint64_t slots)
{
    b->ring[h & (b->cap - 1)] = (struct nth_trace_rec){ ts, NTH_REC_NAME, tl_vp,
                                                         (uint32_t)kind << 16 | (uint32_t)len, key, key2 };
    for (uint64_t i = 0; i + 1 < slots; i++) {
        struct nth_trace_rec *r = &b->ring[(h + 1 + i) & (b->cap - 1)];
        size_t off = i * sizeof *r, chunk = len - off < sizeof *r ? len - off : sizeof *r;
        memset(r, 0, sizeof *r);
        memcpy(r, name + off, chunk);
    }
}

void nth_trace__name(uint16_t kind, uint64_t key, uint64_t key2, const char *name)
{
    size_t len = 0;
    uint64_t slots = name_slots(name, &len);
    if (!slots)
        return;
    struct nth_trace_buf *b = buf_get();
    if (!b) {
        __atomic_fetch_add(&nth_trace_alloc_lost, slots, __ATOMIC_RELAXED);
        return;
    }
    uint64_t ts = nth_trace_now_inline();
    uint64_t h = reserve(b, slots, ts);
    if (h == UINT64_MAX)
        return;
    name_put(b, h, ts, kind, key, key2, name, len, slots);
    publish(b, h, slots);
}

uint64_t nth_trace__create_rt(uint64_t id, uint64_t creator, const char *name, uint64_t since)
{
    size_t len = 0;
    uint64_t nslots = name && *name ? name_slots(name, &len) : 0;
    uint64_t n = nslots + 1 + (creator && since ? 2 : 0);
    struct nth_trace_buf *b = buf_get();
    if (!b) {
        __atomic_fetch_add(&nth_trace_alloc_lost, n, __ATOMIC_RELAXED);
        return nth_trace_clock_floor;
    }
    uint64_t ts = nth_trace_now_inline();
    uint64_t h = reserve(b, n, ts);
    if (h == UINT64_MAX)
        return ts;
    if (nslots)
        name_put(b, h, ts, NTH_NAME_THREAD, id, 0, name, len, nslots);
    uint64_t i = h + nslots;
    b->ring[i++ & (b->cap - 1)] = (struct nth_trace_rec){ ts, NTH_REC_THREAD_CREATE, tl_vp, 0, id, creator };
    if (creator && since) {
        b->ring[i++ & (b->cap - 1)] = (struct nth_trace_rec){ since, NTH_REC_STATE_PUSH, tl_vp, NTH_TRACE_OVERHEAD, creator, 0 };
        b->ring[i & (b->cap - 1)] = (struct nth_trace_rec){ ts, NTH_REC_STATE_POP, tl_vp, 0, creator, 0 };
    }
    publish(b, h, n);
    return ts;
}

void nth_trace__vp(uint16_t type, unsigned vp)
{
    if (type == NTH_REC_VP_START)
        tl_vp = vp < NTH_TRACE_MAX_VPS ? (uint16_t)vp : NTH_TRACE_NO_VP;
    nth_trace__rec(type, 0, 0, vp);
    if (type == NTH_REC_VP_STOP)
        tl_vp = NTH_TRACE_NO_VP;
}

void nth_trace__loan(int vp)
{
    if (vp >= 0) {
        tl_vp = (unsigned)vp < NTH_TRACE_MAX_VPS ? (uint16_t)((unsigned)vp | NTH_TRACE_LOAN_VP) : NTH_TRACE_NO_VP;
        nth_trace__rec(NTH_REC_VP_START, 0, 0, (uint64_t)vp);
    } else if (tl_vp != NTH_TRACE_NO_VP) {
        nth_trace__rec(NTH_REC_VP_STOP, 0, 0, (uint64_t)(tl_vp & ~NTH_TRACE_LOAN_VP));
        tl_vp = NTH_TRACE_NO_VP;
    }
}

void nth_trace__switch(uint64_t from, uint64_t to)
{
    nth_trace__switch_why(from, to, NTH_SWITCH_YIELD);
}

void nth_trace__switch_why(uint64_t from, uint64_t to, unsigned why)
{
    tl_running = to;
    nth_trace__rec(NTH_REC_SWITCH, why, to, from);
}

uint64_t nth_trace__switch_rt(const struct nth_trace_sw *s)
{
    tl_running = s->to;
    nth_trace_clock_raise(s->to_last);   /* to's track goes on from there */
    struct nth_trace_buf *b = buf_get();
    uint64_t n = 1 + (s->ended != 0) + (s->obj != 0) + (s->rq_vp >= 0);
    if (!b) {
        __atomic_fetch_add(&nth_trace_alloc_lost, n, __ATOMIC_RELAXED);
        return nth_trace_clock_floor;
    }
    uint64_t ts = nth_trace_now_inline();
    uint64_t ovh = s->t0 && s->t0 < ts ? ts - s->t0 : 0;
    if (ovh > NTH_SWITCH_OVH_MAX)
        ovh = NTH_SWITCH_OVH_MAX;
    uint64_t h = reserve(b, n, ts), i = h;
    if (h == UINT64_MAX)
        return ts;
    if (s->ended)
        b->ring[i++ & (b->cap - 1)] = (struct nth_trace_rec){ ts, NTH_REC_THREAD_END, tl_vp, 0, s->from, 0 };
    if (s->obj)
        b->ring[i++ & (b->cap - 1)] = (struct nth_trace_rec){ ts, NTH_REC_WAIT_OBJ, tl_vp, s->kind, s->from, s->obj };
    b->ring[i++ & (b->cap - 1)] = (struct nth_trace_rec){
        ts, NTH_REC_SWITCH, tl_vp, s->why | (uint32_t)ovh << NTH_SWITCH_OVH_SHIFT, s->to, s->from };
    if (s->rq_vp >= 0)
        b->ring[i & (b->cap - 1)] = (struct nth_trace_rec){ ts, NTH_REC_COUNTER, tl_vp, NTH_CTR_RQ_LEN,
                                                             (uint64_t)s->rq_vp, s->rq_len };
    publish(b, h, n);
    return ts;
}

void nth_trace__counter(uint32_t kind, int vp, uint64_t value)
{
    /* Per-VP counters carry their VP in `id` so that any kernel thread (a
     * thief, cpumgr's client) may report another VP's queue length. */
    nth_trace__rec(NTH_REC_COUNTER, kind, vp < 0 ? UINT64_MAX : (uint64_t)vp, value);
}

/* ---- the public instrumentation API (nth/trace.h) ---------------------- */

int nth_trace_enabled(void)
{
    return __atomic_load_n(&nth_trace_on, __ATOMIC_RELAXED);
}

#define OFF_RETURN(check) do { if (check) return EINVAL; if (!__builtin_expect(__atomic_load_n(&nth_trace_on, __ATOMIC_RELAXED), 0)) return 0; } while (0)
#define BAD_STATE(s) ((s) > NTH_TRACE_STATE_MAX)
#define BAD_TYPE(t) ((t) == 0 || (t) >= NTH_TRACE_EVENT_RESERVED)

int nth_trace_state_set(unsigned state)
{
    OFF_RETURN(BAD_STATE(state));
    rec2(NTH_REC_STATE_SET, state, tl_running, 0, 0, 0, 0, 0);
    return 0;
}

int nth_trace_state_push(unsigned state)
{
    OFF_RETURN(BAD_STATE(state));
    rec2(NTH_REC_STATE_PUSH, state, tl_running, 0, 0, 0, 0, 0);
    return 0;
}

int nth_trace_state_pop(void)
{
    OFF_RETURN(0);
    rec2(NTH_REC_STATE_POP, 0, tl_running, 0, 0, 0, 0, 0);
    return 0;
}

int nth_trace_event(uint32_t type, uint64_t value)
{
    OFF_RETURN(BAD_TYPE(type));
    rec2(NTH_REC_EVENT, type, tl_running, value, 0, 0, 0, 0);
    return 0;
}

int nth_trace_state_set_event(unsigned state, uint32_t type, uint64_t value)
{
    OFF_RETURN(BAD_STATE(state) || BAD_TYPE(type));
    rec2(NTH_REC_STATE_SET, state, tl_running, 0, NTH_REC_EVENT, type, value, 1);
    return 0;
}

int nth_trace_state_push_event(unsigned state, uint32_t type, uint64_t value)
{
    OFF_RETURN(BAD_STATE(state) || BAD_TYPE(type));
    rec2(NTH_REC_STATE_PUSH, state, tl_running, 0, NTH_REC_EVENT, type, value, 1);
    return 0;
}

int nth_trace_state_pop_event(uint32_t type, uint64_t value)
{
    OFF_RETURN(BAD_TYPE(type));
    rec2(NTH_REC_STATE_POP, 0, tl_running, 0, NTH_REC_EVENT, type, value, 1);
    return 0;
}

int nth_trace_function_enter(const void *fn, uint64_t at_ns)
{
    OFF_RETURN(!fn);
    rec_at(NTH_REC_FUNC_ENTER, tl_running, (uintptr_t)fn, at_ns);
    return 0;
}

int nth_trace_function_exit(const void *fn, uint64_t at_ns)
{
    OFF_RETURN(!fn);
    rec_at(NTH_REC_FUNC_EXIT, tl_running, (uintptr_t)fn, at_ns);
    return 0;
}

int nth_trace_register_function(const void *fn, const char *name)
{
    OFF_RETURN(!fn || !name);
    nth_trace__name(NTH_NAME_FUNCTION, (uintptr_t)fn, 0, name);
    return 0;
}

int nth_trace_memory(uint64_t bytes_in_use, uint64_t alloc_calls)
{
    OFF_RETURN(0);
    rec2(NTH_REC_COUNTER, NTH_CTR_MEM_BYTES, UINT64_MAX, bytes_in_use,
         NTH_REC_COUNTER, NTH_CTR_MEM_CALLS, alloc_calls, 1);
    return 0;
}

uint64_t nth_trace_clock_ns(void)
{
    return nth_trace_now_inline();
}

int nth_trace_rt_began;

/* A name registered before the runtime started -- the top of main is the
 * natural place -- must still reach the trace: start recording from
 * NTH_TRACE now, as libnth-probes.so does in its constructor; the runtime
 * joins that trace when it starts (nth_trace__rt_start). Tried once. */
static void start_for_names(void)
{
    static int tried;
    if (__atomic_load_n(&nth_trace_on, __ATOMIC_ACQUIRE) ||
        __atomic_load_n(&nth_trace_rt_began, __ATOMIC_ACQUIRE) ||
        __atomic_exchange_n(&tried, 1, __ATOMIC_ACQ_REL))
        return;
    nth_trace_start_standalone();
}
#define NAME_RETURN(check) do { if (check) return EINVAL; start_for_names(); OFF_RETURN(0); } while (0)

int nth_trace_register_state(unsigned state, const char *name)
{
    NAME_RETURN(!name || !*name || state < NTH_TRACE_STATE_USER || BAD_STATE(state));
    nth_trace__name(NTH_NAME_STATE, state, 0, name);
    return 0;
}

int nth_trace_register_event(uint32_t type, const char *name)
{
    NAME_RETURN(!name || !*name || BAD_TYPE(type));
    nth_trace__name(NTH_NAME_EVENT, type, 0, name);
    return 0;
}

int nth_trace_register_object(const void *obj, const char *name)
{
    NAME_RETURN(!obj || !name || !*name);
    nth_trace__name(NTH_NAME_OBJECT, (uintptr_t)obj, 0, name);
    return 0;
}

int nth_trace_register_event_value(uint32_t type, uint64_t value, const char *name)
{
    NAME_RETURN(!name || !*name || BAD_TYPE(type));
    nth_trace__name(NTH_NAME_VALUE, type, value, name);
    return 0;
}
