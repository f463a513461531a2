// The file-system floor of one run log per turn, with nothing else: create
// <name>.partial exclusively, write a ~2 KB log in WRITES writes (default 3:
// the header, the model call, the footer), close; every 256 logs one syncfs,
// then each renamed to its final name — what `eval::log_commit` does for an
// eval's logs (BENCHMARKS.md, issue #31). Prints nothing: run it under
// `perf stat -e task-clock` or benches/rusage.c.
//   gcc -O2 -o /tmp/log_floor benches/log_floor.c
//   /tmp/log_floor "$(mktemp -d /dev/shm/floor-XXXXXX)" 20000 [WRITES [LAYOUT]]
// LAYOUT prices layouts SPEC §6 does not have, to say what changing it would
// save: `same` (default, today's: the .partial beside its final name, in one
// folder), `aside` (partial logs in DIR/partial/, renamed into DIR), `split`
// (256 subfolders by the name's last two hex digits, the .partial beside its
// final name) and `direct` (the final name written at once, never renamed: no
// atomic completion, a lower bound only).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum layout { SAME, ASIDE, SPLIT, DIRECT };

// The log's final name and, unless written directly, its partial name.
static void names(const char *dir, enum layout layout, int i, char *partial, char *final) {
    const char *stem = "20261202T081500.000Z-aaaa-bbbb-cccc-dddd";
    char sub[16] = "";
    if (layout == SPLIT) snprintf(sub, sizeof sub, "/%02x", i & 0xff);
    snprintf(final, 512, "%s%s/%s-%08x.ndjson", dir, sub, stem, i);
    if (layout == ASIDE)
        snprintf(partial, 512, "%s/partial/%s-%08x.ndjson.partial", dir, stem, i);
    else
        snprintf(partial, 512, "%s.partial", final);
}

static int make_folders(const char *dir, enum layout layout) {
    char p[512];
    if (layout == ASIDE) {
        snprintf(p, sizeof p, "%s/partial", dir);
        if (mkdir(p, 0755) < 0) { perror("mkdir"); return -1; }
    }
    for (int s = 0; layout == SPLIT && s < 256; s++) {
        snprintf(p, sizeof p, "%s/%02x", dir, s);
        if (mkdir(p, 0755) < 0) { perror("mkdir"); return -1; }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: log_floor DIR LOGS [WRITES [same|aside|split|direct]]\n");
        return 2;
    }
    const char *dir = argv[1];
    int n = atoi(argv[2]);
    int writes = argc > 3 ? atoi(argv[3]) : 3;
    const char *how = argc > 4 ? argv[4] : "same";
    if (strlen(dir) > 300) {
        fprintf(stderr, "log_floor: DIR is longer than 300 bytes\n");
        return 2;
    }
    if (n < 1 || writes < 1 || writes > 2100) {
        fprintf(stderr, "log_floor: LOGS and WRITES must be whole numbers, WRITES 1 to 2100\n");
        return 2;
    }
    enum layout layout = !strcmp(how, "aside") ? ASIDE : !strcmp(how, "split") ? SPLIT
                       : !strcmp(how, "direct") ? DIRECT : SAME;
    if (layout == SAME && strcmp(how, "same")) {
        fprintf(stderr, "log_floor: no layout %s (same, aside, split or direct)\n", how);
        return 2;
    }
    char buf[2100]; memset(buf, 'x', sizeof buf);
    char p[512], f[512];
    if (make_folders(dir, layout) < 0) return 1;
    snprintf(p, sizeof p, "%s/keep", dir);
    int keep = open(p, O_CREAT | O_WRONLY, 0644);
    if (keep < 0) { perror("open"); return 1; }
    for (int start = 0; start < n; start += 256) {
        int end = start + 256 < n ? start + 256 : n;
        for (int i = start; i < end; i++) {
            names(dir, layout, i, p, f);
            int fd = open(layout == DIRECT ? f : p, O_CREAT | O_EXCL | O_WRONLY, 0644);
            if (fd < 0) { perror("open"); return 1; }
            size_t len = sizeof buf / writes;
            for (int w = 0; w < writes; w++)
                if (write(fd, buf, len) != (ssize_t)len) { perror("write"); return 1; }
            if (close(fd) < 0) { perror("close"); return 1; }
        }
        if (syncfs(keep) < 0) { perror("syncfs"); return 1; }
        for (int i = start; i < end && layout != DIRECT; i++) {
            names(dir, layout, i, p, f);
            if (rename(p, f) < 0) { perror("rename"); return 1; }
        }
    }
    return 0;
}
