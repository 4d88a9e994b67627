/* SPDX-License-Identifier: MIT */
/* bench_measure CMD ARGS...: runs CMD, passes its stdout and stderr through, then prints
 * "wall_s=<seconds> cpu_s=<user + system seconds> maxrss_kb=<peak RSS>" on stderr and exits
 * with CMD's status. CPU and peak RSS are getrusage(RUSAGE_CHILDREN) after the wait: this
 * program has no other children, so they are CMD's own (with the CPU of the descendants it
 * waited for, such as weir's checkpoint writers; the peak: of its largest one). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_measure CMD [ARGS...]\n");
        return 2;
    }
    /* Nothing buffered here may be duplicated into the child. */
    fflush(NULL);
    double start = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "bench_measure: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        fprintf(stderr, "bench_measure: %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "bench_measure: waitpid: %s\n", strerror(errno));
            return 2;
        }
    }
    double wall = now_s() - start;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    getrusage(RUSAGE_CHILDREN, &ru);
    /* Linux reports ru_maxrss in kilobytes. */
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                 (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    fprintf(stderr, "wall_s=%.6f cpu_s=%.6f maxrss_kb=%ld\n", wall, cpu, ru.ru_maxrss);
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "bench_measure: %s killed by signal %d\n", argv[1], WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    return 1;
}
