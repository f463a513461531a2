// Runs a command and writes its CPU and memory to FILE as `user sys wall
// peak_rss_kb`: the fields of `/usr/bin/time -f "%U %S %e %M"`, but CPU to
// the microsecond. GNU time prints CPU seconds to two decimals, and a
// 1,008-turn eval costs about 0.1 s: ±10% from rounding alone. A small C
// parent, like GNU time, so that the child's peak RSS starts from this
// program's ~1 MB, not from an interpreter's (a child's peak counts what it
// shared with its parent before exec). BENCHMARKS.md, issue #31.
//   gcc -O2 -o /tmp/rusage benches/rusage.c
//   /tmp/rusage FILE COMMAND [ARG...]
// The command's exit status is passed on; one that cannot be started exits
// 127 with no figures written.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: rusage FILE COMMAND [ARG...]\n");
        return 2;
    }
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 2; }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror(argv[2]);
        _exit(127);
    }
    int status;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) < 0) { perror("wait4"); return 2; }
    clock_gettime(CLOCK_MONOTONIC, &end);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code == 127) return 127;
    FILE *out = fopen(argv[1], "w");
    if (!out) { perror(argv[1]); return 2; }
    fprintf(out, "%ld.%06ld %ld.%06ld %.6f %ld\n",
            (long)usage.ru_utime.tv_sec, (long)usage.ru_utime.tv_usec,
            (long)usage.ru_stime.tv_sec, (long)usage.ru_stime.tv_usec,
            (end.tv_sec - start.tv_sec) + (end.tv_nsec - start.tv_nsec) / 1e9,
            usage.ru_maxrss);
    fclose(out);
    return code;
}
