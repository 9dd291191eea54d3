/*
 * trace_claim.c -- one live process per NTH_TRACE name. Two unrelated
 * processes started with the same NTH_TRACE (two shells, a batch script
 * starting the same program twice) both wrote NAME at exit: the second
 * silently replaced the first's trace (a .bin trace: its O_TRUNC even cut
 * the first's binary file while that one still wrote it). A process tree
 * had its rule already (NTH_TRACE_MAIN_PID); unrelated processes share no
 * environment, so the name is claimed where every process sees it.
 *
 * The claim is a Linux abstract Unix socket (unix(7)) named after the
 * output's directory (device and inode: every path to it gives the same
 * name) and file name: bind(2) is atomic, so of two processes starting at
 * once exactly one gets it; the kernel drops it when the process ends, by
 * any way, SIGKILL included, so no stale lock file is ever left in the
 * user's directory and a later run of the same program writes NAME again.
 * Abstract sockets are per network namespace: processes in two containers
 * sharing a directory do not see each other's claims.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "trace_rt.h"

int nth_trace_claim_name(const char *abs_path)
{
    const char *slash = strrchr(abs_path, '/');
    if (!slash || !slash[1])
        return -2;
    size_t dlen = slash == abs_path ? 1 : (size_t)(slash - abs_path);
    char *dir = strndup(abs_path, dlen);
    if (!dir)
        return -2;
    struct stat st;
    int ok = stat(dir, &st) == 0;
    free(dir);
    if (!ok)
        return -2;   /* opening the binary file will say why */
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    /* sun_path[0] = 0: abstract. A long file name is hashed (FNV-1a, 64
     * bits) to fit the 107 bytes. */
    const char *base = slash + 1;
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "nthlib-trace:%" PRIx64 ":%" PRIx64 "/%s",
                     (uint64_t)st.st_dev, (uint64_t)st.st_ino, base);
    if (n < 0 || (size_t)n >= sizeof a.sun_path - 1) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (const char *c = base; *c; c++)
            h = (h ^ (unsigned char)*c) * 0x100000001b3ull;
        n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "nthlib-trace:%" PRIx64 ":%" PRIx64 "/#%016" PRIx64,
                     (uint64_t)st.st_dev, (uint64_t)st.st_ino, h);
    }
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -2;   /* no sockets here (a seccomp filter): no claim, as before */
    if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0)
        return fd;   /* held until this process ends: never closed */
    int e = errno;
    close(fd);
    return e == EADDRINUSE ? -1 : -2;
}
