/*
 * libc_real.h -- libc's own functions for the runtime's internal use.
 *
 * Under LD_PRELOAD=libnth-pthread.so the shim precedes libc and libnth in
 * the lookup order, so libnth's plain calls to pthread_create, sched_yield
 * or write bind to the shim's nano-thread versions, and dlsym(RTLD_NEXT)
 * from libnth finds nothing (libc precedes libnth). The runtime's kernel
 * threads (VPs, blocking spares, the trace writer, the cpumgr watcher) and
 * its own yields and writes must reach libc: these helpers are the one
 * place that says how.
 */
#ifndef NTH_LIBC_REAL_H
#define NTH_LIBC_REAL_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

typedef int (*nth_pthread_create_fn)(pthread_t *, const pthread_attr_t *,
                                     void *(*)(void *), void *);
typedef int (*nth_pthread_detach_fn)(pthread_t);

/* The address of libc's NAME (looked up in libc.so.6 itself, not along the
 * lookup order), or NULL if libc has none. Thread-safe. In sanitizer
 * builds, the sanitizer runtime's interceptor of NAME when it has one
 * (__interceptor_NAME): the sanitizers must see the runtime's threads. */
void *nth_libc_sym(const char *name);

/* libc's pthread_create / pthread_detach (never NULL: falls back to the
 * symbol the link bound). Thread-safe. */
nth_pthread_create_fn nth_libc_pthread_create(void);
nth_pthread_detach_fn nth_libc_pthread_detach(void);

/* sched_yield(2) and write(2) as raw system calls, so that no interposed
 * definition runs. Return and errno as the system calls'. Async-signal-safe. */
int nth_sys_yield(void);
ssize_t nth_sys_write(int fd, const void *buf, size_t n);

/* read(2) as a raw system call, for the same reason: under the pthread
 * shim a plain read() from libnth binds to the shim's wrapper, which must
 * then guess from the caller's address whether the runtime called it (it
 * cannot for a statically linked libnth, nor through a wrapper that calls
 * another). Return and errno as read(2)'s. Async-signal-safe. */
ssize_t nth_sys_read(int fd, void *buf, size_t n);

/* Sleep ns nanoseconds on CLOCK_MONOTONIC in the kernel, resuming after a
 * signal (clock_nanosleep(2) as a raw system call: never the shim's
 * nanosleep, which would make a nano-thread sleep of it when the caller
 * looks like a nano-thread). ns <= 0 returns at once. For the runtime's
 * helper kernel threads (the stall monitor). Async-signal-safe. */
void nth_sys_sleep_ns(int64_t ns);

/* For the runtime's helper kernel threads that never run nano-threads
 * (the stall monitor, the cpumgr watcher): block every signal but glibc's
 * internal ones on the calling kernel thread, so that a process-directed
 * signal goes to a thread of the program and never runs its handler
 * there. *old (if not NULL) gets the previous mask. A raw system call:
 * under the pthread shim pthread_sigmask is the shim's. */
void nth_helper_block_signals(sigset_t *old);

/* Start a helper kernel thread (the stall monitor, a stand-in, the cpumgr
 * watcher) with libc's pthread_create, born with every signal but glibc's
 * internal ones blocked: a new thread starts with its creator's mask, and a
 * creator that is a nano-thread (or main at start-up) may leave signals
 * open that the program blocks everywhere else; until the new thread
 * blocked them itself, a process-directed signal meant for a sigwait
 * could land there and end the process by its default action (seen under
 * the pthread shim: a stand-in made while one nano-thread left SIGRTMIN
 * open, scheduled late on a loaded machine). The creator's mask is put
 * back before this returns. Returns pthread_create's result, or ENOMEM.
 * Thread-safe. */
/* A raw signal mask (bit sig-1) with every signal blocked but glibc's
 * SIGSETXID (33), for a kernel thread about to call libc's
 * pthread_create: that call waits for glibc's stack-cache lock, which a
 * set*id() on another thread holds while it waits for each thread to run
 * the SIGSETXID handler; with 33 blocked the two wait for each other (a
 * setegid() in a shim program hung while the watchdog made a stand-in). */
#define NTH_BLOCK_ALL_BUT_SETXID (~(1ULL << (33 - 1)))
int nth_helper_thread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
/* Helper threads that found a signal open at their first instruction
 * (besides glibc's internal ones, SIGKILL and SIGSTOP): 0 unless the mask
 * leaked; tests read it. Atomic. */
extern unsigned long nth_helper_born_open;

#endif
