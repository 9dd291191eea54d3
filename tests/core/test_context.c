/* The machine context switch (nthlib/context_*.S, context_ucontext.c):
 * callee-saved registers, general and floating-point, survive a switch to
 * other nano-threads that use the same registers; a new context's entry
 * function starts with a 16-byte aligned stack and an end-of-chain frame
 * (null frame pointer, return address in the trampoline, whose CFI stops
 * unwinders); an unwinder walking a nano-thread's stack stops there, and a
 * forced unwind (the pthread shim's pthread_exit) runs every frame's
 * cleanups and ends there, also under ASan. */
#include "child.h"
#include "internal.h"
#include <string.h>
#include <sys/mman.h>
#include <unwind.h>

#if defined(__aarch64__) || defined(__x86_64__)
#define HAVE_PROBES 1
uint64_t ctx_regs_hold(uint64_t seed, void (*fn)(void));
#endif

/* ---- callee-saved registers across nth_yield -------------------------------- */

enum { REG_THREADS = 4, REG_ROUNDS = 300 };

static void yield_once(void) { nth_yield(); }

static void *reg_worker(void *a)
{
#ifdef HAVE_PROBES
    uint64_t id = (uintptr_t)a;
    for (uint64_t r = 0; r < REG_ROUNDS; r++) {
        /* Distinct values per nano-thread and round: a register that
         * another nano-thread loaded would show up as a mismatch. */
        uint64_t seed = (id << 40) | (r << 8);
        uint64_t bad = ctx_regs_hold(seed, yield_once);
        if (bad)
            fprintf(stderr, "nano-thread %llu round %llu: registers lost, mask 0x%llx "
                    "(aarch64: bits 0-9 x19-x28, 10-17 d8-d15; x86-64: rbx rbp r12-r15)\n",
                    (unsigned long long)id, (unsigned long long)r, (unsigned long long)bad);
        CHECK_EQ(bad, 0);
    }
#else
    (void)a;
#endif
    return NULL;
}

static void c_callee_saved(void *a)
{
    unsigned vps = (unsigned)(uintptr_t)a;
    child_init(vps);
    nth_t t[REG_THREADS];
    for (int i = 0; i < REG_THREADS; i++)
        CHECK_EQ(nth_create(&t[i], NULL, reg_worker, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < REG_THREADS; i++)
        CHECK_EQ(nth_join(t[i], NULL), 0);
}

static void test_callee_saved_one_vp(void **s)
{
    (void)s;
#ifndef HAVE_PROBES
    skip();
#endif
    assert_child_ok(c_callee_saved, (void *)(uintptr_t)1);
}

static void test_callee_saved_two_vps(void **s)
{
    (void)s;
#ifndef HAVE_PROBES
    skip();
#endif
    assert_child_ok(c_callee_saved, (void *)(uintptr_t)2);
}

/* ---- a new context's first frame -------------------------------------------- */

struct ctx_probe {
    uintptr_t sp, fp, ra;      /* stored by ctx_entry_probe (offsets 0, 8, 16) */
    nth_ctx_t self, back;
};

void ctx_entry_probe(void *p);
void ctx_probe_done(struct ctx_probe *p);
void nth_ctx_trampoline(void);

void ctx_probe_done(struct ctx_probe *p)
{
    nth_ctx_switch(&p->self, &p->back);
    abort();                   /* never resumed */
}

/* Runs the probe as a fresh context on stacks of every misalignment: the
 * bounds nth_ctx_make gets need not be aligned, the entry's stack must be. */
static void test_entry_frame(void **s)
{
    (void)s;
#ifndef HAVE_PROBES
    skip();
#else
    enum { SZ = 64 * 1024 };
    char *mem = mmap(NULL, SZ + 64, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(mem != MAP_FAILED);
    for (unsigned lo = 0; lo < 16; lo += 3) {
        for (unsigned trim = 0; trim < 16; trim++) {
            static struct ctx_probe p;
            memset(&p, 0, sizeof p);
            nth_ctx_make(&p.self, mem + lo, SZ - trim, ctx_entry_probe, &p);
            nth_ctx_switch(&p.back, &p.self);
            assert_int_equal(p.sp % 16, 0);
            assert_true(p.sp > (uintptr_t)(mem + lo));
            assert_true(p.sp <= (uintptr_t)(mem + lo + SZ - trim));
#ifndef NTH_CTX_UCONTEXT
            /* The trampoline is the outermost frame: null frame pointer,
             * and the return address is in it (its CFI marks it as the end
             * of the stack). */
            assert_int_equal(p.fp, 0);
            uintptr_t t = (uintptr_t)nth_ctx_trampoline;
            assert_true(p.ra > t && p.ra < t + 64);
#endif
        }
    }
    munmap(mem, SZ + 64);
#endif
}

/* ---- unwinding a nano-thread's stack stops at its first frame ---------------- */

/* libgcc's unwinder, used by C++ exceptions, pthread_cancel and glibc's
 * backtrace(), follows the CFI alone: without an end marker it would step
 * from the trampoline to the same trampoline forever (glibc's backtrace()
 * hides that with a progress check, so it is not used here). */
enum { BT_MAX = 64 };
static int bt_depth;

static _Unwind_Reason_Code bt_step(struct _Unwind_Context *uc, void *arg)
{
    (void)uc;
    int *n = arg;
    return ++*n >= BT_MAX ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static __attribute__((noinline)) void *bt_worker(void *a)
{
    (void)a;
    int n = 0;
    _Unwind_Backtrace(bt_step, &n);
    bt_depth = n;
    __asm__ __volatile__("" ::: "memory");   /* not a tail position */
    return NULL;
}

static void c_backtrace(void *a)
{
    (void)a;
    child_init(1);
    nth_t t;
    CHECK_EQ(nth_create(&t, NULL, bt_worker, NULL), 0);
    CHECK_EQ(nth_join(t, NULL), 0);
    /* bt_worker, nth_thread_entry, the trampoline (or glibc's context start
     * under ucontext), plus the unwinder's own frame. */
    if (getenv("BT_SHOW") || bt_depth < 3 || bt_depth > 8)
        fprintf(stderr, "unwound %d frames\n", bt_depth);
    CHECK(bt_depth >= 3 && bt_depth <= 8);
}

static void test_backtrace_stops(void **s) { (void)s; assert_child_ok(c_backtrace, NULL); }

/* ---- a forced unwind of a nano-thread's stack ---------------------------------- */

/* What the pthread shim does at pthread_exit and cancellation
 * (pthread-shim/unwind.c): _Unwind_ForcedUnwind runs the cleanups of every
 * frame (this file is built with -fexceptions, so cleanup attributes are
 * run by unwinding) and reaches the end of the stack at the trampoline,
 * never the frames of whoever switched to the nano-thread. Under ASan the
 * unwound frames' redzones stay poisoned unless __asan_handle_no_return
 * clears them, which it does only for a stack it knows the bounds of: the
 * fiber annotations'. A cleanup then uses that stack again (fu_reuse). */
#if defined(__SANITIZE_ADDRESS__)
#define FU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FU_ASAN 1
#endif
#endif
#ifdef FU_ASAN
void __asan_handle_no_return(void);
void *__asan_region_is_poisoned(void *beg, size_t size);
#endif

static char fu_trail[32];
static uintptr_t fu_entry_cfa, fu_end_cfa;
static int fu_frames, fu_ended, fu_poisoned;
static uintptr_t fu_local;       /* fu_start's array, in an unwound frame */
static struct _Unwind_Exception fu_exc;

static void fu_note(const char *s) { strncat(fu_trail, s, sizeof fu_trail - strlen(fu_trail) - 1); }

static __attribute__((noinline)) void fu_reuse(void)
{
    volatile char big[4096];     /* over the unwound frames */
    for (size_t i = 0; i < sizeof big; i += 64)
        big[i] = (char)i;
}

static void *fu_reuser(void *a)
{
    (void)a;
    fu_reuse();
    return NULL;
}

static void fu_cleanup_inner(int *x)
{
    (void)x;
#ifdef FU_ASAN
    /* The array's redzones, in a frame the unwind left: poisoned still
     * unless ASan took the no-return for this stack. */
    fu_poisoned = __asan_region_is_poisoned((void *)(fu_local - 32), 256 + 64) != NULL;
#endif
    fu_reuse();
    fu_note("i");
}
static void fu_cleanup_outer(int *x) { (void)x; fu_reuse(); fu_note("o"); }

static _Unwind_Reason_Code fu_stop(int version, _Unwind_Action actions, _Unwind_Exception_Class cls,
                                   struct _Unwind_Exception *exc, struct _Unwind_Context *ctx, void *arg)
{
    (void)version;
    (void)cls;
    (void)exc;
    (void)arg;
    fu_frames++;
    if (fu_frames > BT_MAX)
        abort();                 /* an unwinder that never ends */
    if (actions & _UA_END_OF_STACK) {
        fu_ended = 1;
        fu_end_cfa = (uintptr_t)_Unwind_GetCFA(ctx);
        nth_exit((void *)7);
    }
    return _URC_NO_REASON;
}

static __attribute__((noinline)) void fu_start(void)
{
    volatile char local[256];    /* redzones around it, under ASan */
    local[0] = 1;
    (void)local[0];
    fu_local = (uintptr_t)local;
    fu_exc.exception_class = 0x4e54480054455354ULL;
    fu_exc.exception_cleanup = NULL;
#ifdef FU_ASAN
    __asan_handle_no_return();
#endif
    _Unwind_ForcedUnwind(&fu_exc, fu_stop, NULL);
    fu_note("returned");
}

static __attribute__((noinline)) void fu_inner(void)
{
    int x __attribute__((cleanup(fu_cleanup_inner))) = 0;
    fu_start();
    (void)x;
}

static __attribute__((noinline)) void *fu_worker(void *a)
{
    (void)a;
    fu_entry_cfa = (uintptr_t)__builtin_dwarf_cfa();
    int x __attribute__((cleanup(fu_cleanup_outer))) = 0;
    fu_inner();
    (void)x;
    return NULL;
}

static void c_forced_unwind(void *a)
{
    (void)a;
    child_init(1);
    nth_t t;
    void *ret = NULL;
    CHECK_EQ(nth_create(&t, NULL, fu_worker, NULL), 0);
    CHECK_EQ(nth_join(t, &ret), 0);
    CHECK_EQ((uintptr_t)ret, 7);
    if (strcmp(fu_trail, "io") != 0)
        fprintf(stderr, "cleanups run: '%s', want 'io'\n", fu_trail);
    CHECK(strcmp(fu_trail, "io") == 0);
    /* The end of the stack is the trampoline's frame, above the worker's
     * (its caller's, nth_thread_entry's, stack pointer or higher). */
    CHECK(!fu_poisoned);
    CHECK(fu_ended);
    CHECK(fu_end_cfa >= fu_entry_cfa);
    CHECK(fu_frames >= 4 && fu_frames <= 10);
    /* The stack is usable afterwards: another nano-thread gets it. */
    CHECK_EQ(nth_create(&t, NULL, fu_reuser, NULL), 0);
    CHECK_EQ(nth_join(t, NULL), 0);
}

static void test_forced_unwind(void **s) { (void)s; assert_child_ok(c_forced_unwind, NULL); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_callee_saved_one_vp),
        cmocka_unit_test(test_callee_saved_two_vps),
        cmocka_unit_test(test_entry_frame),
        cmocka_unit_test(test_backtrace_stops),
        cmocka_unit_test(test_forced_unwind),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
