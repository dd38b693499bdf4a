/* What the memory benchmarks share: a measurement in a child process of its own
 * (so that peaks do not mix) and the kernel's figures of the process's memory. */
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/bench.h"

size_t bench_proc_status_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t klen = strlen(key), kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && line[klen] == ':') kb = strtoull(line + klen + 1, NULL, 10);
    if (f) fclose(f);
    return kb * 1024;
}

int bench_in_child(void (*measure)(void *ctx, void *result), void *ctx, void *result, size_t result_bytes) {
    int fd[2];
    if (pipe(fd)) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        measure(ctx, result);
        ssize_t w = write(fd[1], result, result_bytes);
        _exit(w == (ssize_t)result_bytes ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], result, result_bytes);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return got == (ssize_t)result_bytes && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
