/*
 * cpumask.c -- the process's CPU mask, where a program or its children
 * look for it: sched_getaffinity(2) on the process, and the programs it
 * starts with exec(3), posix_spawn(3), system(3) and popen(3).
 *
 * Each VP's kernel thread is bound to one CPU (NTH_BIND=cpu), main's
 * among them. The kernel hands the calling kernel thread's mask to what
 * it execs and to a vfork-style child (glibc's posix_spawn, which system
 * and popen use, runs no atfork handler), so without these wrappers every
 * program started from a shim process ran on one CPU, and `nproc` or a
 * pool sized from sched_getaffinity(0) counted one. The fork() path is
 * repaired by nthlib's own atfork child handler (nthlib/vp.c). The
 * process's mask is the one it started with, or the last one it gave
 * itself with sched_setaffinity (taskset(1) does, then execs).
 */
#include <dlfcn.h>
#include <spawn.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "shim.h"

extern cpu_set_t shim_process_cpus;

/* The calling kernel thread's mask, put back by rebind(). */
struct unbound {
    pid_t tid;                   /* 0: nothing to put back */
    cpu_set_t old;
};

/* Give the calling kernel thread the process's mask for a call that
 * starts a program. Raw system calls: async-signal-safe, so also right in
 * a vfork child, and never the shim's sched_getaffinity. errno kept. */
static void unbind(struct unbound *u)
{
    u->tid = 0;
    if (CPU_COUNT(&shim_process_cpus) == 0)
        return;                  /* the mask was not known at start-up */
    int e = errno;
    CPU_ZERO(&u->old);
    if (syscall(SYS_sched_getaffinity, 0, sizeof u->old, &u->old) > 0 &&
        !CPU_EQUAL(&u->old, &shim_process_cpus) &&
        syscall(SYS_sched_setaffinity, 0, sizeof shim_process_cpus, &shim_process_cpus) == 0)
        u->tid = (pid_t)syscall(SYS_gettid);
    errno = e;
}

/* After the call returned: the kernel thread's binding back (by its id:
 * a nano-thread that migrated meanwhile must not rebind another VP).
 * errno kept. */
static void rebind(const struct unbound *u)
{
    if (!u->tid)
        return;
    int e = errno;
    (void)syscall(SYS_sched_setaffinity, u->tid, sizeof u->old, &u->old);
    errno = e;
}

/* ---- hwloc's calls are the runtime's ------------------------------------ */

/* The runtime binds each VP's kernel thread with hwloc_set_cpubind, which
 * calls sched_setaffinity(0) from libhwloc: that is no program changing
 * the process's mask. libhwloc's code range, found at start-up (no dlsym
 * later: a dlopen on another kernel thread may hold its lock). */
static uintptr_t hwloc_lo, hwloc_hi;

void shim_cpumask_init(void)
{
    void *f = dlsym(RTLD_DEFAULT, "hwloc_set_cpubind");
    if (f)
        shim_code_range(f, &hwloc_lo, &hwloc_hi);
}

/* The caller of a wrapper is the runtime (libnth) or hwloc on its behalf. */
static int runtime_or_hwloc(const void *ra)
{
    return shim_runtime_caller(ra) || (uintptr_t)ra - hwloc_lo < hwloc_hi - hwloc_lo;
}

/* ---- sched_getaffinity ------------------------------------------------------ */

/* sched_getaffinity(2) of the process (pid 0 or getpid()): the mask the
 * process had when the shim started, not the CPU of the VP the caller
 * happens to run on (nano-threads move between VPs; POSIX threads are
 * not bound unless asked). Errors are the kernel's (libc's call is made
 * first: EINVAL for a size below the kernel's mask, EFAULT, ESRCH).
 * Another thread id gets that kernel thread's real mask. Thread-safe. */
SHIM_DECL(sched_getaffinity)
int nth_shim_sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
    int r = REAL(sched_getaffinity)(pid, size, set);
    if (r != 0 || (pid != 0 && pid != getpid()) || CPU_COUNT(&shim_process_cpus) == 0)
        return r;
    memset(set, 0, size);
    memcpy(set, &shim_process_cpus, size < sizeof shim_process_cpus ? size : sizeof shim_process_cpus);
    return 0;
}
SHIM_EXPORT(sched_getaffinity)

/* sched_setaffinity(2), libc's call; when it names the process (pid 0 or
 * getpid()) and succeeds, what the kernel applied (the mask read back,
 * i.e. the given one within the online CPUs) becomes the process's mask
 * that sched_getaffinity reports and exec and spawn hand on: taskset(1)
 * and similar launchers set their mask, then exec, and the program they
 * start must get that mask, not the one they started with. The call
 * itself still binds the kernel thread that runs the caller (a VP) as
 * libc's does. The runtime's own calls (libnth, hwloc binding a VP)
 * change nothing here. Errors are the kernel's (EINVAL, EFAULT, EPERM, ESRCH).
 * Thread-safe as a call; a concurrent exec or sched_getaffinity may read
 * a mask half-updated (a program that changes its mask while another
 * thread starts a child). */
SHIM_DECL(sched_setaffinity)
int nth_shim_sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
    int r = REAL(sched_setaffinity)(pid, size, set);
    if (r == 0 && (pid == 0 || pid == getpid()) && !runtime_or_hwloc(__builtin_return_address(0))) {
        int e = errno;
        cpu_set_t now;
        CPU_ZERO(&now);
        if (syscall(SYS_sched_getaffinity, pid, sizeof now, &now) > 0 && CPU_COUNT(&now) > 0)
            memcpy(&shim_process_cpus, &now, sizeof now);
        errno = e;
    }
    return r;
}
SHIM_EXPORT(sched_setaffinity)

/* ---- exec: the new program gets the process's mask ------------------------ */

/* Each exec function calls libc's own (which execs with an internal call,
 * never through these wrappers), after unbind(); rebind() only when the
 * exec failed. Errors and errno are libc's (execve(2)). As thread-safe as
 * libc's. */
SHIM_DECL(execve)
int nth_shim_execve(const char *path, char *const argv[], char *const envp[])
{
    struct unbound u;
    unbind(&u);
    int r = REAL(execve)(path, argv, envp);
    rebind(&u);
    return r;
}
SHIM_EXPORT(execve)

SHIM_DECL(execv)
int nth_shim_execv(const char *path, char *const argv[])
{
    struct unbound u;
    unbind(&u);
    int r = REAL(execv)(path, argv);
    rebind(&u);
    return r;
}
SHIM_EXPORT(execv)

SHIM_DECL(execvp)
int nth_shim_execvp(const char *file, char *const argv[])
{
    struct unbound u;
    unbind(&u);
    int r = REAL(execvp)(file, argv);
    rebind(&u);
    return r;
}
SHIM_EXPORT(execvp)

SHIM_DECL(execvpe)
int nth_shim_execvpe(const char *file, char *const argv[], char *const envp[])
{
    struct unbound u;
    unbind(&u);
    int r = REAL(execvpe)(file, argv, envp);
    rebind(&u);
    return r;
}
SHIM_EXPORT(execvpe)

SHIM_DECL(fexecve)
int nth_shim_fexecve(int fd, char *const argv[], char *const envp[])
{
    struct unbound u;
    unbind(&u);
    int r = REAL(fexecve)(fd, argv, envp);
    rebind(&u);
    return r;
}
SHIM_EXPORT(fexecve)

SHIM_DECL(execveat)
int nth_shim_execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags)
{
    struct unbound u;
    unbind(&u);
    int r = REAL(execveat)(dirfd, path, argv, envp, flags);
    rebind(&u);
    return r;
}
SHIM_EXPORT(execveat)

/* execl, execlp, execle: the list collected into an array on the stack
 * (no malloc: exec may follow vfork), then the array forms above. */
#define COLLECT_ARGS(first, last_named, argv, envp_out)                     \
    size_t n_ = 1;                                                          \
    va_list ap_;                                                            \
    va_start(ap_, last_named);                                              \
    while (va_arg(ap_, const char *) != NULL)                               \
        n_++;                                                               \
    va_end(ap_);                                                            \
    const char *argv[n_ + 1];                                               \
    argv[0] = (first);                                                      \
    va_start(ap_, last_named);                                              \
    for (size_t i_ = 1; i_ <= n_; i_++)                                     \
        argv[i_] = va_arg(ap_, const char *);                               \
    envp_out;                                                               \
    va_end(ap_)

SHIM_DECL(execl)
int nth_shim_execl(const char *path, const char *arg, ...)
{
    COLLECT_ARGS(arg, arg, argv, (void)0);
    return nth_shim_execv(path, (char *const *)argv);
}
SHIM_EXPORT(execl)

SHIM_DECL(execlp)
int nth_shim_execlp(const char *file, const char *arg, ...)
{
    COLLECT_ARGS(arg, arg, argv, (void)0);
    return nth_shim_execvp(file, (char *const *)argv);
}
SHIM_EXPORT(execlp)

SHIM_DECL(execle)
int nth_shim_execle(const char *path, const char *arg, ...)
{
    char *const *envp;
    COLLECT_ARGS(arg, arg, argv, envp = va_arg(ap_, char *const *));
    return nth_shim_execve(path, (char *const *)argv, envp);
}
SHIM_EXPORT(execle)

/* ---- spawn: the child gets the process's mask ----------------------------- */

/* posix_spawn(3), posix_spawnp(3), system(3), popen(3): libc's, with the
 * caller's kernel thread unbound for the call (the child is a vfork-style
 * clone of it). Results and errors are libc's. As thread-safe as libc's;
 * another nano-thread that runs on the same VP meanwhile is unbound too,
 * for that time only (a placement, not a correctness matter). */
SHIM_DECL(posix_spawn)
int nth_shim_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                         const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    struct unbound u;
    unbind(&u);
    int r = REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
    rebind(&u);
    return r;
}
SHIM_EXPORT(posix_spawn)

SHIM_DECL(posix_spawnp)
int nth_shim_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                          const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    struct unbound u;
    unbind(&u);
    int r = REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
    rebind(&u);
    return r;
}
SHIM_EXPORT(posix_spawnp)

SHIM_DECL(system)
int nth_shim_system(const char *command)
{
    struct unbound u;
    unbind(&u);
    int r = REAL(system)(command);
    rebind(&u);
    return r;
}
SHIM_EXPORT(system)

SHIM_DECL(popen)
FILE *nth_shim_popen(const char *command, const char *type)
{
    struct unbound u;
    unbind(&u);
    FILE *f = REAL(popen)(command, type);
    rebind(&u);
    return f;
}
SHIM_EXPORT(popen)
