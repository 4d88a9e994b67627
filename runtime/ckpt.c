/* SPDX-License-Identifier: MIT */
/* ckpt.c: the checkpoint directory's file operations (ckpt.h). The invariant it keeps: a
 * directory under its final name is complete. Every file in it was written and fsynced before
 * the directory itself was fsynced and renamed into place, and the parent is fsynced after the
 * rename, so the rename survives a power loss too. Errors are negative errno values (libuv's
 * UV_E* on the platforms weir runs on, so weir_strerror names them). */
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

/* the framing Lua writes through the FFI: the same bytes on every LP64 host */
_Static_assert(sizeof(weir_ckpt_header_t) == 32, "weir_ckpt_header_t is 32 bytes");
_Static_assert(offsetof(weir_ckpt_header_t, crc) == 28, "weir_ckpt_header_t: crc at 28");
_Static_assert(sizeof(weir_ckpt_section_t) == 32, "weir_ckpt_section_t is 32 bytes");
_Static_assert(offsetof(weir_ckpt_section_t, payload_len) == 16, "section: length at 16");
_Static_assert(offsetof(weir_ckpt_section_t, crc) == 28, "weir_ckpt_section_t: crc at 28");

uint32_t weir_ckpt_crc32(uint32_t crc, const void *bytes, size_t len)
{
    /* zlib's crc32_z takes the length as z_size_t, so no 4 GiB split is needed */
    if (bytes == NULL || len == 0) {
        return crc;
    }
    return (uint32_t)crc32_z((uLong)crc, bytes, (z_size_t)len);
}

double weir_ckpt_clock_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) {
        return 0.0;
    }
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

double weir_ckpt_cpu_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return 0.0;
    }
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int open_retry(const char *path, int flags, mode_t mode)
{
    int fd;
    do {
        fd = open(path, flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

static int fsync_fd(int fd)
{
    int rc;
    do {
        rc = fsync(fd);
    } while (rc < 0 && errno == EINTR);
    return rc < 0 ? -errno : 0;
}

int weir_ckpt_lock(const char *dir)
{
    if (dir == NULL) {
        return WEIR_EINVAL;
    }
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/LOCK", dir) >= (int)sizeof path) {
        return -ENAMETOOLONG;
    }
    int fd = open_retry(path, O_RDWR | O_CREAT, 0666);
    if (fd < 0) {
        return fd;
    }
    /* flock, not fcntl locks: it belongs to this open file description, so a second open in
     * the same process conflicts too, and the kernel drops it when the process dies */
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int code = -errno;
        close(fd);
        return code == -EWOULDBLOCK ? -EAGAIN : code;
    }
    return fd;
}

int weir_ckpt_unlock(int32_t fd)
{
    if (fd < 0) {
        return WEIR_EINVAL;
    }
    return close(fd) < 0 ? -errno : 0; /* closing the last descriptor releases the flock */
}

int weir_ckpt_write_file(const char *path, const void *bytes, size_t len)
{
    if (path == NULL || (bytes == NULL && len > 0)) {
        return WEIR_EINVAL;
    }
    int fd = open_retry(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) {
        return fd;
    }
    const char *p = bytes;
    size_t left = len;
    int rc = 0;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            rc = w < 0 ? -errno : -EIO;
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (rc == 0) {
        rc = fsync_fd(fd);
    }
    if (close(fd) < 0 && rc == 0) {
        rc = -errno; /* NFS reports a deferred write error only here */
    }
    return rc;
}

int weir_ckpt_fsync_path(const char *path)
{
    if (path == NULL) {
        return WEIR_EINVAL;
    }
    /* O_RDONLY works for directories and files alike; fsync flushes the inode, whichever
     * descriptor it is called on */
    int fd = open_retry(path, O_RDONLY, 0);
    if (fd < 0) {
        return fd;
    }
    int rc = fsync_fd(fd);
    close(fd);
    return rc;
}

/* The directory that holds path: "a/b/c" -> "a/b", "c" -> ".". */
static void parent_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        snprintf(out, cap, ".");
    } else if (slash == path) {
        snprintf(out, cap, "/");
    } else {
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
    }
}

int weir_ckpt_commit(const char *tmp_dir, const char *final_dir)
{
    if (tmp_dir == NULL || final_dir == NULL) {
        return WEIR_EINVAL;
    }
    int rc = weir_ckpt_fsync_path(tmp_dir); /* the directory's entries for its files */
    if (rc < 0) {
        return rc;
    }
    struct stat st;
    if (lstat(final_dir, &st) == 0) {
        return -EEXIST; /* ids are never reused: an existing name is a bug or a second writer */
    }
    if (rename(tmp_dir, final_dir) < 0) {
        return -errno;
    }
    char parent[PATH_MAX];
    parent_of(final_dir, parent, sizeof parent);
    return weir_ckpt_fsync_path(parent);
}

int weir_ckpt_remove(const char *dir)
{
    if (dir == NULL) {
        return WEIR_EINVAL;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        return errno == ENOENT ? 0 : -errno;
    }
    int rc = 0;
    struct dirent *e;
    char path[PATH_MAX];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) {
            rc = -ENAMETOOLONG;
            continue;
        }
        if (unlink(path) < 0 && rc == 0) {
            rc = -errno; /* a checkpoint holds files only: a subdirectory is EISDIR here */
        }
    }
    closedir(d);
    if (rc == 0 && rmdir(dir) < 0) {
        rc = -errno;
    }
    return rc;
}

int32_t weir_ckpt_list(const char *dir, char *out, size_t cap)
{
    if (dir == NULL || (out == NULL && cap > 0)) {
        return WEIR_EINVAL;
    }
    DIR *d = opendir(dir);
    if (d == NULL) {
        return -errno;
    }
    size_t need = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        size_t n = strlen(e->d_name) + 1;
        if (need + n <= cap) {
            memcpy(out + need, e->d_name, n);
        }
        need += n;
        if (need > INT32_MAX) {
            closedir(d);
            return -E2BIG;
        }
    }
    closedir(d);
    return (int32_t)need;
}

int weir_ckpt_truncate(const char *path, double length)
{
    if (path == NULL || !(length >= 0) || length > 9.0e15) {
        return WEIR_EINVAL;
    }
    int fd = open_retry(path, O_WRONLY, 0);
    if (fd < 0) {
        return fd;
    }
    int rc = 0;
    if (ftruncate(fd, (off_t)length) < 0) {
        rc = -errno;
    }
    if (rc == 0) {
        rc = fsync_fd(fd);
    }
    close(fd);
    return rc;
}

/* The writer process: fork() gives it the job's memory as it is between two batches (copy on
 * write), so it makes the sections and writes the checkpoint while the job goes on. */
int32_t weir_ckpt_fork(int32_t lock_fd, int32_t *msg_fd)
{
    if (msg_fd == NULL) {
        return WEIR_EINVAL;
    }
    int fds[2];
    if (pipe(fds) < 0) {
        return -errno;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int code = -errno;
        close(fds[0]);
        close(fds[1]);
        return code;
    }
    if (pid == 0) {
        close(fds[0]);
        /* the lock stays the job's alone: a rerun after the job is killed must find it free */
        if (lock_fd >= 0) {
            close(lock_fd);
        }
#ifdef __linux__
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the job killed (kill -9): its writer with it */
#endif
        if (getppid() != parent) {
            _exit(1); /* the job died before the line above */
        }
        /* the job's signal handlers (libuv's) would write into the job's own signal pipe: a
         * Ctrl-C reaching the process group must stop the job once, not twice */
        static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE };
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
            signal(sigs[i], SIG_IGN);
        }
        *msg_fd = fds[1];
        return 0;
    }
    close(fds[1]);
    *msg_fd = fds[0];
    return (int32_t)pid;
}

void weir_ckpt_child_exit(int32_t msg_fd, const char *msg, size_t len)
{
    /* the pipe holds 64 KiB; the job reads it only after the exit, so never more */
    if (len > WEIR_CKPT_MSG_MAX) {
        len = WEIR_CKPT_MSG_MAX;
    }
    const char *p = msg;
    while (len > 0 && p != NULL) {
        ssize_t w = write(msg_fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    _exit(0); /* never exit(): stdio buffers and atexit handlers are the job's */
}

static double writer_cpu_ms; /* the CPU time of the writer weir_ckpt_wait reaped last */
static double writer_faults; /* and its page faults (minor + major) */

double weir_ckpt_writer_cpu_ms(void)
{
    return writer_cpu_ms;
}

double weir_ckpt_writer_faults(void)
{
    return writer_faults;
}

int32_t weir_ckpt_wait(int32_t pid, int32_t msg_fd, int32_t block, char *out, size_t cap,
                       int32_t *status)
{
    if (pid <= 0 || out == NULL || cap == 0 || status == NULL) {
        return WEIR_EINVAL;
    }
    int st = 0;
    pid_t got;
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    do {
        got = wait4((pid_t)pid, &st, block ? 0 : WNOHANG, &ru);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
        return -errno;
    }
    if (got == 0) {
        return 0; /* still writing */
    }
    writer_cpu_ms = (double)ru.ru_utime.tv_sec * 1e3 + (double)ru.ru_utime.tv_usec / 1e3 +
                    (double)ru.ru_stime.tv_sec * 1e3 + (double)ru.ru_stime.tv_usec / 1e3;
    writer_faults = (double)ru.ru_minflt + (double)ru.ru_majflt;
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : (WIFSIGNALED(st) ? -WTERMSIG(st) : -1);
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(msg_fd, out + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
    }
    out[n] = '\0';
    close(msg_fd);
    return (int32_t)n + 1;
}
