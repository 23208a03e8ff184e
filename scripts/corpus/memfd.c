/* Code run from a memfd mapping (shows as /memfd:corpus-code (deleted)). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 200000000UL;
    unsigned char code[] = {0x48,0xb9, 0,0,0,0,0,0,0,0, 0x48,0xff,0xc9, 0x75,0xfb, 0xc3};
    memcpy(code + 2, &n, 8);
    int fd = memfd_create("corpus-code", 0);
    if (fd < 0 || write(fd, code, sizeof code) != sizeof code || ftruncate(fd, 4096)) return 1;
    void *p = mmap(0, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return 1;
    ((void (*)(void))p)();
    return 0;
}
