/*
 * tls.c -- each pthread's own TLS (NTH_SHIM_TLS=thread, the default): a
 * static TLS block and TCB of glibc's layout per thread the shim creates,
 * which the runtime loads into %fs whenever that nano-thread runs
 * (nth_tls_enable, nthlib/tls_switch.c). errno and every __thread
 * variable are then per pthread, as POSIX and programs expect, not per
 * VP (sysbench keeps its thread number in one; glibc's errno address is
 * taken once per function because __errno_location is declared const).
 *
 * The TCB comes from ld.so's own allocator (_dl_allocate_tls, a
 * GLIBC_PRIVATE export, as glibc's pthread_create uses it), so the dtv,
 * dlopen'ed modules' TLS and __tls_get_addr work as for glibc's threads.
 * What glibc's pthread_create fills in the TCB's header is set here: the
 * self pointers, multiple_threads, the stack protector and pointer guard
 * of the creating thread (canaries and setjmp/atexit pointer mangling
 * must agree in every TCB), the rseq cpu_id at -1 (sched_getcpu then asks
 * the kernel: the kernel updates only a kernel thread's own rseq area),
 * the thread-list node linked to itself (a fork child unlinks the forking
 * thread's) and the kernel thread id (carried: it names the kernel thread
 * for glibc's futex-based locks).
 *
 * Lifetime: the TCB stays with the runtime's descriptor (nth_tls_adopt),
 * which the runtime reuses for a later nano-thread: a thread that starts
 * on a used TCB resets every module's TLS to its initial image except
 * libc's (its malloc cache and arena: glibc frees them only at a kernel
 * thread's exit, so a TCB thrown away would leak them) and the runtime's
 * and the shim's own (they describe the kernel thread), then sets errno to
 * 0 and the global locale. C++ thread_local destructors registered with
 * __cxa_thread_atexit_impl run at the thread's exit (__call_tls_dtors, as
 * glibc's threads do), before the key destructors. Not with
 * NTH_SHIM_TLS=vp, by choice (documented in nth(3) and the README): the
 * thread_local objects and glibc's destructor list are then the VP's
 * kernel thread's, shared by every thread that ran on the VP, and calling
 * __call_tls_dtors when one thread ends would destroy objects that the
 * others still use.
 *
 * Fallbacks, with one line on stderr: glibc without these exports or with
 * another TCB layout (checked on the initial thread). Sanitizer builds
 * keep TLS per kernel thread silently (their runtimes' TLS follows kernel
 * threads). NTH_SHIM_TLS=vp chooses that too: no thread-pointer change at
 * a switch (each costs an arch_prctl system call, about 4 us here).
 */
#include <dlfcn.h>
#include <link.h>
#include <locale.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shim.h"

int shim_tls_on;

#if defined(__x86_64__)
/* glibc 2.34+ on x86-64 (tcbhead_t, then struct pthread's list and tid):
 * checked against the initial thread before use. */
#define TCB_SELF 0x00
#define TCB_SELF2 0x10
#define TCB_MULTIPLE_THREADS 0x18
#define TCB_GUARDS 0x28          /* stack_guard, pointer_guard */
#define PTHREAD_LIST 0x2c0
#define PTHREAD_TID 0x2d0

extern ptrdiff_t __rseq_offset __attribute__((weak));

static void *(*dl_allocate_tls)(void *);
static void (*call_tls_dtors)(void);

static inline char *tp_now(void)
{
    char *tp;
    __asm__ __volatile__("movq %%fs:0, %0" : "=r"(tp));
    return tp;
}

static void say(const char *why)
{
    static const char pre[] = "libnth-pthread: ";
    static const char post[] = ": __thread data and errno stay per kernel thread (as NTH_SHIM_TLS=vp)\n";
    (void)!write(2, pre, sizeof pre - 1);
    (void)!write(2, why, strlen(why));
    (void)!write(2, post, sizeof post - 1);
}

static void *tcb_new(void)
{
    char *cur = tp_now();
    char *tp = dl_allocate_tls(NULL);
    if (!tp)
        return NULL;
    *(void **)(tp + TCB_SELF) = tp;
    *(void **)(tp + TCB_SELF2) = tp;
    *(int *)(tp + TCB_MULTIPLE_THREADS) = 1;
    memcpy(tp + TCB_GUARDS, cur + TCB_GUARDS, 2 * sizeof(uintptr_t));
    void **node = (void **)(tp + PTHREAD_LIST);
    node[0] = node[1] = node;
    *(int *)(tp + PTHREAD_TID) = *(int *)(cur + PTHREAD_TID);
    if (&__rseq_offset && __rseq_offset)
        *(int *)(tp + __rseq_offset + 4) = -1;       /* struct rseq cpu_id */
    return tp;
}

/* ---- reset of a used TCB --------------------------------------------------- */

static int covers(const struct dl_phdr_info *info, const void *addr)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (uintptr_t)addr - lo < ph->p_memsz)
            return 1;
    }
    return 0;
}

static int reset_module(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    char *blk = info->dlpi_tls_data;     /* this thread's copy, NULL if not allocated */
    if (!info->dlpi_tls_modid || !blk)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_TLS)
            continue;
        /* libc's block: its malloc cache and arena stay (errno and the
         * locale are reset below); libnth's and ours: the kernel thread's. */
        char *e = (char *)shim_errno_loc();
        if ((e >= blk && e < blk + ph->p_memsz) || covers(info, (const void *)&nth_yield) ||
            covers(info, (const void *)&tcb_new))
            return 0;
        memcpy(blk, (const char *)(info->dlpi_addr + ph->p_vaddr), ph->p_filesz);
        memset(blk + ph->p_filesz, 0, ph->p_memsz - ph->p_filesz);
    }
    return 0;
}

void shim_tls_thread_begin(void)
{
    if (!shim_tls_on)
        return;
    if (nth_tls_adopted()) {
        /* A used TCB (the descriptor's previous nano-thread's). */
        dl_iterate_phdr(reset_module, NULL);
        uselocale(LC_GLOBAL_LOCALE);
        errno = 0;
        return;
    }
    void *tp = tcb_new();
    if (!tp)
        return;   /* no memory: this thread shares its VP's TLS, as with =vp */
    nth_tls_adopt(tp);
    /* glibc's own threads run __ctype_init at start: the ctype tables'
     * pointers (isalpha, toupper, printf's %f) live in libc's TLS, NULL in
     * a new block (a thread's first isalpha crashed). uselocale sets them,
     * with the global locale a new thread starts with. */
    uselocale(LC_GLOBAL_LOCALE);
}

void shim_tls_thread_end(void)
{
    if (shim_tls_on && call_tls_dtors)
        call_tls_dtors();
}

void shim_tls_init(void)
{
    const char *v = getenv("NTH_SHIM_TLS");
    if (v && !strcmp(v, "vp"))
        return;                  /* any other value than thread: told by nthlib's config check */
    dl_allocate_tls = (void *(*)(void *))dlvsym(RTLD_DEFAULT, "_dl_allocate_tls", "GLIBC_PRIVATE");
    call_tls_dtors = (void (*)(void))dlvsym(RTLD_DEFAULT, "__call_tls_dtors", "GLIBC_PRIVATE");
    if (!dl_allocate_tls) {
        say("ld.so has no _dl_allocate_tls");
        return;
    }
    char *tp = tp_now();
    void **node = (void **)(tp + PTHREAD_LIST);
    if (*(void **)(tp + TCB_SELF) != tp || *(void **)(tp + TCB_SELF2) != tp ||
        *(int *)(tp + PTHREAD_TID) != (int)syscall(SYS_gettid) || !node[0] ||
        ((void **)node[0])[1] != (void *)node) {
        say("unknown glibc thread control block layout");
        return;
    }
    if (nth_tls_carry(tp + PTHREAD_TID, sizeof(int)) || shim_sig_tls_carry()) {
        say("cannot register the shim's kernel-thread state");
        return;
    }
    int r = nth_tls_enable(tcb_new);
    if (r == EBUSY)
        say("a library started threads before the shim's set-up");
    else if (r == ENOMEM)
        say("no memory for a thread control block");
    shim_tls_on = r == 0;        /* ENOTSUP: a sanitizer build, silently */
}
#else
void shim_tls_init(void) {}
void shim_tls_thread_begin(void) {}
void shim_tls_thread_end(void) {}
#endif
