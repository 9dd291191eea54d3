/*
 * test_placement.c -- which CPUs: compact in the hwloc tree, stable across
 * rebalances, within each app's affinity, and the --share rule. Runs on
 * hwloc synthetic topologies bigger than this machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include <hwloc.h>

#include "../../cpumgr/masks.h"
#include "../../cpumgr/placement.h"
#include "nth/cpumgr_shm.h"

#define MAXA 8

struct fixture {
    hwloc_topology_t topo;
    hwloc_bitmap_t owned;
    struct cm_place a[MAXA];
    hwloc_bitmap_t allowed[MAXA], prev[MAXA];
};

static struct fixture *make(const char *synthetic)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(hwloc_topology_init(&f->topo), 0);
    assert_int_equal(hwloc_topology_set_synthetic(f->topo, synthetic), 0);
    assert_int_equal(hwloc_topology_load(f->topo), 0);
    f->owned = hwloc_bitmap_dup(hwloc_topology_get_topology_cpuset(f->topo));
    for (int i = 0; i < MAXA; i++) {
        f->allowed[i] = hwloc_bitmap_dup(f->owned);
        f->prev[i] = hwloc_bitmap_alloc();
        f->a[i] = (struct cm_place){f->allowed[i], f->prev[i], 0, 0, 1,
                                    hwloc_bitmap_alloc(), hwloc_bitmap_alloc(), 0};
    }
    return f;
}

static void destroy(struct fixture *f)
{
    for (int i = 0; i < MAXA; i++) {
        hwloc_bitmap_free(f->allowed[i]);
        hwloc_bitmap_free(f->prev[i]);
        hwloc_bitmap_free(f->a[i].out);
        hwloc_bitmap_free(f->a[i].shared);
    }
    hwloc_bitmap_free(f->owned);
    hwloc_topology_destroy(f->topo);
    free(f);
}

/* Place with counts; results become prev for the next round. */
static void place(struct fixture *f, int n, const int *counts)
{
    for (int i = 0; i < n; i++) {
        f->a[i].count = counts[i];
        f->a[i].request = counts[i];
    }
    assert_int_equal(cm_place_all(f->topo, f->owned, f->a, n), 0);
}

static void commit(struct fixture *f, int n)
{
    for (int i = 0; i < n; i++)
        hwloc_bitmap_copy(f->prev[i], f->a[i].out);
}

static void assert_disjoint(struct fixture *f, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            assert_false(hwloc_bitmap_intersects(f->a[i].out, f->a[j].out));
}

/* The set is exactly the cpuset of one object of the given type. */
static int is_one_object(struct fixture *f, hwloc_const_bitmap_t set, hwloc_obj_type_t type)
{
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(f->topo, type, o)) != NULL)
        if (hwloc_bitmap_isequal(o->cpuset, set))
            return 1;
    return 0;
}

static int within_one_object(struct fixture *f, hwloc_const_bitmap_t set, hwloc_obj_type_t type)
{
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(f->topo, type, o)) != NULL)
        if (hwloc_bitmap_isincluded(set, o->cpuset))
            return 1;
    return 0;
}

static int moved(struct fixture *f, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        m += cm_moved(f->prev[i], f->a[i].out);
    return m;
}

static void test_compact_small(void **state)
{
    (void)state;
    struct fixture *f = make("pack:2 l3:2 core:4 pu:2");
    assert_int_equal(hwloc_bitmap_weight(f->owned), 32);
    int counts[] = {8, 8, 2, 1};
    place(f, 4, counts);
    assert_disjoint(f, 4);
    assert_true(is_one_object(f, f->a[0].out, HWLOC_OBJ_L3CACHE));
    assert_true(is_one_object(f, f->a[1].out, HWLOC_OBJ_L3CACHE));
    assert_true(is_one_object(f, f->a[2].out, HWLOC_OBJ_CORE));
    assert_int_equal(hwloc_bitmap_weight(f->a[3].out), 1);
    /* The lone CPU does not break a fresh core while a half-used one exists:
     * with app 2 on a whole core, it takes a core of its own, but an L3
     * already used by nobody else. */
    assert_true(within_one_object(f, f->a[3].out, HWLOC_OBJ_L3CACHE));
    destroy(f);
}

static void test_stable(void **state)
{
    (void)state;
    struct fixture *f = make("pack:2 l3:2 core:4 pu:2");
    int c1[] = {16, 16};
    place(f, 2, c1);
    assert_true(is_one_object(f, f->a[0].out, HWLOC_OBJ_PACKAGE));
    assert_true(is_one_object(f, f->a[1].out, HWLOC_OBJ_PACKAGE));
    commit(f, 2);
    int c2[] = {12, 20};
    place(f, 2, c2);
    assert_disjoint(f, 2);
    assert_int_equal(moved(f, 2), 8); /* 4 CPUs leave app 0, 4 reach app 1 */
    assert_true(hwloc_bitmap_isincluded(f->a[0].out, f->prev[0]));
    assert_true(hwloc_bitmap_isincluded(f->prev[1], f->a[1].out));
    /* What app 0 gave up is one whole L3-half: two whole cores at least. */
    hwloc_bitmap_t gone = hwloc_bitmap_alloc();
    hwloc_bitmap_andnot(gone, f->prev[0], f->a[0].out);
    assert_true(within_one_object(f, gone, HWLOC_OBJ_L3CACHE));
    hwloc_bitmap_free(gone);
    commit(f, 2);
    /* Same counts again: nothing moves. */
    place(f, 2, c2);
    assert_int_equal(moved(f, 2), 0);
    /* A third app arrives: the others only shrink. */
    commit(f, 2);
    int c3[] = {10, 14, 8};
    place(f, 3, c3);
    assert_disjoint(f, 3);
    assert_true(hwloc_bitmap_isincluded(f->a[0].out, f->prev[0]));
    assert_true(hwloc_bitmap_isincluded(f->a[1].out, f->prev[1]));
    assert_int_equal(hwloc_bitmap_weight(f->a[2].out), 8);
    destroy(f);
}

static void test_affinity(void **state)
{
    (void)state;
    struct fixture *f = make("pack:2 l3:2 core:4 pu:2");
    hwloc_obj_t pack1 = hwloc_get_obj_by_type(f->topo, HWLOC_OBJ_PACKAGE, 1);
    hwloc_bitmap_copy(f->allowed[0], pack1->cpuset);
    hwloc_bitmap_clr(f->allowed[0], (unsigned)hwloc_bitmap_first(pack1->cpuset));
    int counts[] = {20, 12};
    place(f, 2, counts);
    assert_true(hwloc_bitmap_isincluded(f->a[0].out, f->allowed[0]));
    assert_int_equal(hwloc_bitmap_weight(f->a[0].out), 15); /* all it may have */
    assert_int_equal(hwloc_bitmap_weight(f->a[1].out), 12);
    assert_disjoint(f, 2);
    /* Owned set restricts everyone (daemon --cpus). */
    hwloc_bitmap_only(f->owned, 3);
    hwloc_bitmap_set(f->owned, 4);
    hwloc_bitmap_fill(f->allowed[0]);
    int c2[] = {2, 2};
    place(f, 2, c2);
    assert_true(hwloc_bitmap_isincluded(f->a[0].out, f->owned));
    assert_true(hwloc_bitmap_isincluded(f->a[1].out, f->owned));
    assert_disjoint(f, 2);
    destroy(f);
}

/* An app whose only allowed CPU is kept by another app that shrinks: the
 * other one moves (found by the runtime bench: B held CPUs 0-1, A may use
 * CPU 0 only, and B's keep step chose CPU 0). */
static void test_constrained_takes_kept(void **state)
{
    (void)state;
    struct fixture *f = make("pu:2");
    hwloc_bitmap_fill(f->prev[0]);
    hwloc_bitmap_and(f->prev[0], f->prev[0], f->owned); /* B had both */
    hwloc_bitmap_only(f->allowed[1], 0);                 /* A: CPU 0 only */
    int counts[] = {1, 1};
    place(f, 2, counts);
    assert_true(hwloc_bitmap_isset(f->a[1].out, 0));
    assert_int_equal(hwloc_bitmap_weight(f->a[1].out), 1);
    assert_true(hwloc_bitmap_isset(f->a[0].out, 1));
    assert_int_equal(hwloc_bitmap_weight(f->a[0].out), 1);
    assert_disjoint(f, 2);
    /* Same with A allowed only CPU 1. */
    hwloc_bitmap_only(f->allowed[1], 1);
    hwloc_bitmap_zero(f->prev[1]);
    hwloc_bitmap_fill(f->prev[0]);
    hwloc_bitmap_and(f->prev[0], f->prev[0], f->owned);
    place(f, 2, counts);
    assert_true(hwloc_bitmap_isset(f->a[1].out, 1));
    assert_true(hwloc_bitmap_isset(f->a[0].out, 0));
    assert_disjoint(f, 2);
    destroy(f);
}

static void test_large(void **state)
{
    (void)state;
    struct fixture *f = make("pack:2 core:20 pu:2");
    assert_int_equal(hwloc_bitmap_weight(f->owned), 80);
    int c1[] = {16, 16, 16, 16, 16};
    place(f, 5, c1);
    assert_disjoint(f, 5);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(hwloc_bitmap_weight(f->a[i].out), 16);
        assert_true(within_one_object(f, f->a[i].out, HWLOC_OBJ_PACKAGE));
        /* whole cores: both PUs of each core */
        hwloc_obj_t core = NULL;
        while ((core = hwloc_get_next_obj_by_type(f->topo, HWLOC_OBJ_CORE, core)) != NULL)
            if (hwloc_bitmap_intersects(core->cpuset, f->a[i].out))
                assert_true(hwloc_bitmap_isincluded(core->cpuset, f->a[i].out));
    }
    commit(f, 5);
    int c2[] = {20, 12, 16, 16, 16};
    place(f, 5, c2);
    assert_disjoint(f, 5);
    assert_int_equal(moved(f, 5), 8);
    assert_true(within_one_object(f, f->a[0].out, HWLOC_OBJ_PACKAGE));
    destroy(f);
}

/* 256 PUs with an L3 level (a 4-socket server): one application per
 * package, then a shrink and a grow that move only the CPUs that change
 * hands, one whole L3 of them. Before the placement kept a PU table
 * (placement.c, struct pus) this one test took over a minute. */
static void test_256(void **state)
{
    (void)state;
    struct fixture *f = make("pack:4 l3:2 core:16 pu:2");
    assert_int_equal(hwloc_bitmap_weight(f->owned), 256);
    int c1[] = {64, 64, 64, 64};
    place(f, 4, c1);
    assert_disjoint(f, 4);
    for (int i = 0; i < 4; i++)
        assert_true(is_one_object(f, f->a[i].out, HWLOC_OBJ_PACKAGE));
    commit(f, 4);
    int c2[] = {32, 96, 64, 64};
    place(f, 4, c2);
    assert_disjoint(f, 4);
    assert_int_equal(moved(f, 4), 64); /* 32 leave app 0, 32 reach app 1 */
    assert_true(hwloc_bitmap_isincluded(f->a[0].out, f->prev[0]));
    assert_true(is_one_object(f, f->a[0].out, HWLOC_OBJ_L3CACHE));
    hwloc_bitmap_t gone = hwloc_bitmap_alloc();
    hwloc_bitmap_andnot(gone, f->prev[0], f->a[0].out);
    assert_true(is_one_object(f, gone, HWLOC_OBJ_L3CACHE));
    hwloc_bitmap_free(gone);
    commit(f, 4);
    place(f, 4, c2); /* same counts: nothing moves */
    assert_int_equal(moved(f, 4), 0);
    destroy(f);
}

/* --share: a satisfied app's CPU goes to an unsatisfied one of equal or
 * higher priority, never to a lower one. */
static void test_share(void **state)
{
    (void)state;
    struct {
        int prioA, prioB, shares;
    } rows[] = {{1, 2, 1}, {1, 1, 1}, {2, 1, 0}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        struct fixture *f = make("pack:1 core:2 pu:1");
        /* A asked 1 and got it; B asked 2 and got 1. */
        f->a[0].count = 1; f->a[0].request = 1; f->a[0].priority = rows[r].prioA;
        f->a[1].count = 1; f->a[1].request = 2; f->a[1].priority = rows[r].prioB;
        assert_int_equal(cm_place_all(f->topo, f->owned, f->a, 2), 0);
        assert_int_equal(cm_share(f->topo, f->a, 2), 0);
        assert_int_equal(hwloc_bitmap_weight(f->a[0].out), 1);
        assert_int_equal(hwloc_bitmap_weight(f->a[1].out), rows[r].shares ? 2 : 1);
        assert_int_equal(hwloc_bitmap_weight(f->a[1].shared), rows[r].shares);
        assert_int_equal(hwloc_bitmap_weight(f->a[0].shared), rows[r].shares);
        destroy(f);
    }
    /* Nobody unsatisfied: nothing is shared. */
    struct fixture *f = make("pack:1 core:4 pu:1");
    int c[] = {2, 2};
    place(f, 2, c);
    assert_int_equal(cm_share(f->topo, f->a, 2), 0);
    assert_true(hwloc_bitmap_iszero(f->a[0].shared));
    assert_true(hwloc_bitmap_iszero(f->a[1].shared));
    destroy(f);
}

/* The rest of the --share rule as cpumgr(8) states it: a donor CPU outside
 * the receiver's affinity mask is not shared; a CPU is shared by two
 * applications at most (two hungry ones, one donor CPU: one gets it);
 * higher-priority receivers choose first; an application that received a
 * shared CPU is no donor (it is satisfied only thanks to another's). */
static void test_share_rule(void **state)
{
    (void)state;
    /* Affinity: A (satisfied) holds CPU 0 alone; B (hungry) may not use it. */
    struct fixture *f = make("pack:1 core:2 pu:1");
    hwloc_bitmap_only(f->allowed[1], 1);
    f->a[0].count = 1; f->a[0].request = 1;
    f->a[1].count = 1; f->a[1].request = 2;
    assert_int_equal(cm_place_all(f->topo, f->owned, f->a, 2), 0);
    assert_true(hwloc_bitmap_isset(f->a[0].out, 0));
    assert_int_equal(cm_share(f->topo, f->a, 2), 0);
    assert_true(hwloc_bitmap_iszero(f->a[0].shared));
    assert_true(hwloc_bitmap_iszero(f->a[1].shared));
    assert_int_equal(hwloc_bitmap_weight(f->a[1].out), 1);
    destroy(f);
    /* Two hungry receivers of priorities 1 and 2, one donor CPU (A,
     * priority 1): the priority-2 one gets it, whatever the slot order,
     * and no CPU is in three applications' sets. */
    for (int lowfirst = 0; lowfirst < 2; lowfirst++) {
        f = make("pack:1 core:3 pu:1");
        int lo = lowfirst ? 1 : 2, hi = lowfirst ? 2 : 1;
        f->a[0].count = 1; f->a[0].request = 1; f->a[0].priority = 1;
        f->a[lo].count = 1; f->a[lo].request = 2; f->a[lo].priority = 1;
        f->a[hi].count = 1; f->a[hi].request = 2; f->a[hi].priority = 2;
        assert_int_equal(cm_place_all(f->topo, f->owned, f->a, 3), 0);
        assert_int_equal(cm_share(f->topo, f->a, 3), 0);
        assert_int_equal(hwloc_bitmap_weight(f->a[hi].shared), 1);
        assert_int_equal(hwloc_bitmap_weight(f->a[hi].out), 2);
        assert_true(hwloc_bitmap_iszero(f->a[lo].shared));
        assert_int_equal(hwloc_bitmap_weight(f->a[lo].out), 1);
        for (unsigned c = 0; c < 3; c++) {
            int holders = 0;
            for (int i = 0; i < 3; i++)
                holders += hwloc_bitmap_isset(f->a[i].out, c);
            assert_true(holders <= 2);
        }
        destroy(f);
    }
    /* Equal priorities, two hungry receivers, one donor CPU: still one
     * receiver only (at most two applications on a CPU). */
    f = make("pack:1 core:3 pu:1");
    for (int i = 0; i < 3; i++) {
        f->a[i].count = 1;
        f->a[i].request = i == 0 ? 1 : 2;
    }
    assert_int_equal(cm_place_all(f->topo, f->owned, f->a, 3), 0);
    assert_int_equal(cm_share(f->topo, f->a, 3), 0);
    assert_int_equal(hwloc_bitmap_weight(f->a[1].shared) + hwloc_bitmap_weight(f->a[2].shared), 1);
    destroy(f);
}

/* The segment's masks against hwloc bitmaps: word edges, the last CPU,
 * CPUs beyond the segment's range dropped, and every word rewritten. */
static void test_masks(void **state)
{
    (void)state;
    static const unsigned cpus[] = {0, 1, 31, 32, 63, 64, 65, 100, 127, 128, 511, 1000, 1023};
    hwloc_bitmap_t b = hwloc_bitmap_alloc(), back = hwloc_bitmap_alloc();
    uint64_t m[NTH_CPUMGR_MASK_WORDS];
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
        m[w] = ~UINT64_C(0); /* stale content: must be overwritten */
    for (unsigned i = 0; i < sizeof cpus / sizeof cpus[0]; i++)
        hwloc_bitmap_set(b, cpus[i]);
    hwloc_bitmap_set(b, NTH_CPUMGR_MAX_CPUS);      /* out of range: dropped */
    hwloc_bitmap_set(b, NTH_CPUMGR_MAX_CPUS + 70);
    cm_bitmap_to_mask(b, m);
    unsigned n = 0;
    for (unsigned c = 0; c < NTH_CPUMGR_MAX_CPUS; c++)
        if ((m[c / 64] >> (c % 64)) & 1u) {
            assert_true(hwloc_bitmap_isset(b, c));
            n++;
        }
    assert_int_equal(n, sizeof cpus / sizeof cpus[0]);
    hwloc_bitmap_set(back, 7); /* stale content: must be cleared */
    cm_mask_to_bitmap(m, back);
    hwloc_bitmap_clr(b, NTH_CPUMGR_MAX_CPUS);
    hwloc_bitmap_clr(b, NTH_CPUMGR_MAX_CPUS + 70);
    assert_true(hwloc_bitmap_isequal(back, b));
    hwloc_bitmap_zero(b);
    cm_bitmap_to_mask(b, m);
    for (unsigned w = 0; w < NTH_CPUMGR_MASK_WORDS; w++)
        assert_true(m[w] == 0);
    cm_mask_to_bitmap(m, back);
    assert_true(hwloc_bitmap_iszero(back));
    hwloc_bitmap_free(b);
    hwloc_bitmap_free(back);
}

/* The first PU (OS index) of the n-th object of a type, in logical order. */
static int pu_of_obj(struct fixture *f, hwloc_obj_type_t type, unsigned n)
{
    hwloc_obj_t o = hwloc_get_obj_by_type(f->topo, type, n);
    assert_non_null(o);
    return hwloc_bitmap_first(o->cpuset);
}

/* The NUMA node containing every CPU of set, or NULL (hwloc 2 keeps NUMA
 * nodes beside the PU tree, as memory children; a synthetic "numa:2" in
 * the middle of the string hangs them under Group objects). */
static hwloc_obj_t numa_of(struct fixture *f, hwloc_const_bitmap_t set)
{
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(f->topo, HWLOC_OBJ_NUMANODE, o)) != NULL)
        if (!hwloc_bitmap_iszero(set) && hwloc_bitmap_isincluded(set, o->cpuset))
            return o;
    return NULL;
}

/* How many NUMA nodes set touches. */
static int numa_nodes_touched(struct fixture *f, hwloc_const_bitmap_t set)
{
    int n = 0;
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_obj_by_type(f->topo, HWLOC_OBJ_NUMANODE, o)) != NULL)
        n += hwloc_bitmap_intersects(set, o->cpuset);
    return n;
}

/* Audit (issue 5): NUMA packing. On 2 packages x 2 NUMA nodes x 4 cores x
 * 2 PUs, an application that fits in one NUMA node gets its CPUs on one
 * node -- as a whole node, or beside another application's on a node
 * neither spills out of -- and one that does not fit fills a whole node
 * before it takes CPUs of a second one, in the same package. */
static void test_numa_packing(void **state)
{
    (void)state;
    struct fixture *f = make("pack:2 numa:2 core:4 pu:2");
    assert_int_equal(hwloc_get_nbobjs_by_type(f->topo, HWLOC_OBJ_NUMANODE), 4);
    assert_int_equal(hwloc_bitmap_weight(f->owned), 32);
    /* A node each: exactly a node's cpuset, four different nodes. */
    int c1[] = {8, 8, 8, 8};
    place(f, 4, c1);
    assert_disjoint(f, 4);
    for (int i = 0; i < 4; i++)
        assert_true(is_one_object(f, f->a[i].out, HWLOC_OBJ_NUMANODE));
    destroy(f);

    /* Not multiples of a node: each still on one node. 6 + 6 cannot share
     * an 8-PU node, so they take two; the 4 and the 2 fit beside them or
     * on the free nodes, but never across two. */
    f = make("pack:2 numa:2 core:4 pu:2");
    int c2[] = {6, 6, 4, 2, 5};
    place(f, 5, c2);
    assert_disjoint(f, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(hwloc_bitmap_weight(f->a[i].out), c2[i]);
        assert_non_null(numa_of(f, f->a[i].out));
    }
    assert_true(numa_of(f, f->a[0].out) != numa_of(f, f->a[1].out));
    destroy(f);

    /* Larger than a node: one whole node plus CPUs of the other node of
     * the same package, not of a node in the other package. */
    f = make("pack:2 numa:2 core:4 pu:2");
    int c3[] = {12, 12};
    place(f, 2, c3);
    assert_disjoint(f, 2);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(hwloc_bitmap_weight(f->a[i].out), 12);
        assert_int_equal(numa_nodes_touched(f, f->a[i].out), 2);
        assert_true(within_one_object(f, f->a[i].out, HWLOC_OBJ_PACKAGE));
        int whole = 0;
        hwloc_obj_t o = NULL;
        while ((o = hwloc_get_next_obj_by_type(f->topo, HWLOC_OBJ_NUMANODE, o)) != NULL)
            whole += hwloc_bitmap_isincluded(o->cpuset, f->a[i].out);
        assert_int_equal(whole, 1);
    }
    commit(f, 2);
    /* Growing back under a node's size after the other left: it keeps the
     * node it filled, and gives up the CPUs of the second node. */
    int c4[] = {8};
    place(f, 1, c4);
    assert_true(is_one_object(f, f->a[0].out, HWLOC_OBJ_NUMANODE));
    assert_true(hwloc_bitmap_isincluded(f->a[0].out, f->prev[0]));
    destroy(f);

    /* NUMA nodes above the packages (one node per two packages): a
     * 16-CPU application gets one node, not a package from each. */
    f = make("numa:2 pack:2 core:4 pu:2");
    assert_int_equal(hwloc_get_nbobjs_by_type(f->topo, HWLOC_OBJ_NUMANODE), 2);
    int c5[] = {16, 8, 8};
    place(f, 3, c5);
    assert_disjoint(f, 3);
    assert_true(is_one_object(f, f->a[0].out, HWLOC_OBJ_NUMANODE));
    assert_non_null(numa_of(f, f->a[1].out));
    assert_non_null(numa_of(f, f->a[2].out));
    destroy(f);

    /* Shrinking apps give back whole cores of one node, and a newcomer
     * that fits in what one node freed gets it there. */
    f = make("pack:2 numa:2 core:4 pu:2");
    place(f, 4, c1);
    commit(f, 4);
    int c6[] = {4, 8, 8, 8, 4};
    place(f, 5, c6);
    assert_disjoint(f, 5);
    assert_true(hwloc_bitmap_isincluded(f->a[0].out, f->prev[0]));
    assert_true(numa_of(f, f->a[4].out) == numa_of(f, f->prev[0]));
    destroy(f);
}

/* Issue 6 (mig2): a newcomer's first CPU is its home (the CPU its main VP
 * is bound to). On 2 CPUs: app 0 holds both and must give one up for app
 * 1; it gives up app 1's home -- before, it kept its lower-index CPU (the
 * compactness tie-break) and app 1 got the other, whatever its home. Both
 * homes are checked, so neither index alone passes. */
static void test_home_newcomer_2cpus(void **state)
{
    (void)state;
    for (int home = 0; home < 2; home++) {
        struct fixture *f = make("pu:2");
        int c1[] = {2};
        place(f, 1, c1);
        assert_int_equal(hwloc_bitmap_weight(f->a[0].out), 2);
        commit(f, 1);
        f->a[1].home1 = home + 1;
        int c2[] = {1, 1};
        place(f, 2, c2);
        assert_disjoint(f, 2);
        assert_int_equal(hwloc_bitmap_weight(f->a[1].out), 1);
        assert_true(hwloc_bitmap_isset(f->a[1].out, (unsigned)home));
        /* The incumbent lost only that CPU: one moved CPU in all. */
        assert_int_equal(moved(f, 2), 1 + 1);
        destroy(f);
    }
}

/* Three apps on 2 CPUs (one rotated out): the app that keeps the
 * newcomer's home moves to the CPU the rotated-out app left, and the
 * newcomer gets its home -- for both homes. */
static void test_home_room(void **state)
{
    (void)state;
    for (int home = 0; home < 2; home++) {
        struct fixture *f = make("pu:2");
        hwloc_bitmap_only(f->prev[0], (unsigned)home);      /* keeps the home */
        hwloc_bitmap_only(f->prev[1], (unsigned)(1 - home)); /* rotated out now */
        f->a[2].home1 = home + 1;
        int c[] = {1, 0, 1};
        place(f, 3, c);
        assert_disjoint(f, 3);
        assert_true(hwloc_bitmap_isset(f->a[2].out, (unsigned)home));
        assert_true(hwloc_bitmap_isset(f->a[0].out, (unsigned)(1 - home)));
        assert_int_equal(hwloc_bitmap_weight(f->a[1].out), 0);
        destroy(f);
    }
}

/* A free home is taken as the seed when it is as compact: a 2-CPU app
 * whose home is on an empty core gets that core, not the first one. */
static void test_home_seed(void **state)
{
    (void)state;
    struct fixture *f = make("pack:2 l3:2 core:4 pu:2");
    int home = pu_of_obj(f, HWLOC_OBJ_CORE, 13) + 1; /* second PU of core 13 */
    f->a[0].home1 = home + 1;
    int c[] = {2};
    place(f, 1, c);
    assert_true(hwloc_bitmap_isset(f->a[0].out, (unsigned)home));
    assert_true(is_one_object(f, f->a[0].out, HWLOC_OBJ_CORE));
    destroy(f);
}

/* Home never costs compactness: an 8-CPU app whose home is in an L3 that
 * another app half fills gets a whole free L3 (as without a home). */
static void test_home_not_less_compact(void **state)
{
    (void)state;
    struct fixture *f = make("pack:2 l3:2 core:4 pu:2");
    int c1[] = {4};
    place(f, 1, c1);
    assert_true(is_one_object(f, f->a[0].out, HWLOC_OBJ_CORE) ||
                within_one_object(f, f->a[0].out, HWLOC_OBJ_L3CACHE));
    commit(f, 1);
    /* A free PU of the L3 app 0 is in. */
    hwloc_obj_t l3 = hwloc_get_obj_covering_cpuset(f->topo, f->a[0].out);
    while (l3 && l3->type != HWLOC_OBJ_L3CACHE)
        l3 = l3->parent;
    assert_non_null(l3);
    hwloc_bitmap_t freepu = hwloc_bitmap_dup(l3->cpuset);
    hwloc_bitmap_andnot(freepu, freepu, f->a[0].out);
    int home = hwloc_bitmap_first(freepu);
    hwloc_bitmap_free(freepu);
    assert_true(home >= 0);
    f->a[1].home1 = home + 1;
    int c2[] = {4, 8};
    place(f, 2, c2);
    assert_disjoint(f, 2);
    assert_true(is_one_object(f, f->a[1].out, HWLOC_OBJ_L3CACHE));
    assert_false(hwloc_bitmap_isset(f->a[1].out, (unsigned)home));
    destroy(f);
}

/* Homes that are not taken: outside the topology, outside the app's
 * allowed set, or kept by an app with no other CPU it may use (its
 * affinity holds only that one: it is not moved, the newcomer goes
 * elsewhere). */
static void test_home_ignored(void **state)
{
    (void)state;
    struct fixture *f = make("pu:5");
    hwloc_bitmap_only(f->prev[0], 0);
    hwloc_bitmap_only(f->allowed[0], 0);   /* app 0 may use CPU 0 only */
    f->a[1].home1 = 0 + 1;                 /* kept by app 0: not given */
    f->a[2].home1 = 1000;                  /* no such PU */
    hwloc_bitmap_only(f->allowed[3], 3);
    f->a[3].home1 = 1 + 1;                 /* CPU 1, not in its allowed set */
    int c[] = {1, 1, 1, 1};
    place(f, 4, c);
    assert_disjoint(f, 4);
    assert_true(hwloc_bitmap_isequal(f->a[0].out, f->prev[0]));
    assert_int_equal(hwloc_bitmap_weight(f->a[1].out), 1);
    assert_false(hwloc_bitmap_isset(f->a[1].out, 0));
    assert_int_equal(hwloc_bitmap_weight(f->a[2].out), 1);
    assert_true(hwloc_bitmap_isequal(f->a[3].out, f->allowed[3]));
    destroy(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compact_small),
        cmocka_unit_test(test_stable),
        cmocka_unit_test(test_affinity),
        cmocka_unit_test(test_constrained_takes_kept),
        cmocka_unit_test(test_large),
        cmocka_unit_test(test_256),
        cmocka_unit_test(test_share),
        cmocka_unit_test(test_share_rule),
        cmocka_unit_test(test_masks),
        cmocka_unit_test(test_numa_packing),
        cmocka_unit_test(test_home_newcomer_2cpus),
        cmocka_unit_test(test_home_seed),
        cmocka_unit_test(test_home_room),
        cmocka_unit_test(test_home_not_less_compact),
        cmocka_unit_test(test_home_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
