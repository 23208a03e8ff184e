/* Forks N children that each spin MS milliseconds, then waits for them. */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
__attribute__((noinline)) static void child_work(long ms) {
    struct timespec a, b; volatile unsigned long x = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do { for (int i = 0; i < 100000; i++) x += i; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b); }
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 3; long ms = argc > 2 ? atol(argv[2]) : 100;
    for (int i = 0; i < n; i++) if (fork() == 0) { child_work(ms); _exit(0); }
    while (wait(0) > 0) {}
    return 0;
}
