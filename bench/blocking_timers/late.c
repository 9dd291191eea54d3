/* bench/blocking_timers/late.c -- 
 * build: gcc -O2 -Iinclude -o late bench/blocking_timers/late.c -Lbuild/.libs -lnth -Wl,-rpath,$PWD/build/.libs
 * (timers9 section of bench/RESULTS.md). */
/* Lateness of a 2 ms nth_sleep_ns armed on a VP whose kernel thread then
 * blocks in read() inside nth_blocking_enter (reader=1), or with no reader
 * (reader=0). usage: late VPS READER N; prints p50 p90 max in us. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "nth.h"
static int pfd[2], target;
static uint64_t now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return (uint64_t)t.tv_sec*1000000000u+t.tv_nsec;}
static void *rd(void *a){(void)a;while(nth_vp_id()!=target) nth_move_to_vp(target);char c;nth_blocking_enter();if(read(pfd[0],&c,1)!=1)abort();nth_blocking_leave();return 0;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){int vps=atoi(argv[1]),reader=atoi(argv[2]),n=atoi(argv[3]);
 nth_config_t c;nth_config_default(&c);c.vps=vps;nth_init(&c);double *l=calloc(n,sizeof *l);
 for(int i=0;i<n;i++){pipe(pfd);nth_t r;target=nth_vp_id()<0?0:nth_vp_id();if(reader)nth_create(&r,0,rd,0);
  uint64_t t0=now();nth_sleep_ns(2000000);l[i]=(now()-t0-2000000)/1000.0;
  if(reader){write(pfd[1],"x",1);nth_join(r,0);}close(pfd[0]);close(pfd[1]);}
 qsort(l,n,sizeof *l,cmp);printf("vps=%d reader=%d n=%d lateness us p50 %.0f p90 %.0f max %.0f\n",vps,reader,n,l[n/2],l[n*9/10],l[n-1]);return 0;}
