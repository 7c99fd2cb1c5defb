// What moving ring bytes into a file costs the thread that moves them: `sendfile` from a
// memfd (tmpfs) into the page cache, against an O_DIRECT `pwrite` from a mapping of the same
// memfd (whole pages, past the page cache). A producer thread fills a 128 MiB ring at RATE
// bytes a second; the drain moves what is new every 50 ms, as framelab's drain does at
// 20 Hz; the drain thread's CPU (RUSAGE_THREAD) is printed per second and per byte.
//
//   cc -O2 -o /tmp/spill_copy benches/spill/spill_copy.c -lpthread
//   /tmp/spill_copy sendfile|direct OUT_FILE RATE SECONDS     (e.g. direct /var/tmp/x 32000000 6)
//
// OUT_FILE must be on the filesystem to measure (ext4 here): tmpfs takes no O_DIRECT.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>
#include <stdatomic.h>
#define RING (128ull << 20)
static char *ring; static _Atomic unsigned long long head; static long rate; static volatile int done;
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec/1e9;}
static void *producer(void *a){ double t0=now(); unsigned long long h=0; while(!done){ unsigned long long want=(unsigned long long)((now()-t0)*rate); want&=~31ull; while(h<want){ unsigned long long o=h%RING; ((unsigned long long*)(ring+o))[0]=h; ((unsigned long long*)(ring+o))[1]=h*3; ((unsigned long long*)(ring+o))[2]=h^7; ((unsigned long long*)(ring+o))[3]=1; h+=32;} atomic_store(&head,h); struct timespec s={0,200000}; nanosleep(&s,0);} return 0;}
static double thread_cpu(void){struct rusage u; getrusage(RUSAGE_THREAD,&u); return u.ru_utime.tv_sec+u.ru_utime.tv_usec/1e6+u.ru_stime.tv_sec+u.ru_stime.tv_usec/1e6;}
int main(int argc,char**argv){ const char*mode=argv[1]; const char*path=argv[2]; rate=atol(argv[3]); int secs=atoi(argv[4]);
 int mfd=memfd_create("ring",0); ftruncate(mfd,RING); ring=mmap(0,RING,PROT_READ|PROT_WRITE,MAP_SHARED,mfd,0); memset(ring,1,RING);
 int direct=!strcmp(mode,"direct"); int out=open(path,O_WRONLY|O_CREAT|O_TRUNC|(direct?O_DIRECT:0),0644); if(out<0){perror("open");return 1;}
 pthread_t p; pthread_create(&p,0,producer,0);
 unsigned long long tail=0, fileoff=0; double c0=thread_cpu(), t0=now(); long calls=0;
 while(now()-t0<secs){ struct timespec s={0,50000000}; nanosleep(&s,0);
   unsigned long long h=atomic_load(&head);
   if(direct){ unsigned long long end=h&~4095ull; while(tail<end){ unsigned long long o=tail%RING; unsigned long long n=end-tail; if(n>RING-o)n=RING-o; ssize_t w=pwrite(out,ring+o,n,fileoff); if(w<0){perror("pwrite");return 1;} tail+=w; fileoff+=w; calls++;} }
   else { while(tail<h){ unsigned long long o=tail%RING; unsigned long long n=h-tail; if(n>RING-o)n=RING-o; off_t off=o; ssize_t w=sendfile(out,mfd,&off,n); if(w<0){perror("sendfile");return 1;} tail+=w; calls++;} }
 }
 double cpu=thread_cpu()-c0, el=now()-t0; done=1; pthread_join(p,0);
 printf("%-8s rate %ld B/s: drain CPU %.2f%% of a core, %.3f ns/B, %ld calls, %llu bytes\n",mode,rate,cpu/el*100,cpu*1e9/tail,calls,tail);
 unlink(path); return 0;}
