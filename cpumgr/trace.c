/*
 * trace.c -- the daemon's grant trace. Counter records of kind
 * NTH_CTR_GRANT with the application's pid as key, and one NAME record per
 * pid the first time it is granted (and again when a pid comes back with
 * another name: pids are recycled).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../nthlib/trace_format.h"
#include "nth/cpumgr_shm.h"
#include "trace.h"

static int fd = -1;
static int begun;    /* header written: the end record is due */
static struct { int32_t pid; char name[NTH_CPUMGR_NAME_LEN]; } named[NTH_CPUMGR_MAX_SLOTS];

static uint64_t now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int put(const void *p, size_t n)
{
    return write(fd, p, n) == (ssize_t)n ? 0 : (errno ? errno : EIO);
}

int cm_trace_open(const char *path, int *created)
{
    *created = 0;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0)
        *created = 1;
    else if (errno == EEXIST)
        fd = open(path, O_WRONLY | O_CLOEXEC);
    return fd < 0 ? errno : 0;
}

int cm_trace_begin(void)
{
    if (ftruncate(fd, 0) != 0) {
        int e = errno;
        close(fd);
        fd = -1;
        return e;
    }
    struct nth_trace_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, NTH_TRACE_MAGIC, sizeof h.magic);
    h.version = NTH_TRACE_VERSION;
    h.record_size = sizeof(struct nth_trace_rec);
    h.pid = (uint32_t)getpid();
    h.flags = NTH_TRACE_FLAG_CPUMGR;
    h.mono_start_ns = now(CLOCK_MONOTONIC);
    h.real_start_ns = now(CLOCK_REALTIME);
    gethostname(h.host, sizeof h.host - 1);
    int rc = put(&h, sizeof h);
    if (rc) {
        close(fd);
        fd = -1;
    } else {
        begun = 1;
    }
    return rc;
}

/* Name records are written only when a pid's name is new to the file. */
static void name_app(int32_t pid, const char *name)
{
    unsigned slot = (unsigned)pid % NTH_CPUMGR_MAX_SLOTS;
    if (named[slot].pid == pid && strncmp(named[slot].name, name, sizeof named[slot].name) == 0)
        return;
    named[slot].pid = pid;
    strncpy(named[slot].name, name, sizeof named[slot].name - 1);
    size_t len = strnlen(name, NTH_CPUMGR_NAME_LEN - 1);
    struct nth_trace_rec r[1 + (NTH_CPUMGR_NAME_LEN + sizeof(struct nth_trace_rec) - 1) / sizeof(struct nth_trace_rec)];
    size_t payload = (len + sizeof r[0] - 1) / sizeof r[0];
    memset(r, 0, sizeof r);
    r[0] = (struct nth_trace_rec){ .ts = now(CLOCK_MONOTONIC), .type = NTH_REC_NAME, .vp = NTH_TRACE_NO_VP,
                                   .arg = (uint32_t)NTH_NAME_APP << 16 | (uint32_t)len, .id = (uint64_t)pid };
    memcpy(&r[1], name, len);
    (void)put(r, (1 + payload) * sizeof r[0]);
}

void cm_trace_grant(int32_t pid, const char *name, unsigned cpus)
{
    if (fd < 0 || pid <= 0)
        return;
    name_app(pid, name);
    struct nth_trace_rec r = { .ts = now(CLOCK_MONOTONIC), .type = NTH_REC_COUNTER, .vp = NTH_TRACE_NO_VP,
                               .arg = NTH_CTR_GRANT, .id = (uint64_t)pid, .value = cpus };
    (void)put(&r, sizeof r);
}

void cm_trace_close(void)
{
    if (fd < 0)
        return;
    if (begun) {
        struct nth_trace_rec r = { .ts = now(CLOCK_MONOTONIC), .type = NTH_REC_END, .vp = NTH_TRACE_NO_VP };
        (void)put(&r, sizeof r);
    }
    close(fd);
    fd = -1;
    begun = 0;
}
