/*
 * topology.c -- loading the hwloc topology of the machine, cheaply.
 *
 * Every libnth process loads a topology at start (the VPs, and the cpumgr
 * client), so its cost is paid once per process: in the multiprogrammed
 * workload every run of a kernel is a new process. Two things in a default
 * hwloc load cost more than the discovery we need (PUs, cores, caches, NUMA
 * nodes from Linux's sysfs):
 *
 *  - hwloc_topology_init() dlopens every plugin in hwloc's plugin directory
 *    the first time a process uses hwloc. On Debian that is the PCI, OpenCL,
 *    GL and libxml2 plugins, which pull in libOpenCL, libX11, libxml2 and
 *    ICU's 30 MB data library: 15-25 ms of CPU per process (perf stat on
 *    bench/lu-nth --size 10), 3x what the whole run of the glibc build
 *    costs. They only discover I/O devices, which hwloc 2 filters out by
 *    default anyway, and parse XML, for which hwloc has a built-in parser.
 *    HWLOC_PLUGINS_BLACKLIST (hwloc >= 2.0, read once when the first
 *    topology of the process is initialised) keeps them unloaded; we set it
 *    only for that call and only when the user has not set it, and restore
 *    the environment after, so programs we run or that use hwloc themselves
 *    later see what they would have seen.
 *  - The x86 backend binds the calling thread to every PU in turn to run
 *    CPUID there: 3 migrations of main per process start.
 */
#include "internal.h"
#include <stdlib.h>

/* Plugins that only discover I/O devices or parse XML (Debian 12's
 * libhwloc-plugins and the other ones hwloc ships). hwloc matches each
 * plugin's file name with strstr() against this list. */
#define IO_PLUGINS "hwloc_pci,hwloc_opencl,hwloc_gl,hwloc_xml_libxml,hwloc_cuda," \
                   "hwloc_nvml,hwloc_rsmi,hwloc_levelzero"

int nth_topology_load(hwloc_topology_t *topo, unsigned long flags)
{
    /* setenv is not thread-safe against a concurrent getenv: touch the
     * environment only before the runtime's own topology exists, i.e. from
     * nth_init before any VP of ours runs. Once it is loaded, hwloc keeps
     * the plugins it chose for as long as one topology lives, so the
     * variable would not be read again anyway. */
    int set_env = nth_rt.topo == NULL && getenv("HWLOC_PLUGINS_BLACKLIST") == NULL;
    if (set_env)
        (void)setenv("HWLOC_PLUGINS_BLACKLIST", IO_PLUGINS, 0);
    int r = hwloc_topology_init(topo);
    if (set_env)
        (void)unsetenv("HWLOC_PLUGINS_BLACKLIST");
    if (r != 0)
        return -1;
    if (flags)
        (void)hwloc_topology_set_flags(*topo, flags);
    (void)hwloc_topology_set_components(*topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
    if (hwloc_topology_load(*topo) != 0) {
        hwloc_topology_destroy(*topo);
        return -1;
    }
    return 0;
}
