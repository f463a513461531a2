// The file-system floor of one run log per turn, with nothing else: create
// <name>.partial exclusively, write a ~2 KB log in WRITES writes (default 3:
// the header, the model call, the footer), close; every 256 logs one syncfs,
// then each renamed to its final name — what `sink::log_commit` does for an
// eval's logs (BENCHMARKS.md, issue #31). Prints nothing: run it under
// `perf stat -e task-clock` or benches/rusage.c.
//   gcc -O2 -o /tmp/log_floor benches/log_floor.c
//   /tmp/log_floor "$(mktemp -d /dev/shm/floor-XXXXXX)" 20000 [WRITES]
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: log_floor DIR LOGS [WRITES]\n");
        return 2;
    }
    const char *dir = argv[1];
    int n = atoi(argv[2]);
    int writes = argc > 3 ? atoi(argv[3]) : 3;
    char buf[2100]; memset(buf, 'x', sizeof buf);
    char p[512], f[512];
    snprintf(p, sizeof p, "%s/keep", dir);
    int keep = open(p, O_CREAT | O_WRONLY, 0644);
    if (keep < 0) { perror("open"); return 1; }
    for (int start = 0; start < n; start += 256) {
        int end = start + 256 < n ? start + 256 : n;
        for (int i = start; i < end; i++) {
            snprintf(p, sizeof p, "%s/20261202T081500.000Z-%08d-aaaa-bbbb-cccc-dddddddddddd.ndjson.partial", dir, i);
            int fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0) { perror("open"); return 1; }
            for (int w = 0; w < writes; w++)
                if (write(fd, buf, sizeof buf / writes) < 0) { perror("write"); return 1; }
            close(fd);
        }
        if (syncfs(keep) < 0) { perror("syncfs"); return 1; }
        for (int i = start; i < end; i++) {
            snprintf(p, sizeof p, "%s/20261202T081500.000Z-%08d-aaaa-bbbb-cccc-dddddddddddd.ndjson.partial", dir, i);
            snprintf(f, sizeof f, "%s/20261202T081500.000Z-%08d-aaaa-bbbb-cccc-dddddddddddd.ndjson", dir, i);
            if (rename(p, f) < 0) { perror("rename"); return 1; }
        }
    }
    return 0;
}
