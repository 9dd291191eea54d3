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
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(msg, msglen, "%s", strerror(errno));
        return errno;
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
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(msg, msglen, "mmap: %s", strerror(e));
        return e;
    }
    int rc = cm_seg_check(p, size, msg, msglen);
    if (rc) {
        munmap(p, size);
        return rc;
    }
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
