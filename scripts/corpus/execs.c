/* Spins, then execve()s ARGV[2..] (the new program's samples follow the old one's). */
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
__attribute__((noinline)) static void before_exec(long ms) {
    struct timespec a, b; volatile unsigned long x = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do { for (int i = 0; i < 100000; i++) x += i; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b); }
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    before_exec(atol(argv[1]));
    execv(argv[2], argv + 2);
    return 127;
}
