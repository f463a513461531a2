// The file-system floor of a stored prompt (`keyed_files::write_once`),
// three ways, with nothing else: FILES files of ~20 KB written once each
// under a hex-like name, no sync of their own (a group's `syncfs` covers
// them), one `sync` at the end. MODE 0 is what promptlab does: a temporary
// created exclusively, written, closed, linked to the name (the first link
// wins), unlinked. MODE 1: the temporary renamed to the name with
// `renameat2(RENAME_NOREPLACE)`. MODE 2: an `O_TMPFILE` written, then
// linked to the name with `linkat`. Prints the CPU a file (user + system)
// (BENCHMARKS.md, issue #31, "What a run's CPU scales with").
//   gcc -O2 -o /tmp/prompt_file_floor benches/prompt_file_floor.c
//   for m in 0 1 2; do /tmp/prompt_file_floor "$(mktemp -d /mnt/j/pf-XXXXXX)" $m 3000; done
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static char bytes[20000];

static double cpu_seconds(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec +
           (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static int store(const char *dir, int mode, int i) {
    char temp[512], name[512];
    snprintf(name, sizeof name, "%s/%064d.json", dir, i);
    snprintf(temp, sizeof temp, "%s/.%064d.json.1.%d.tmp", dir, i, i);
    if (mode == 2) {
        int fd = open(dir, O_WRONLY | O_TMPFILE | O_CLOEXEC, 0644);
        if (fd < 0 || write(fd, bytes, sizeof bytes) != sizeof bytes) return -1;
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
        int linked = linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW);
        close(fd);
        return linked;
    }
    int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, bytes, sizeof bytes) != sizeof bytes) return -1;
    close(fd);
    if (mode == 1)
        return syscall(SYS_renameat2, AT_FDCWD, temp, AT_FDCWD, name, RENAME_NOREPLACE);
    int linked = link(temp, name);
    return linked < 0 ? linked : unlink(temp);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: prompt_file_floor DIR MODE FILES\n");
        return 2;
    }
    int mode = atoi(argv[2]), files = atoi(argv[3]);
    memset(bytes, 'x', sizeof bytes);
    double start = cpu_seconds();
    for (int i = 0; i < files; i++) {
        if (store(argv[1], mode, i) < 0) {
            perror("store");
            return 1;
        }
    }
    sync();
    printf("mode %d: %.4f ms a file\n", mode, (cpu_seconds() - start) * 1000 / files);
    return 0;
}
