/*
 * group.c -- `cpumgr --group GROUP`: name or number, existence and
 * membership, each refused with its own message (group.h).
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "group.h"

#define ACCEPTED "a group name or numeric group ID"

/* Is gid the caller's effective group or one of its supplementary ones? */
static int member(gid_t gid)
{
    if (getegid() == gid)
        return 1;
    int n = getgroups(0, NULL);
    if (n <= 0)
        return 0;
    gid_t *g = calloc((size_t)n, sizeof *g);
    int yes = 0;
    if (g && (n = getgroups(n, g)) > 0)
        for (int i = 0; i < n && !yes; i++)
            yes = g[i] == gid;
    free(g);
    return yes;
}

/* The caller's groups by name (number when unnamed), comma-separated. */
static void own_groups(char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    int n = getgroups(0, NULL);
    gid_t *g = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof *g);
    if (!g)
        return;
    g[0] = getegid();
    int k = n > 0 ? getgroups(n, g + 1) : 0;
    for (int i = 0; i <= (k > 0 ? k : 0) && used + 1 < len; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup = dup || g[j] == g[i];
        if (dup)
            continue;
        struct group *gr = getgrgid(g[i]);
        int w = gr ? snprintf(out + used, len - used, "%s%s", used ? ", " : "", gr->gr_name)
                   : snprintf(out + used, len - used, "%s%u", used ? ", " : "", (unsigned)g[i]);
        if (w < 0 || (size_t)w >= len - used) {
            out[used] = 0;
            break;
        }
        used += (size_t)w;
    }
    free(g);
}

int cm_group_parse(const char *arg, gid_t *gid, char *msg, size_t len)
{
    if (!arg || !*arg) {
        snprintf(msg, len, "empty value (accepted: " ACCEPTED ")");
        return EINVAL;
    }
    struct group *gr = getgrnam(arg);
    int numeric = strspn(arg, "0123456789") == strlen(arg);
    if (!gr && numeric) {
        errno = 0;
        char *end;
        unsigned long v = strtoul(arg, &end, 10);
        if (errno || *end || v >= (unsigned long)(gid_t)-1) {
            snprintf(msg, len, "bad value '%s': group ID out of range (accepted: " ACCEPTED ")",
                     arg);
            return EINVAL;
        }
        gr = getgrgid((gid_t)v);
        if (!gr) {
            snprintf(msg, len, "no group has ID %s (accepted: " ACCEPTED " that exists, see "
                     "getent group)", arg);
            return ENOENT;
        }
    }
    if (!gr) {
        snprintf(msg, len, "no group named '%s' (accepted: " ACCEPTED " that exists, see "
                 "getent group)", arg);
        return ENOENT;
    }
    /* Copied: own_groups()'s getgrgid() reuses getgrnam's static record. */
    gid_t g = gr->gr_gid;
    char name[128];
    snprintf(name, sizeof name, "%s", gr->gr_name);
    if (geteuid() != 0 && !member(g)) {
        char mine[256];
        own_groups(mine, sizeof mine);
        snprintf(msg, len, "you are not a member of group '%s' (GID %u), so the segment "
                 "cannot be given to it (accepted: one of your groups: %s)", name,
                 (unsigned)g, mine[0] ? mine : "none");
        return EPERM;
    }
    *gid = g;
    return 0;
}
