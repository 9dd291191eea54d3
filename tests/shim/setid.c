/*
 * setid.c -- set*id(2) in a process with threads changes the credentials
 * of every kernel thread (POSIX setuid(3p), setgid(3p): the ids are the
 * process's; glibc signals each of its threads with SIGSETXID to make the
 * per-thread system call there). Under the pthread shim the process's
 * kernel threads are the runtime's VPs and helpers; glibc had no handler
 * for SIGSETXID on them and set*id killed the process (signal 33).
 *
 * As root it drops to 65534 (nobody); otherwise it sets the ids it has,
 * which glibc broadcasts all the same. Checked three ways: the calls
 * return 0, every /proc/self/task entry shows the new ids, and threads
 * alive across the call and made after it see them (getuid/getgid as
 * system calls: the calling kernel thread's own).
 */
#include <dirent.h>
#include <pthread.h>
#include <sys/syscall.h>
#include "check.h"

static uid_t want_uid;
static gid_t want_gid;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int phase;            /* 0 wait, 1 ids changed: look, 2 end */
static int looked, wrong;

/* The calling kernel thread's own ids match the wanted ones. */
static int ids_ok(void)
{
    return (uid_t)syscall(SYS_getuid) == want_uid && (uid_t)syscall(SYS_geteuid) == want_uid &&
           (gid_t)syscall(SYS_getgid) == want_gid && (gid_t)syscall(SYS_getegid) == want_gid;
}

/* Alive across the set*id calls: waits, then looks. */
static void *waiter(void *arg)
{
    pthread_mutex_lock(&lock);
    while (phase == 0)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    int ok = ids_ok();
    pthread_mutex_lock(&lock);
    looked++;
    wrong += !ok;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    return arg;
}

static void *nothing(void *arg)
{
    return arg;
}

/* Made after the calls: looks at once. */
static void *late(void *arg)
{
    *(int *)arg = ids_ok();
    return NULL;
}

/* "Uid:" or "Gid:" line of a status file: all four ids equal want. */
static int status_ids(const char *path, const char *key, unsigned want)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;            /* the task ended meanwhile */
    char line[256];
    int ok = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0) {
            unsigned a, b, c, d;
            ok = sscanf(line + strlen(key), "%u %u %u %u", &a, &b, &c, &d) == 4 && a == want &&
                 b == want && c == want && d == want;
        }
    fclose(f);
    return ok;
}

/* Kernel threads of the process with other ids than the wanted ones. */
static int tasks_wrong(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int bad = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        bad += !status_ids(path, "Uid:", want_uid) || !status_ids(path, "Gid:", want_gid);
    }
    closedir(d);
    return bad;
}

int main(void)
{
    check_start("setid");
    int root = geteuid() == 0;
    want_uid = root ? 65534 : getuid();
    want_gid = root ? 65534 : getgid();

    /* One thread made and joined (the repro of the report), four alive. */
    pthread_t t, w[4];
    CHECK(pthread_create(&t, NULL, nothing, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&w[i], NULL, waiter, NULL) == 0);

    EXPECT_ERRNO("setegid", setegid(want_gid), 0);
    EXPECT_ERRNO("setgid", setgid(want_gid), 0);
    EXPECT_ERRNO("setuid", setuid(want_uid), 0);
    printf("main has the new ids: %s\n", ids_ok() ? "yes" : "no");
    CHECK(ids_ok());
    int bad = tasks_wrong();
    printf("kernel threads with other ids: %d\n", bad);
    CHECK(bad == 0);

    pthread_mutex_lock(&lock);
    phase = 1;
    pthread_cond_broadcast(&cond);
    while (looked < 4)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
    printf("threads alive across the calls with other ids: %d\n", wrong);
    CHECK(wrong == 0);
    for (int i = 0; i < 4; i++)
        CHECK(pthread_join(w[i], NULL) == 0);

    int late_ok[3] = { 0 };
    pthread_t l[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&l[i], NULL, late, &late_ok[i]) == 0);
    for (int i = 0; i < 3; i++)
        CHECK(pthread_join(l[i], NULL) == 0);
    printf("threads made after with the new ids: %d of 3\n", late_ok[0] + late_ok[1] + late_ok[2]);
    CHECK(late_ok[0] && late_ok[1] && late_ok[2]);
    return check_end("setid");
}
