/*
 * cpulist.h -- the strict CPU list syntax of `cpumgr --cpus`.
 */
#ifndef CPUMGR_CPULIST_H
#define CPUMGR_CPULIST_H

#include <hwloc.h>

/* The accepted syntax, for messages. */
#define CM_CPULIST_SYNTAX "comma-separated CPU numbers and ranges LO-HI with LO <= HI, such as 0-3,6"

/* Parse s into b: items N or LO-HI (decimal, LO <= HI, each below
 * NTH_CPUMGR_MAX_CPUS) separated by single commas. Returns 0, or EINVAL for
 * an empty list, an empty item (",," or a leading/trailing comma), a
 * reversed range, a number out of range, or any other character (spaces
 * included); b is then left empty. hwloc_bitmap_list_sscanf() does not
 * validate (hwloc 2.x): it skips empty items, reads "3-1" and "1x" as no
 * CPU, "0-" as every CPU from 0 and "0x3" as CPU 3, all with success; on a
 * 2-CPU machine "0-1,,3" then came out as 0-1 without a word. Any thread;
 * b is the caller's. */
int cm_cpulist_parse(const char *s, hwloc_bitmap_t b);

/* The CPUs of this process's affinity mask (sched_getaffinity(2): what
 * taskset, a cgroup cpuset or Slurm left us) into b, OS indices below
 * NTH_CPUMGR_MAX_CPUS. Returns 0, or errno of sched_getaffinity (b is then
 * left empty). For messages and the early --cpus check; the daemon takes
 * its CPUs from hwloc. Any thread. */
int cm_cpulist_allowed(hwloc_bitmap_t b);

#endif
