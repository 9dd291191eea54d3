/*
 * segment.c -- POSIX shared memory (shm_open(3)) for the cpumgr segment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "segment.h"

int cm_seg_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n < 2 || n > 200 || name[0] != '/' || strchr(name + 1, '/'))
        return EINVAL;
    return 0;
}

int cm_seg_check(const struct nth_cpumgr_shm *s, size_t size, char *msg, size_t msglen)
{
    if (size < offsetof(struct nth_cpumgr_shm, size) + sizeof s->size ||
        s->magic != NTH_CPUMGR_MAGIC) {
        snprintf(msg, msglen, "not a cpumgr segment (bad magic or too small)");
        return EPROTO;
    }
    if (s->layout_version != NTH_CPUMGR_LAYOUT_VERSION) {
        snprintf(msg, msglen, "segment has layout version %u, this cpumgr speaks version %u",
                 s->layout_version, NTH_CPUMGR_LAYOUT_VERSION);
        return EPROTO;
    }
    if (size < sizeof *s || s->size != sizeof *s || s->max_slots != NTH_CPUMGR_MAX_SLOTS) {
        snprintf(msg, msglen, "segment size %zu / slots %u do not match layout version %u",
                 size, s->max_slots, NTH_CPUMGR_LAYOUT_VERSION);
        return EPROTO;
    }
    return 0;
}

int cm_seg_open(const char *name, struct nth_cpumgr_shm **out, char *msg, size_t msglen)
{
    return cm_seg_open_fd(name, out, NULL, msg, msglen);
}

int cm_seg_open_fd(const char *name, struct nth_cpumgr_shm **out, int *keep_fd, char *msg,
                   size_t msglen)
{
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        /* glibc's shm_open says EINVAL for a directory ("Invalid
         * argument"): name it, as the runtime's client does. */
        char path[300];
        struct stat ds;
        if (e == EINVAL && (size_t)snprintf(path, sizeof path, "/dev/shm%s", name) < sizeof path &&
            stat(path, &ds) == 0 && S_ISDIR(ds.st_mode)) {
            snprintf(msg, msglen, "/dev/shm%s is a directory, not a cpumgr segment", name);
            return EISDIR;
        }
        snprintf(msg, msglen, "%s", strerror(e));
        return e;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(uint64_t) + sizeof(uint32_t)) {
        close(fd);
        snprintf(msg, msglen, "not a cpumgr segment (too small)");
        return EPROTO;
    }
    size_t size = (size_t)st.st_size;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    if (p == MAP_FAILED) {
        close(fd);
        snprintf(msg, msglen, "mmap: %s", strerror(e));
        return e;
    }
    int rc = cm_seg_check(p, size, msg, msglen);
    if (rc) {
        close(fd);
        munmap(p, size);
        return rc;
    }
    if (keep_fd)
        *keep_fd = fd;
    else
        close(fd);
    *out = p;
    return 0;
}

int cm_seg_create(const char *name, gid_t gid, struct nth_cpumgr_shm **out)
{
    mode_t mode = gid == (gid_t)-1 ? 0600 : 0660;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return errno;
    int e = 0;
    /* fchmod: the umask must not widen or narrow the rule. */
    if ((gid != (gid_t)-1 && fchown(fd, (uid_t)-1, gid) != 0) || fchmod(fd, mode) != 0 ||
        ftruncate(fd, sizeof(struct nth_cpumgr_shm)) != 0)
        e = errno;
    void *p = MAP_FAILED;
    if (!e) {
        p = mmap(NULL, sizeof(struct nth_cpumgr_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            e = errno;
    }
    close(fd);
    if (e) {
        shm_unlink(name);
        return e;
    }
    *out = p;
    return 0;
}

void cm_seg_unmap(struct nth_cpumgr_shm *s)
{
    if (s)
        munmap(s, sizeof *s);
}

int cm_seg_daemon_alive(const struct nth_cpumgr_shm *s)
{
    int32_t pid = __atomic_load_n(&s->daemon_pid, __ATOMIC_ACQUIRE);
    uint64_t st = __atomic_load_n(&s->daemon_start_time, __ATOMIC_ACQUIRE);
    return pid > 0 && st != 0 && nth_cpumgr_proc_start_time(pid) == st;
}

void cm_seg_header_write(struct nth_cpumgr_shm *s, const struct nth_cpumgr_shm_hdr *h)
{
    /* Magic and version last: a reader that sees them good sees the rest. */
    __atomic_store_n(&s->size, h->size, __ATOMIC_RELAXED);
    __atomic_store_n(&s->max_slots, h->max_slots, __ATOMIC_RELAXED);
    __atomic_store_n(&s->ncpus, h->ncpus, __ATOMIC_RELAXED);
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
        __atomic_store_n(&s->cpus[w], h->cpus[w], __ATOMIC_RELAXED);
    __atomic_store_n(&s->epoch, h->epoch, __ATOMIC_RELAXED);
    __atomic_store_n(&s->period_ms, h->period_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&s->exit_grace_ms, h->exit_grace_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&s->daemon_start_time, h->daemon_start_time, __ATOMIC_RELAXED);
    __atomic_store_n(&s->daemon_pid, h->daemon_pid, __ATOMIC_RELAXED);
    for (unsigned w = 0; w < sizeof s->reserved / sizeof s->reserved[0]; w++)
        __atomic_store_n(&s->reserved[w], 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->layout_version, h->layout_version, __ATOMIC_RELEASE);
    __atomic_store_n(&s->magic, h->magic, __ATOMIC_RELEASE);
    __atomic_store_n(&s->daemon_state, h->daemon_state, __ATOMIC_RELEASE);
}

int cm_seg_header_repair(struct nth_cpumgr_shm *s, const struct nth_cpumgr_shm_hdr *h,
                         char *what, size_t whatlen)
{
    int bad = 0;
#define CM_HDR_CMP(field, have, want)                                                        \
    do {                                                                                     \
        unsigned long long hv_ = (unsigned long long)(have), wv_ = (unsigned long long)(want); \
        if (hv_ != wv_ && bad++ == 0)                                                        \
            snprintf(what, whatlen, "%s is %#llx, should be %#llx", field, hv_, wv_);         \
    } while (0)
    CM_HDR_CMP("magic", __atomic_load_n(&s->magic, __ATOMIC_RELAXED), h->magic);
    CM_HDR_CMP("layout_version", __atomic_load_n(&s->layout_version, __ATOMIC_RELAXED),
               h->layout_version);
    CM_HDR_CMP("size", __atomic_load_n(&s->size, __ATOMIC_RELAXED), h->size);
    CM_HDR_CMP("max_slots", __atomic_load_n(&s->max_slots, __ATOMIC_RELAXED), h->max_slots);
    CM_HDR_CMP("ncpus", __atomic_load_n(&s->ncpus, __ATOMIC_RELAXED), h->ncpus);
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
        CM_HDR_CMP("cpus[]", __atomic_load_n(&s->cpus[w], __ATOMIC_RELAXED), h->cpus[w]);
    CM_HDR_CMP("epoch", __atomic_load_n(&s->epoch, __ATOMIC_RELAXED), h->epoch);
    CM_HDR_CMP("daemon_pid", (uint32_t)__atomic_load_n(&s->daemon_pid, __ATOMIC_RELAXED),
               (uint32_t)h->daemon_pid);
    CM_HDR_CMP("daemon_state", __atomic_load_n(&s->daemon_state, __ATOMIC_RELAXED),
               h->daemon_state);
    CM_HDR_CMP("daemon_start_time", __atomic_load_n(&s->daemon_start_time, __ATOMIC_RELAXED),
               h->daemon_start_time);
    CM_HDR_CMP("period_ms", __atomic_load_n(&s->period_ms, __ATOMIC_RELAXED), h->period_ms);
    CM_HDR_CMP("exit_grace_ms", __atomic_load_n(&s->exit_grace_ms, __ATOMIC_RELAXED),
               h->exit_grace_ms);
    for (unsigned w = 0; w < sizeof s->reserved / sizeof s->reserved[0]; w++)
        CM_HDR_CMP("reserved[]", __atomic_load_n(&s->reserved[w], __ATOMIC_RELAXED), 0);
#undef CM_HDR_CMP
    if (bad)
        cm_seg_header_write(s, h);
    return bad;
}

pid_t cm_seg_slot_locker(int fd, unsigned i)
{
    if (fd < 0 || i >= NTH_CPUMGR_MAX_SLOTS)
        return -1;
    /* A write lock conflicts with any read lock a client holds there. */
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    nth_cpumgr_slot_lock_range(i, &fl.l_start, &fl.l_len);
    if (fcntl(fd, F_GETLK, &fl) != 0)
        return -1;
    return fl.l_type == F_UNLCK ? 0 : fl.l_pid;
}
