/* NVRTC timing probe: nt2 SRC ARCH par|seq|warmpar KERNEL... compiles each kernel
 * (-DMX_COMPILE_ONE -DMX_COMPILE_<k>) in its own thread (par) or one after the
 * other (seq); warmpar first compiles an empty program. Prints per-kernel and wall ms. */
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static char *src; static const char *arch;
typedef struct { const char *k; double ms; int ok; } job;
static void *run(void *p){ job *j=p; char d1[256],a[64]; snprintf(d1,sizeof d1,"-DMX_COMPILE_%s",j->k); snprintf(a,sizeof a,"-arch=%s",arch);
  const char *o[]={a,"-std=c++17","-default-device","--minimal","--ptxas-options=-v","-DMX_COMPILE_ONE",d1};
  double t0=now(); nvrtcProgram pr; nvrtcCreateProgram(&pr,src,"k.cu",0,0,0);
  j->ok = nvrtcCompileProgram(pr,7,o)==NVRTC_SUCCESS; size_t n; nvrtcGetCUBINSize(pr,&n); nvrtcDestroyProgram(&pr); j->ms=now()-t0; return 0; }
int main(int argc,char**argv){
  double t00=now();
  FILE*f=fopen(argv[1],"rb");fseek(f,0,2);long n=ftell(f);fseek(f,0,0);src=malloc(n+1);fread(src,1,n,f);src[n]=0;fclose(f);
  arch=argv[2]; const char*mode=argv[3]; int nk=argc-4; job js[16]; pthread_t th[16];
  if(!strcmp(mode,"warmpar")){ double t=now(); job w={"none",0,0}; char*s=src; src="__global__ void k(){}"; run(&w); src=s; printf("warm-up %.1f ms\n",now()-t); }
  double t0=now();
  for(int i=0;i<nk;i++){ js[i].k=argv[4+i]; if(!strcmp(mode,"seq")) run(&js[i]); else pthread_create(&th[i],0,run,&js[i]); }
  if(strcmp(mode,"seq")) for(int i=0;i<nk;i++) pthread_join(th[i],0);
  double t1=now();
  for(int i=0;i<nk;i++) printf("  %s %s %.1f ms\n", js[i].ok?"ok":"FAIL", js[i].k+strlen(js[i].k)-(strlen(js[i].k)>12?12:strlen(js[i].k)), js[i].ms);
  printf("%s wall %.1f ms (process %.1f ms)\n",mode,t1-t0,t1-t00);
  return 0;}
