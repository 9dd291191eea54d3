/*
 * guard.c -- pthread_attr_setguardsize(3p) is honoured: a thread created
 * with a guard of 0, 1 byte, one page or 64 KiB gets an inaccessible guard
 * of that size rounded up to whole pages just below its stack (none for 0),
 * and pthread_getattr_np(3) reports the guard size. As glibc (nptl
 * allocate_stack, pthread_getattr_np): the guard is rounded up to pages and
 * getattr_np reports the rounded size. A child process (fork) touches each end of the guard
 * and must die of SIGSEGV, and the lowest stack byte must be usable. With
 * guard 0 the byte below the stack must not be a guard carved inside the
 * stack's own mapping (nor a PROT_NONE mapping just below it).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include "check.h"

static size_t pg;

/* How a child that reads *p ends: "ok" or "SIGSEGV" (other: "other"). */
static const char *touch(volatile char *p)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        /* A plain death by SIGSEGV, whatever handler the runtime or a
         * sanitizer installed. */
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        (void)*p;
        _exit(0);
    }
    if (pid < 0)
        return "fork failed";
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return "waitpid failed";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return "ok";
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
        return "SIGSEGV";
    return "other";
}

/* The /proc/self/maps line holding a, its bounds and permissions in *lo,
 * *hi, perm (5 bytes); 0 if a is in no mapping. */
static int mapping_of(uintptr_t a, uintptr_t *lo, uintptr_t *hi, char *perm)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long l, h;
        char p[5];
        if (sscanf(line, "%lx-%lx %4s", &l, &h, p) == 3 && a >= l && a < h) {
            *lo = l;
            *hi = h;
            memcpy(perm, p, 5);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

struct req {
    size_t guard;           /* asked for */
    const char *label;
};

static void *body(void *arg)
{
    struct req *r = arg;
    pthread_attr_t a;
    void *addr;
    size_t size, guard;
    CHECK(pthread_getattr_np(pthread_self(), &a) == 0);
    CHECK(pthread_attr_getstack(&a, &addr, &size) == 0);
    CHECK(pthread_attr_getguardsize(&a, &guard) == 0);
    pthread_attr_destroy(&a);
    size_t applied = (r->guard + pg - 1) / pg * pg;
    printf("guard %s: reported %zu\n", r->label, guard);
    CHECK(guard == applied);
    char *lo = addr;
    printf("guard %s: lowest stack byte %s\n", r->label, touch(lo));
    if (applied) {
        printf("guard %s: top of guard %s\n", r->label, touch(lo - 1));
        printf("guard %s: bottom of guard %s\n", r->label, touch(lo - applied));
        CHECK(strcmp(touch(lo - 1), "SIGSEGV") == 0);
        CHECK(strcmp(touch(lo - applied), "SIGSEGV") == 0);
    } else {
        uintptr_t mlo, mhi, blo, bhi;
        char perm[5], bperm[5];
        CHECK(mapping_of((uintptr_t)lo, &mlo, &mhi, perm));
        int below_mapped = mapping_of((uintptr_t)lo - 1, &blo, &bhi, bperm);
        int ours = 0;
        if (below_mapped && blo == mlo)
            ours = strcmp(touch(lo - 1), "ok") != 0;  /* carved in our mapping */
        else if (below_mapped)
            ours = strcmp(bperm, "---p") == 0;        /* a PROT_NONE page below */
        printf("guard %s: guard below the stack: %s\n", r->label, ours ? "yes" : "none");
        CHECK(!ours);
    }
    return NULL;
}

/* On a caller's stack: its guard size is reported, none is added. */
static void *body_user(void *arg)
{
    (void)arg;
    pthread_attr_t a;
    size_t guard = 1;
    CHECK(pthread_getattr_np(pthread_self(), &a) == 0);
    CHECK(pthread_attr_getguardsize(&a, &guard) == 0);
    pthread_attr_destroy(&a);
    printf("guard user stack: reported %zu\n", guard);
    return NULL;
}

int main(void)
{
    check_start("guard");
    pg = (size_t)sysconf(_SC_PAGESIZE);
    struct req reqs[] = {
        { 0, "0" }, { 1, "1 byte" }, { pg, "1 page" }, { 64 * 1024, "64 KiB" },
    };
    for (size_t i = 0; i < sizeof reqs / sizeof reqs[0]; i++) {
        pthread_attr_t a;
        pthread_t t;
        CHECK(pthread_attr_init(&a) == 0);
        CHECK(pthread_attr_setstacksize(&a, 256 * 1024) == 0);
        CHECK(pthread_attr_setguardsize(&a, reqs[i].guard) == 0);
        /* The thread prints: the results are printed after it is done. */
        int rc = pthread_create(&t, &a, body, &reqs[i]);
        int rj = rc ? 0 : pthread_join(t, NULL);
        EXPECT("create", rc, 0);
        EXPECT("join", rj, 0);
        pthread_attr_destroy(&a);
    }
    /* A caller's stack: the guard size is ignored, none is reported. */
    pthread_attr_t a;
    pthread_t t;
    size_t ssz = 256 * 1024;
    void *mem = NULL;
    CHECK(posix_memalign(&mem, pg, ssz) == 0);
    CHECK(pthread_attr_init(&a) == 0);
    CHECK(pthread_attr_setstack(&a, mem, ssz) == 0);
    CHECK(pthread_attr_setguardsize(&a, 64 * 1024) == 0);
    int rc = pthread_create(&t, &a, body_user, NULL);
    int rj = rc ? 0 : pthread_join(t, NULL);
    EXPECT("create", rc, 0);
    EXPECT("join", rj, 0);
    pthread_attr_destroy(&a);
    free(mem);
    return check_end("guard");
}
