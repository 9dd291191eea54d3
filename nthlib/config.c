/*
 * config.c -- settings: built-in defaults, the NTH_* environment variables,
 * and range checks. A bad variable is named on stderr in one line with the
 * values it accepts, and its setting keeps the default (a typo in the
 * environment should not take a job down).
 */
#include "internal.h"
#include "env_msg.h"
#include "env_names.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK_DEFAULT ((size_t)64 * 1024)
#define STACK_MAX ((size_t)1 << 30)
#define VPS_MAX 4096u
#define SPIN_MAX 1000000u          /* 1 s */
/* Team waits (barrier, region end) spin about as long as libgomp's default
 * GOMP_SPINCOUNT: a member parked at a barrier costs a futex wake-up of its
 * VP, which on a virtual machine's idle vCPU takes tens of microseconds
 * (bench/RESULTS.md, "Team spin"). */
#define TEAM_SPIN_DEFAULT 1000u    /* µs */
#define RECLAIM_DEFAULT 1000u      /* µs */
#define RECLAIM_MAX 10000000u      /* 10 s */
/* Stand-in kernel threads (watchdog.c): each waits in the kernel for a
 * nano-thread that does (a raw futex wait of libgomp or Rust std), so a
 * program needs about one per such thread beyond the VPs. Glibc's default
 * kernel thread reserves 8 MiB of address space and little memory; the
 * cap is against a runaway, not a budget. */
#define STANDINS_MAX_MAX 65536u

void nth_config_default(nth_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->vps = 0;
    cfg->bind = 1;
    cfg->stack_size = STACK_DEFAULT;
    cfg->spin_us = 50;
    cfg->team_spin_us = TEAM_SPIN_DEFAULT;
    cfg->stall_us = 1000;
    cfg->cpumgr = NULL;
    cfg->trace = NULL;
    cfg->trace_buffer = (size_t)1 << 20;
    cfg->reclaim_us = RECLAIM_DEFAULT;
}

int nth_parse_size(const char *s, size_t *out)
{
    if (!s || !*s)
        return EINVAL;
    char *end;
    errno = 0;
    if (*s == '-' || *s == '+')
        return EINVAL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        return EINVAL;
    unsigned long long mul = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mul = 1ull << 10; end++; break;
    case 'm': case 'M': mul = 1ull << 20; end++; break;
    case 'g': case 'G': mul = 1ull << 30; end++; break;
    default: return EINVAL;
    }
    if (*end == 'i' && mul > 1)            /* KiB, MiB, GiB */
        end++;
    if ((*end == 'b' || *end == 'B') && mul > 1)
        end++;
    if (*end)
        return EINVAL;
    if (v > SIZE_MAX / mul)
        return EINVAL;
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
    if (!s || !*s || *s == '-' || *s == '+')
        return EINVAL;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (*end || errno || v < lo || v > hi)
        return EINVAL;
    *out = (unsigned)v;
    return 0;
}

int nth_cpumgr_name_check(const char *v)
{
    return nth_cpumgr_name_ok(v) ? 0 : EINVAL;
}

static void bad(const char *var, const char *val, const char *accepted)
{
    nth_env_bad(var, val, accepted);
}

static int cpumgr_env_said;   /* by the cpumgr API's lazy start */

void nth_cpumgr_env_bad(const char *v)
{
    if (!__atomic_exchange_n(&cpumgr_env_said, 1, __ATOMIC_ACQ_REL))
        bad("NTH_CPUMGR", v, NTH_CPUMGR_ACCEPTED);
}

int nth_config_from_env(nth_config_t *cfg)
{
    int r = 0;
    const char *v;
    nth_config_default(cfg);
    if ((v = getenv("NTH_VPS")) && *v) {
        if (parse_uint(v, 0, VPS_MAX, &cfg->vps)) {
            bad("NTH_VPS", v, "an integer 1..4096, or 0 for one per allowed CPU");
            cfg->vps = 0;
            r = EINVAL;
        }
    }
    if ((v = getenv("NTH_BIND")) && *v) {
        if (!strcmp(v, "none"))
            cfg->bind = 0;
        else if (!strcmp(v, "cpu"))
            cfg->bind = 1;
        else {
            bad("NTH_BIND", v, "cpu (bind each VP to its CPU, the default) or none");
            r = EINVAL;
        }
    }
    if ((v = getenv("NTH_STACK_SIZE")) && *v) {
        size_t sz;
        if (nth_parse_size(v, &sz) || sz < NTH_STACK_MIN || sz > STACK_MAX) {
            bad("NTH_STACK_SIZE", v, "bytes 16384..1073741824, optionally with a K, M or G suffix (16K..1G)");
            r = EINVAL;
        } else {
            cfg->stack_size = sz;
        }
    }
    if ((v = getenv("NTH_SPIN_US")) && *v) {
        if (parse_uint(v, 0, SPIN_MAX, &cfg->spin_us)) {
            bad("NTH_SPIN_US", v, "microseconds 0..1000000");
            cfg->spin_us = 50;
            r = EINVAL;
        }
    }
    if ((v = getenv("NTH_TEAM_SPIN_US")) && *v) {
        if (parse_uint(v, 0, SPIN_MAX, &cfg->team_spin_us)) {
            bad("NTH_TEAM_SPIN_US", v, "microseconds 0..1000000");
            cfg->team_spin_us = TEAM_SPIN_DEFAULT;
            r = EINVAL;
        }
    }
    if ((v = getenv("NTH_STALL_US")) && *v) {
        if (parse_uint(v, 0, UINT_MAX, &cfg->stall_us)) {
            bad("NTH_STALL_US", v, "microseconds 0..4294967295 (0 = off, no monitor thread)");
            cfg->stall_us = 1000;
            r = EINVAL;
        }
    }
    if ((v = getenv("NTH_STANDINS_MAX")) && *v) {
        if (parse_uint(v, 1, STANDINS_MAX_MAX, &cfg->standins_max)) {
            bad("NTH_STANDINS_MAX", v, "an integer 1..65536 (stand-in kernel threads at once; default 1024)");
            cfg->standins_max = 0;
            r = EINVAL;
        }
    }
    if ((v = getenv("NTH_RECLAIM_US")) && *v) {
        if (parse_uint(v, 0, RECLAIM_MAX, &cfg->reclaim_us)) {
            bad("NTH_RECLAIM_US", v, "microseconds 0..10000000 (0 = move at once)");
            cfg->reclaim_us = RECLAIM_DEFAULT;
            r = EINVAL;
        }
    }
    /* Read where it is used (mutex_bias.c, which treats anything but "0" as
     * on); checked here so that a typo such as "off" is not taken silently
     * for the default. */
    if ((v = getenv("NTH_MUTEX_BIAS")) && *v && strcmp(v, "0") && strcmp(v, "1")) {
        bad("NTH_MUTEX_BIAS", v, "1 (biased locking, the default) or 0 (off)");
        r = EINVAL;
    }
    /* Read by the pthread shim (pthread-shim/tls.c), which takes anything
     * but "vp" for the default; checked here to name a typo. */
    if ((v = getenv("NTH_SHIM_TLS")) && *v && strcmp(v, "thread") && strcmp(v, "vp")) {
        bad("NTH_SHIM_TLS", v, "thread (each pthread its own __thread data and errno, the default) or vp (per kernel thread, no thread-pointer change at a switch)");
        r = EINVAL;
    }
    if ((v = getenv("NTH_CPUMGR")) && *v) {
        if (nth_cpumgr_name_check(v)) {
            /* Alone rather than on the default segment: the user meant
             * some other daemon, or none (the client's rule too). */
            /* Every call says it (a public function), unless the cpumgr
             * API's lazy start already did in this process. */
            if (!__atomic_load_n(&cpumgr_env_said, __ATOMIC_ACQUIRE))
                bad("NTH_CPUMGR", v, NTH_CPUMGR_ACCEPTED);
            cfg->cpumgr = "off";
            r = EINVAL;
        } else {
            cfg->cpumgr = v;
        }
    }
    if ((v = getenv("NTH_TRACE")) && *v)
        cfg->trace = v;
    if ((v = getenv("NTH_TRACE_BUFFER")) && *v) {
        size_t sz;
        if (nth_parse_size(v, &sz) || sz < 4096 || sz > STACK_MAX) {
            bad("NTH_TRACE_BUFFER", v, "bytes 4096..1073741824, optionally with a K, M or G suffix");
            r = EINVAL;
        } else {
            cfg->trace_buffer = sz;
        }
    }
    return r;
}

/* One line naming the first field of *cfg out of range, its value and the
 * accepted ones: nth_init()'s EINVAL said the way a bad NTH_* variable is
 * (a zeroed nth_config_t has stack_size 0; nothing named it). Says
 * nothing for a good *cfg. */
void nth_config_say_bad(const nth_config_t *cfg)
{
    char val[32], acc[96];
    const char *field = NULL;
    if (!cfg)
        return;
    if (cfg->vps > VPS_MAX) {
        field = "vps";
        snprintf(val, sizeof val, "%u", cfg->vps);
        snprintf(acc, sizeof acc, "0 (one per CPU) to %u", VPS_MAX);
    } else if (cfg->bind != 0 && cfg->bind != 1) {
        field = "bind";
        snprintf(val, sizeof val, "%d", cfg->bind);
        snprintf(acc, sizeof acc, "0 or 1");
    } else if (cfg->stack_size < NTH_STACK_MIN || cfg->stack_size > STACK_MAX) {
        field = "stack_size";
        snprintf(val, sizeof val, "%zu", cfg->stack_size);
        snprintf(acc, sizeof acc, "%zu to %zu bytes", (size_t)NTH_STACK_MIN, STACK_MAX);
    } else if (cfg->spin_us > SPIN_MAX || cfg->team_spin_us > SPIN_MAX) {
        field = cfg->spin_us > SPIN_MAX ? "spin_us" : "team_spin_us";
        snprintf(val, sizeof val, "%u", cfg->spin_us > SPIN_MAX ? cfg->spin_us : cfg->team_spin_us);
        snprintf(acc, sizeof acc, "0 to %u", SPIN_MAX);
    } else if (cfg->reclaim_us > RECLAIM_MAX) {
        field = "reclaim_us";
        snprintf(val, sizeof val, "%u", cfg->reclaim_us);
        snprintf(acc, sizeof acc, "0 to %u", RECLAIM_MAX);
    } else if (cfg->standins_max > STANDINS_MAX_MAX) {
        field = "standins_max";
        snprintf(val, sizeof val, "%u", cfg->standins_max);
        snprintf(acc, sizeof acc, "0 (the default) to %u", STANDINS_MAX_MAX);
    }
    if (field)
        fprintf(stderr, "nthlib: nth_init: %s = %s is not valid; accepted values: %s "
                "(start from nth_config_default() and change the fields you set)\n", field, val, acc);
}

int nth_config_check(const nth_config_t *cfg)
{
    if (!cfg || cfg->vps > VPS_MAX || (cfg->bind != 0 && cfg->bind != 1) ||
        cfg->stack_size < NTH_STACK_MIN || cfg->stack_size > STACK_MAX ||
        cfg->spin_us > SPIN_MAX || cfg->team_spin_us > SPIN_MAX ||
        cfg->reclaim_us > RECLAIM_MAX || cfg->standins_max > STANDINS_MAX_MAX)
        return EINVAL;
    return 0;
}
