/*
 * rtcalls-audit.c -- an rtld-audit(7) module for tests/shim/rtcalls.sh:
 * counts the calls made through the PLT into libnth-pthread.so, per
 * calling object and symbol, and writes them at exit as lines
 * "COUNT SYMBOL CALLER" (CALLER: the object's file name, "<exe>" for the
 * program) to $RTCALLS_OUT.PID. It sees which of libnth's own calls bind
 * to the shim's wrappers, with no change to either library.
 *
 * x86-64 only (la_x86_64_gnu_pltenter); elsewhere it records nothing and
 * the script skips.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OBJS 128
#define MAX_ENTRIES 1024

struct entry {
    const char *sym;
    int obj;
    unsigned long n;
};

static struct entry entries[MAX_ENTRIES];
static int nentries;
static uintptr_t objcookie[MAX_OBJS];
static char objname[MAX_OBJS][256];
static int nobjs;
static uintptr_t shim_cookie;

unsigned la_version(unsigned v);
unsigned la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie);
uintptr_t la_symbind64(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned *flags, const char *symname);

unsigned la_version(unsigned v)
{
    (void)v;
    return LAV_CURRENT;
}

unsigned la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    (void)lmid;
    const char *name = map->l_name && map->l_name[0] ? map->l_name : "<exe>";
    if (nobjs < MAX_OBJS) {
        const char *base = strrchr(name, '/');
        snprintf(objname[nobjs], sizeof objname[nobjs], "%s", base ? base + 1 : name);
        objcookie[nobjs++] = (uintptr_t)cookie;
    }
    if (strstr(name, "libnth-pthread"))
        shim_cookie = (uintptr_t)cookie;
    return LA_FLG_BINDTO | LA_FLG_BINDFROM;
}

static void dump(void);

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned *flags, const char *symname)
{
    (void)ndx;
    (void)refcook;
    /* Every call into the shim, and _exit (to write the counts first). */
    if ((uintptr_t)defcook != shim_cookie && strcmp(symname, "_exit") != 0)
        *flags |= LA_SYMB_NOPLTENTER;
    *flags |= LA_SYMB_NOPLTEXIT;
    return sym->st_value;
}

#if defined(__x86_64__)
Elf64_Addr la_x86_64_gnu_pltenter(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook,
                                  La_x86_64_regs *regs, unsigned *flags, const char *symname,
                                  long *framesizep);
Elf64_Addr la_x86_64_gnu_pltenter(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook,
                                  La_x86_64_regs *regs, unsigned *flags, const char *symname,
                                  long *framesizep)
{
    (void)ndx;
    (void)defcook;
    (void)regs;
    (void)flags;
    (void)framesizep;
    if (strcmp(symname, "_exit") == 0) {
        dump();
        return sym->st_value;
    }
    int obj = -1;
    for (int i = 0; i < nobjs; i++)
        if (objcookie[i] == (uintptr_t)refcook)
            obj = i;
    /* Symbol names live in the objects' string tables: compare pointers. */
    int i;
    for (i = 0; i < nentries; i++)
        if (entries[i].sym == symname && entries[i].obj == obj)
            break;
    if (i == nentries) {
        if (nentries == MAX_ENTRIES)
            return sym->st_value;
        /* Racy only between first calls on two threads: at worst one
         * entry twice, which the script adds up. */
        entries[i].sym = symname;
        entries[i].obj = obj;
        nentries++;
    }
    __atomic_add_fetch(&entries[i].n, 1, __ATOMIC_RELAXED);
    return sym->st_value;
}
#endif

__attribute__((destructor)) static void dump(void)
{
    const char *out = getenv("RTCALLS_OUT");
    if (!out)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s.%d", out, (int)getpid());
    FILE *f = fopen(path, "w");
    if (!f)
        return;
    for (int i = 0; i < nentries; i++)
        fprintf(f, "%lu %s %s\n", entries[i].n, entries[i].sym,
                entries[i].obj >= 0 ? objname[entries[i].obj] : "?");
    fclose(f);
}
