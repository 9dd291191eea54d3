/* team_cpus.c -- how many CPUs may this process use (hwloc, as the project
 * answers every CPU question). */
#include "team.h"

#include <hwloc.h>

int team_cpus_available(void)
{
    hwloc_topology_t topo;
    int n = 1;

    if (hwloc_topology_init(&topo) != 0)
        return 1;
    /* The x86 backend would migrate this thread to every PU to run CPUID;
     * counting CPUs needs only the Linux backend. */
    (void)hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
    if (hwloc_topology_load(topo) == 0) {
        hwloc_bitmap_t set = hwloc_bitmap_alloc();
        if (set && hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
            hwloc_bitmap_and(set, set, hwloc_topology_get_allowed_cpuset(topo));
            int w = hwloc_bitmap_weight(set);
            if (w > 0)
                n = w;
        } else {
            int w = hwloc_bitmap_weight(hwloc_topology_get_allowed_cpuset(topo));
            if (w > 0)
                n = w;
        }
        hwloc_bitmap_free(set);
    }
    hwloc_topology_destroy(topo);
    return n;
}
