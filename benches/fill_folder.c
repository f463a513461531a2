// How many run-log names one folder takes: creates empty files named like
// run logs in DIR (an empty folder), one after the other, until the first is
// refused, then tries MORE names past it (default 2,000,000) and prints how
// many of each 200,000 were refused for want of space; any other error stops
// it (BENCHMARKS.md, "Per turn at scale": ext4 without large_dir). Empty
// files need an inode each and no data block: give the file system the inodes.
//   gcc -O2 -o /tmp/fill_folder benches/fill_folder.c
//   /tmp/fill_folder /mnt/j/default [MORE]
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Creates the i-th name of a series (`suffix` tells the two series apart):
// 0, or the negated errno.
static int create(const char *dir, long i, char suffix) {
    char p[512];
    snprintf(p, sizeof p, "%s/20261204T170005.566Z-%08lx-bf35-4063-9a20-6c5b92cd50b%c.ndjson", dir, i, suffix);
    int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) return -errno;
    return close(fd) < 0 ? -errno : 0;
}

int main(int argc, char **argv) {
    char *end = NULL;
    long more = argc > 2 ? strtol(argv[2], &end, 10) : 2000000;
    if (argc < 2 || strlen(argv[1]) > 300 || (end && (*end || more < 0))) {
        fprintf(stderr, "usage: fill_folder DIR [MORE], DIR an empty folder, MORE a count\n");
        return 2;
    }
    long i = 0;
    int error;
    while ((error = create(argv[1], i, '0')) == 0)
        if (++i % 1000000 == 0) { printf("%ld names\n", i); fflush(stdout); }
    printf("refused after %ld names: %s\n", i, strerror(-error));
    if (error != -ENOSPC) return 1;
    long refused = 0, tried = 0;
    for (long j = 1; j <= more; j++) {
        error = create(argv[1], j, '1');
        if (error == -ENOSPC) refused++;
        else if (error < 0) { printf("name %ld more: %s\n", j, strerror(-error)); return 1; }
        if (++tried == 200000 || j == more) {
            printf("%ld more tried: %ld of the last %ld refused\n", j, refused, tried);
            fflush(stdout);
            refused = tried = 0;
        }
    }
    return 0;
}
