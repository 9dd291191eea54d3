/*
 * accounting.c -- CPU-seconds allocated, appended as CSV. The name is
 * client-written: commas, quotes and control bytes are replaced so a line
 * stays one record.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "accounting.h"

int cm_account_check(const char *path, int *created)
{
    *created = 0;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0)
        *created = 1;
    else if (errno == EEXIST)
        fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0)
        return errno;
    close(fd);
    return 0;
}

int cm_account(const char *path, const char *name, int32_t pid, int priority,
               int request, uint64_t cpu_ns, const char *reason)
{
    if (!path)
        return 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    char clean[64];
    size_t k = 0;
    for (const char *p = name; *p && k < sizeof clean - 1; p++)
        clean[k++] = (*p == ',' || *p == '"' || (unsigned char)*p < 32 || *p == 127) ? '_' : *p;
    clean[k] = 0;
    char line[256];
    int n = 0;
    struct stat st;
    if (fstat(fd, &st) == 0 && st.st_size == 0)
        n = snprintf(line, sizeof line, "end_unix_s,name,pid,priority,request,cpu_seconds,reason\n");
    n += snprintf(line + n, sizeof line - (size_t)n, "%lld,%s,%d,%d,%d,%.3f,%s\n",
                  (long long)time(NULL), clean, (int)pid, priority, request,
                  (double)cpu_ns / 1e9, reason);
    int rc = write(fd, line, (size_t)n) == n ? 0 : EIO;
    close(fd);
    return rc;
}
