/* The machine context switch (nthlib/context_*.S, context_ucontext.c):
 * callee-saved registers, general and floating-point, survive a switch to
 * other nano-threads that use the same registers; a new context's entry
 * function starts with a 16-byte aligned stack and an end-of-chain frame
 * (null frame pointer, return address in the trampoline, whose CFI stops
 * unwinders); an unwinder walking a nano-thread's stack stops there. */
#include "child.h"
#include "internal.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_callee_saved_one_vp),
        cmocka_unit_test(test_callee_saved_two_vps),
        cmocka_unit_test(test_entry_frame),
        cmocka_unit_test(test_backtrace_stops),
    };
    child_filter();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
