/*
 * trace_format.h -- the per-process binary trace file (".bin"), shared by the
 * recorder in libnth and the readers behind `nth-trace`.
 *
 * The file is a 64-byte header followed by 32-byte records in no particular
 * order: each VP's buffer is appended in chunks by the background writer, so
 * readers sort by timestamp. Names (nano-threads, states, event types, event
 * values, synchronisation objects) travel as NAME records followed by their
 * bytes in whole records, so a file cut anywhere (SIGKILL, _exit, disk full)
 * still holds every name flushed before the cut. Little-endian, host layout:
 * traces are converted on the machine (or architecture) that wrote them.
 */
#ifndef NTH_TRACE_FORMAT_H
#define NTH_TRACE_FORMAT_H

#include <stdint.h>

#define NTH_TRACE_MAGIC   "NTHTRACE"
#define NTH_TRACE_VERSION 1u

/* The 64-byte file header. Times are CLOCK_MONOTONIC ns (for the timeline,
 * comparable between processes of one boot: `merge`) and CLOCK_REALTIME ns
 * (only for the date in the Paraver header). */
struct nth_trace_file_header {
    char magic[8];             /* NTH_TRACE_MAGIC, no NUL */
    uint32_t version;          /* NTH_TRACE_VERSION */
    uint32_t record_size;      /* sizeof(struct nth_trace_rec) = 32 */
    uint32_t pid;
    uint32_t flags;            /* NTH_TRACE_FLAG_* */
    uint64_t mono_start_ns;    /* trace start: JSON/Paraver times count from here */
    uint64_t real_start_ns;
    char host[24];             /* node name for the Paraver .row, NUL-padded */
};

/* One fixed-size record. `id` is the nano-thread trace id (never reused in a
 * trace; 0 = none), `vp` the VP index of the recording kernel thread
 * (NTH_TRACE_NO_VP when it is no VP), or VP v | NTH_TRACE_LOAN_VP when it is
 * a stand-in kernel thread serving VP v's ready queue while v's own kernel
 * thread sits in the kernel (nth_blocking_enter, the stall watchdog). */
struct nth_trace_rec {
    uint64_t ts;               /* CLOCK_MONOTONIC, ns */
    uint16_t type;             /* enum nth_trace_rec_type */
    uint16_t vp;
    uint32_t arg;              /* state, event type, counter kind or name length */
    uint64_t id;
    uint64_t value;
};

#define NTH_TRACE_NO_VP 0xffffu
/* Flag in `vp`: recorded by a stand-in on loan to VP (vp & ~flag). Its
 * lease is a VP_START (value = v) ... VP_STOP (value = v) pair, both
 * flagged; in between its switches drive v's VP track until v's own kernel
 * thread records again (it came back from the kernel and takes the track
 * back, showing the nano-thread it ran before the lease). */
#define NTH_TRACE_LOAN_VP 0x8000u
#define NTH_TRACE_MAX_VPS 4096u     /* same bound as nth_init's vps */
#define NTH_TRACE_NAME_MAX 255u     /* bytes of one name, without NUL */

enum nth_trace_rec_type {
    NTH_REC_VP_START = 1,      /* vp */
    NTH_REC_VP_STOP = 2,       /* vp */
    NTH_REC_THREAD_CREATE = 3, /* id = new nano-thread, value = creator */
    NTH_REC_THREAD_END = 4,    /* id */
    NTH_REC_SWITCH = 5,        /* vp now runs id (0 = idle loop), value = previous,
                                  arg = why | overhead ns << NTH_SWITCH_OVH_SHIFT */
    NTH_REC_STATE_SET = 6,     /* id, arg = state, value = object address or 0 */
    NTH_REC_STATE_PUSH = 7,    /* id, arg = state, value = object */
    NTH_REC_STATE_POP = 8,     /* id */
    NTH_REC_EVENT = 9,         /* id, arg = event type, value */
    NTH_REC_REGION_BEGIN = 10, /* id = member, value = region number,
                                  arg = team size | member index << 16 */
    NTH_REC_REGION_END = 11,   /* id, value = region number */
    NTH_REC_COUNTER = 12,      /* arg = counter kind, value; vp for per-VP counters */
    NTH_REC_NAME = 13,         /* arg = kind << 16 | length, id = key, value = key2;
                                  then ceil(length/32) records of bytes */
    NTH_REC_LOST = 14,         /* value = records dropped (full buffer or size limit) */
    NTH_REC_END = 15,          /* written last by a clean finish; its absence
                                  means the process was killed or crashed */
    NTH_REC_FUNC_ENTER = 16,   /* id, value = function address (libnth-probes) */
    NTH_REC_FUNC_EXIT = 17,    /* id, value = function address */
    NTH_REC_WAIT_OBJ = 18,     /* id, arg = enum nth_trace_obj_kind, value = object
                                  address (join: the joined trace id); written
                                  just before the SWITCH that blocks id, which
                                  then shows SYNCH naming it */
    NTH_REC_TYPE_MAX = 18
};

enum nth_trace_counter {
    NTH_CTR_RQ_LEN = 1,        /* ready-queue length of rec.vp */
    NTH_CTR_CPUS = 2,          /* CPUs assigned to the process by cpumgr */
    NTH_CTR_MEM_BYTES = 3,     /* bytes in use by malloc (NTH_TRACE_MALLOC) */
    NTH_CTR_MEM_CALLS = 4,     /* malloc/calloc/realloc calls so far */
    NTH_CTR_GRANT = 5,         /* cpumgr --trace: CPUs granted to the
                                  application whose pid is in `id` */
};

/* NTH_REC_SWITCH arg: why `value` (the previous nano-thread) left its VP.
 * A blocked one shows SYNCH (no object) unless the runtime named what it
 * waits on just before; a yielded or preempted one shows READY.
 * UNBLOCK is recorded by a spare kernel thread (vp = NTH_TRACE_NO_VP, id 0)
 * when `value` leaves nth_blocking_leave: its BLOCKED level (pushed by
 * nth_blocking_enter) becomes READY until a VP switches to it, and that
 * switch-in returns it to the state under BLOCKED. */
enum nth_trace_switch_why {
    NTH_SWITCH_YIELD = 0,
    NTH_SWITCH_BLOCK = 1,
    NTH_SWITCH_UNBLOCK = 2,
    /* Blocked on a wait whose kind names it with no object (trace_read.c,
     * nth_tr_obj_label): the switch stands for NTH_REC_WAIT_OBJ of that
     * kind + NTH_SWITCH_BLOCK, one record less. A team member waits for
     * its next region once per region: 1 of the ~9 records of each region
     * of LU (bench/RESULTS.md, "trace9"). An older reader takes these for
     * a yield (READY instead of SYNCH); the records are otherwise those of
     * format version 1. */
    NTH_SWITCH_BLOCK_TEAM_IDLE = 3,
    NTH_SWITCH_BLOCK_SLEEP = 4,
};
/* The rest of a SWITCH arg: how long (ns, saturated) the runtime's switch
 * path ran (picking the next nano-thread, the switch) before the record,
 * shown as OVERHEAD at the end of `value`'s last slice. Carried in the
 * switch record itself so that it costs no record. 0 in older files. */
#define NTH_SWITCH_WHY_MASK 0xfu
#define NTH_SWITCH_OVH_SHIFT 4
#define NTH_SWITCH_OVH_MAX ((1u << (32 - NTH_SWITCH_OVH_SHIFT)) - 1u)

/* What a nano-thread waits on (NTH_REC_WAIT_OBJ arg). */
enum nth_trace_obj_kind {
    NTH_OBJ_NONE = 0,
    NTH_OBJ_MUTEX = 1,
    NTH_OBJ_CONDVAR = 2,
    NTH_OBJ_BARRIER = 3,
    NTH_OBJ_RWLOCK = 4,
    NTH_OBJ_SEMAPHORE = 5,
    NTH_OBJ_JOIN = 6,          /* value: the joined nano-thread's trace id */
    NTH_OBJ_ONCE = 7,
    NTH_OBJ_TEAM_BARRIER = 8,  /* nth_team_barrier / nth_parallel_for's end */
    NTH_OBJ_TEAM_JOIN = 9,     /* a region's caller waiting for its members */
    NTH_OBJ_SLEEP = 10,        /* nth_sleep_ns / nth_clock_sleep (the shim's usleep,
                                  nanosleep): value, the waiter's address, is no name */
    NTH_OBJ_TEAM_IDLE = 11,    /* a team member waiting for the next region */
    NTH_OBJ_KIND_MAX = 11
};

/* nth_trace_file_header.flags */
#define NTH_TRACE_FLAG_CPUMGR 1u    /* written by the cpumgr daemon (--trace) */
/* Set by the writer (pwrite into the header, which never needs new disk
 * space) when appending records failed: the records from then on are
 * missing and counted as lost, and a missing end record has this cause,
 * not a kill. The errno of the first failure is in NTH_TRACE_FLAG_ERRNO. */
#define NTH_TRACE_FLAG_WRITE_ERROR 2u
#define NTH_TRACE_FLAG_ERRNO(flags) ((flags) >> 16)

enum nth_trace_name_kind {
    NTH_NAME_THREAD = 1,       /* id = trace id */
    NTH_NAME_STATE = 2,        /* id = state */
    NTH_NAME_EVENT = 3,        /* id = event type */
    NTH_NAME_VALUE = 4,        /* id = event type, value = event value */
    NTH_NAME_OBJECT = 5,       /* id = object address */
    NTH_NAME_FUNCTION = 6,     /* id = function address; "name (file:line)" */
    NTH_NAME_APP = 7,          /* id = pid of an application (cpumgr --trace) */
};

#endif
