/*
 * symver-probe.c -- a program that references every (symbol, glibc version)
 * pair of pthread-shim/glibc-symbols.txt, the way binaries built against
 * older and newer glibc reference them (".symver ref, sym@GLIBC_x" makes the
 * link editor record that exact version). Run with LD_BIND_NOW=1
 * LD_DEBUG=bindings, ld.so reports where each reference bound; main() does
 * nothing else.
 */
#include "symver.h"

#define REF(sym, id, tag)                       \
    extern void ref_##sym##_##id(void);         \
    __asm__(".symver ref_" #sym "_" #id ", " #sym "@" tag);
NTH_SHIM_VERSIONS(REF)

#define ADDR(sym, id, tag) (void *)ref_##sym##_##id,
void *volatile nth_symver_refs[] = { NTH_SHIM_VERSIONS(ADDR) };

int main(void)
{
    return nth_symver_refs[0] == 0;
}
