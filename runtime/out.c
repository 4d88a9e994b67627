/* SPDX-License-Identifier: MIT */
/* out.c: standard output and error for the print sinks (weir_out_*). stdout stays C stdio's
 * stream, so the print sinks, Lua's print and io.write and the REPL share one buffer and one
 * order; weir gives that stream its buffer (setvbuf), so that the pending bytes are plain
 * memory at a known address: [out_buf, out_buf + __fpending(stdout)). That holds for glibc
 * and musl, whose stdio resets the write position to the buffer start on every flush. A write
 * error is sticky: the print sink that sees it fails the job. */
#include "out.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "mem.h"
#include "weir.h"

enum { WR_OUT_BUF = 64 * 1024 };

static char out_buf[WR_OUT_BUF];
static int out_err[3];                    /* sticky errno per fd (1, 2), 0 = none */
static volatile sig_atomic_t overdue;     /* the stop's wait for stdout ran out */
static volatile sig_atomic_t nonblocking; /* wr_out_overdue set O_NONBLOCK on fd 1 */
static volatile sig_atomic_t saved_flags; /* fd 1's flags before that */
static volatile sig_atomic_t writing;     /* weir is in an fwrite or fflush of stdout */
static int gave_up;                       /* stdout is stalled: later output is counted */
static int status_shown;                  /* the --progress line is on the terminal */
static int stdout_tty;                    /* stdout is a terminal (set by wr_out_init) */
static double lost;                       /* bytes dropped because stdout stalled */

static void on_sigpipe(int signo)
{
    (void)signo; /* caught, not ignored: exec'd children get the default back */
}

void wr_out_init(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) == -1 && errno == EBADF) {
            /* the lowest free descriptor, so it is fd; readable only for 1 and 2 */
            (void)open("/dev/null", fd == 0 ? O_WRONLY : O_RDONLY);
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigpipe;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPIPE, &sa, NULL);
    stdout_tty = isatty(1);
    setvbuf(stdout, out_buf, stdout_tty ? _IOLBF : _IOFBF, sizeof out_buf);
}

void wr_out_clear_status(void)
{
    if (status_shown) {
        status_shown = 0;
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

/* Async-signal-safe (fcntl only): wr_out_dump calls it on the way out. */
void wr_out_release(void)
{
    if (nonblocking) {
        fcntl(1, F_SETFL, (int)saved_flags);
        nonblocking = 0;
    }
}

void wr_out_overdue(void)
{
    int saved = errno;
    overdue = 1;
    if (!nonblocking) {
        int fl = fcntl(1, F_GETFL);
        if (fl != -1) {
            saved_flags = fl;
            nonblocking = 1;
            fcntl(1, F_SETFL, fl | O_NONBLOCK);
        }
    }
    errno = saved;
}

static FILE *stream_of(int fd)
{
    return fd == 1 ? stdout : fd == 2 ? stderr : NULL;
}

/* A write or flush of stream fd failed, with at_risk bytes in flight (pending plus new). An
 * overdue stop turns a blocked stdout into lost output; anything else is the stream's error.
 * stdio has dropped its buffer either way; purging makes sure nothing half-written is
 * retried. */
static int failed(int fd, size_t at_risk)
{
    FILE *f = stream_of(fd);
    int e = errno != 0 ? errno : EIO;
    clearerr(f);
    __fpurge(f);
    if (fd == 1 && overdue && (e == EAGAIN || e == EWOULDBLOCK || e == EINTR)) {
        gave_up = 1;
        lost += (double)at_risk;
        return 0;
    }
    out_err[fd] = e;
    return uv_translate_sys_error(e);
}

int weir_out_write(int32_t fd, const char *bytes, size_t len)
{
    FILE *f = stream_of(fd);
    if (f == NULL) {
        return WEIR_EINVAL;
    }
    if (out_err[fd] != 0) {
        return uv_translate_sys_error(out_err[fd]);
    }
    if (fd == 1 && gave_up) {
        lost += (double)len;
        return 0;
    }
    if (len == 0) {
        return 0;
    }
    if (status_shown && (fd == 2 || stdout_tty)) {
        wr_out_clear_status();
    }
    size_t before = __fpending(f);
    errno = 0;
    writing = fd == 1;
    int bad = fwrite(bytes, 1, len, f) != len || ferror(f);
    writing = 0;
    return bad ? failed(fd, before + len) : 0;
}

static int flush(int fd)
{
    FILE *f = stream_of(fd);
    if (out_err[fd] != 0) {
        return uv_translate_sys_error(out_err[fd]);
    }
    if (fd == 1 && gave_up) {
        lost += (double)__fpending(f); /* Lua's print and io.write still land here */
        __fpurge(f);
        return 0;
    }
    size_t before = __fpending(f);
    errno = 0;
    writing = fd == 1;
    int bad = fflush(f) != 0 || ferror(f);
    writing = 0;
    return bad ? failed(fd, before) : 0;
}

int wr_out_flush_stdout(void)
{
    return flush(1);
}

int weir_out_flush(void)
{
    wr_out_clear_status();
    int a = flush(1);
    int b = flush(2);
    return a != 0 ? a : b;
}

void weir_out_status(const char *text, size_t len)
{
    if (out_err[2] != 0) {
        return;
    }
    (void)flush(1); /* what the job wrote goes first, above the line (errors are sticky) */
    fputs("\r\033[K", stderr);
    fwrite(text, 1, len, stderr);
    fflush(stderr);
    status_shown = 1;
}

void weir_out_clear_status(void)
{
    wr_out_clear_status();
}

int weir_out_status_shown(void)
{
    return status_shown;
}

int weir_out_error(int32_t fd)
{
    if (stream_of(fd) == NULL) {
        return WEIR_EINVAL;
    }
    return out_err[fd] != 0 ? uv_translate_sys_error(out_err[fd]) : 0;
}

double weir_out_lost(void)
{
    return lost;
}

/* mkdir(2) per prefix, as mkdir -p, without a shell: a path is never read as options. */
int weir_out_mkdirs(const char *path)
{
    if (path == NULL || path[0] == '\0') {
        return WEIR_EINVAL;
    }
    size_t n = strlen(path);
    char *p = wr_xmalloc(n + 1);
    memcpy(p, path, n + 1);
    int rc = 0;
    for (size_t i = 1; i <= n && rc == 0; i++) {
        if (p[i] != '/' && p[i] != '\0') {
            continue;
        }
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            rc = uv_translate_sys_error(errno);
        }
        p[i] = c;
    }
    wr_free(p);
    struct stat st;
    if (rc == 0 && stat(path, &st) != 0) {
        rc = uv_translate_sys_error(errno);
    } else if (rc == 0 && !S_ISDIR(st.st_mode)) {
        rc = uv_translate_sys_error(ENOTDIR);
    }
    return rc;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe, unlike the clock module */
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Only write(2), poll(2), fcntl(2) and clock_gettime, which are async-signal-safe, and
 * __fpending, which reads two pointers of the FILE without locking it. Nothing is written
 * while weir is inside a write to stdout: that write(2) may have delivered part of the buffer
 * already, and writing it again would repeat records (the reader is stalled then anyway). A
 * user print that makes stdio flush is not seen: then the last record may come out torn. */
size_t wr_out_dump(int timeout_ms)
{
    size_t n = __fpending(stdout);
    if (n > sizeof out_buf) {
        return 0;
    }
    if (out_err[1] != 0 || gave_up || writing) {
        wr_out_release(); /* weir exits: the descriptor may be shared (a terminal) */
        return n;
    }
    int fl = fcntl(1, F_GETFL);
    if (fl != -1) {
        fcntl(1, F_SETFL, fl | O_NONBLOCK); /* a stalled reader must not hold the exit */
    }
    int64_t deadline = mono_ms() + timeout_ms;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(1, out_buf + off, n - off);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            int64_t left = deadline - mono_ms();
            if (left <= 0) {
                break;
            }
            struct pollfd p = { .fd = 1, .events = POLLOUT };
            (void)poll(&p, 1, (int)left);
            continue;
        }
        break;
    }
    if (fl != -1) {
        fcntl(1, F_SETFL, fl);
    }
    wr_out_release();
    return n - off;
}
