/*
 * others.c -- other live cpumgr daemons on the same CPUs (others.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "masks.h"
#include "others.h"
#include "segment.h"

#define SHM_DIR "/dev/shm"
#define OTHERS_MAX 8 /* lines said; the rest counted */

/* The header and CPU set of the daemon of /dev/shm/<ent>, if it is a live
 * cpumgr's segment of our layout: 1 and cpus filled, else 0. */
static int live_daemon(const char *ent, struct nth_cpumgr_shm *buf, hwloc_bitmap_t cpus)
{
    char path[sizeof SHM_DIR + 256];
    if ((size_t)snprintf(path, sizeof path, SHM_DIR "/%s", ent) >= sizeof path)
        return 0;
    /* O_NONBLOCK: a FIFO someone left there must not hang our start. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size == sizeof *buf)
        n = pread(fd, buf, sizeof *buf, 0);
    close(fd);
    char msg[160];
    if (n != (ssize_t)sizeof *buf || cm_seg_check(buf, sizeof *buf, msg, sizeof msg) != 0)
        return 0;
    if (buf->daemon_state == NTH_CPUMGR_DAEMON_STOPPED || !cm_seg_daemon_alive(buf))
        return 0;
    cm_mask_to_bitmap(buf->cpus, cpus);
    return 1;
}

int cm_others_report(const char *self, hwloc_const_bitmap_t owned)
{
    DIR *dir = opendir(SHM_DIR);
    if (!dir)
        return 0;
    /* Aligned as the type asks (UBSan: misaligned member access). */
    struct nth_cpumgr_shm *buf = aligned_alloc(_Alignof(struct nth_cpumgr_shm), sizeof *buf);
    hwloc_bitmap_t cpus = hwloc_bitmap_alloc(), both = hwloc_bitmap_alloc();
    int said = 0, more = 0;
    pid_t me = getpid();
    struct dirent *e;
    while (buf && cpus && both && (e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, self + 1) == 0)
            continue;
        if (e->d_type != DT_REG && e->d_type != DT_UNKNOWN)
            continue;
        if (!live_daemon(e->d_name, buf, cpus) || buf->daemon_pid == me)
            continue;
        hwloc_bitmap_and(both, cpus, owned);
        if (hwloc_bitmap_iszero(both))
            continue;
        if (said == OTHERS_MAX) {
            more++;
            continue;
        }
        char list[256];
        hwloc_bitmap_list_snprintf(list, sizeof list, both);
        fprintf(stderr, "cpumgr: note: another cpumgr (pid %d) on /%s also manages CPU%s %s: "
                "the applications of each get them, unaware of the other's\n",
                (int)buf->daemon_pid, e->d_name, hwloc_bitmap_weight(both) > 1 ? "s" : "", list);
        said++;
    }
    if (more)
        fprintf(stderr, "cpumgr: note: %d more cpumgr daemons manage some of these CPUs\n", more);
    hwloc_bitmap_free(both);
    hwloc_bitmap_free(cpus);
    free(buf);
    closedir(dir);
    return said + more;
}
