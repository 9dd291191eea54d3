/*
 * client_app.c -- a malleable application for the integration tests. It
 * attaches through libnth's cpumgr client, obeys commands on stdin
 * ("request N", "prio P", "exit") and prints one line per change of what
 * it knows: "A=<attached> N=<assigned CPUs> CPUS=<list>".
 * It plays the runtime's part: poll at "scheduling points", tick every ms.
 *
 * usage: client_app NAME REQUEST [PRIORITY]
 * CLIENT_HOME=CPU in the environment: the home CPU it tells the daemon
 * (nth_cpumgr_client_set_home), as the runtime tells its VP 0's.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "nth.h"
#include "cpumgr_client.h"

static int calls;
static void on_assign(hwloc_const_bitmap_t cpus, void *arg)
{
    (void)cpus;
    (void)arg;
    calls++;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: client_app NAME REQUEST [PRIORITY]\n");
        return 2;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the test */
    const char *home = getenv("CLIENT_HOME");
    if (home)
        nth_cpumgr_client_set_home(atoi(home));
    nth_cpumgr_client_init(argv[1]);
    nth_cpumgr_set_assign_callback(on_assign, NULL);
    if (nth_cpus_request(atoi(argv[2])) != 0)
        return 3;
    if (argc > 3 && nth_set_priority(atoi(argv[3])) != 0)
        return 3;
    char last[512] = "", line[512], cmd[128];
    size_t cl = 0;
    for (;;) {
        struct pollfd p = {0, POLLIN, 0};
        if (poll(&p, 1, 1) > 0) {
            char c;
            ssize_t r = read(0, &c, 1);
            if (r <= 0)
                break; /* the test closed our stdin: leave */
            if (c != '\n' && cl < sizeof cmd - 1) {
                cmd[cl++] = c;
                continue;
            }
            cmd[cl] = 0;
            cl = 0;
            int v;
            if (sscanf(cmd, "request %d", &v) == 1)
                printf("rc=%d\n", nth_cpus_request(v));
            else if (sscanf(cmd, "prio %d", &v) == 1)
                printf("rc=%d\n", nth_set_priority(v));
            else if (strcmp(cmd, "exit") == 0)
                break;
            fflush(stdout);
        }
        nth_cpumgr_poll();
        nth_cpumgr_tick();
        hwloc_bitmap_t m;
        if (nth_cpus_assigned_mask(&m) != 0)
            continue;
        char list[256];
        hwloc_bitmap_list_snprintf(list, sizeof list, m);
        hwloc_bitmap_free(m);
        snprintf(line, sizeof line, "A=%d N=%d CPUS=%s", nth_cpumgr_attached(),
                 nth_cpus_assigned(), list);
        if (strcmp(line, last) != 0) {
            printf("%s\n", line);
            fflush(stdout);
            strcpy(last, line);
        }
    }
    nth_cpumgr_client_fini();
    return calls > 0 ? 0 : 4;
}
