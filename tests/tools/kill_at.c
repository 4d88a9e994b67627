/* SPDX-License-Identifier: MIT */
/* kill_at: runs a command and sends it SIGKILL when a condition on its files comes true, for the
 * kill -9 loops (tests/ckpt). Event-driven: it waits on inotify for the command's writes, with
 * a bounded re-check every 20 ms in case an event is missed; there is no fixed deadline, so a
 * slow machine only makes it wait longer.
 *
 *   kill_at COND -- CMD [ARG...]
 *
 * COND is one of
 *   now                    kill at once (before the command's first checkpoint)
 *   size FILE N            when FILE has at least N bytes
 *   commits DIR N          after N checkpoints were committed into DIR (renamed into place)
 *   writing DIR STEP       while a checkpoint is written into DIR: STEP 0 when its .tmp-
 *                          directory appears, 1 when its state file is created, 2 when the
 *                          state file is closed (before the MANIFEST), 3 when the MANIFEST is
 *                          created, 4 when the directory is renamed into place
 * Exits 200 when it killed the command; else with the command's own status (128+N for a
 * signal N it died of), also when the command ended before the condition came true; 2 on a
 * usage or system error before the command ran. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { RECHECK_MS = 20 };

typedef enum { C_NOW, C_SIZE, C_COMMITS, C_WRITING } cond_t;

static cond_t cond;
static const char *path;
static long long want;
static long long commits;
static int ifd = -1;
static int tmp_wd = -1;
static int dir_wd = -1;
static int step_seen;
static int cwd_wd = -1;
static char watch_dir[4096];

#define WATCH_MASK (IN_CREATE | IN_MODIFY | IN_MOVED_TO | IN_CLOSE_WRITE)

static int usage(void)
{
    fprintf(stderr, "usage: kill_at now|size FILE N|commits DIR N|writing DIR STEP -- CMD...\n");
    return 2;
}

/* the directory that holds p ("." for a bare name) */
static void parent_of(const char *p, char *out, size_t cap)
{
    const char *slash = strrchr(p, '/');
    if (slash == NULL) {
        snprintf(out, cap, ".");
    } else {
        snprintf(out, cap, "%.*s", (int)(slash - p), p);
    }
}

static int size_reached(void)
{
    struct stat st;
    return stat(path, &st) == 0 && (long long)st.st_size >= want;
}

/* Reads the pending inotify events; returns 1 when the condition came true. */
static int handle_events(void)
{
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    ssize_t n = read(ifd, buf, sizeof buf);
    if (n <= 0) {
        return 0;
    }
    for (char *p = buf; p < buf + n;) {
        const struct inotify_event *e = (const struct inotify_event *)p;
        p += sizeof *e + e->len;
        const char *name = e->len ? e->name : "";
        if (cond == C_COMMITS && e->wd == dir_wd && (e->mask & IN_MOVED_TO) &&
            strncmp(name, "chk-", 4) == 0 && --commits <= 0) {
            return 1;
        }
        if (cond != C_WRITING) {
            continue;
        }
        if (e->wd == dir_wd && (e->mask & IN_CREATE) && strncmp(name, ".tmp-", 5) == 0) {
            if (want == 0) {
                return 1;
            }
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, name);
            tmp_wd = inotify_add_watch(ifd, sub, IN_CREATE | IN_CLOSE_WRITE);
        } else if (e->wd == dir_wd && (e->mask & IN_MOVED_TO) && strncmp(name, "chk-", 4) == 0) {
            if (want == 4 || step_seen) {
                return 1; /* the write went by faster than the watch: kill after it */
            }
        } else if (e->wd == tmp_wd && tmp_wd >= 0) {
            int state = strcmp(name, "w0.state") == 0;
            int manifest = strcmp(name, "MANIFEST") == 0;
            if ((want == 1 && state && (e->mask & IN_CREATE)) ||
                (want == 2 && state && (e->mask & IN_CLOSE_WRITE)) ||
                (want == 3 && manifest && (e->mask & IN_CREATE))) {
                return 1;
            }
            step_seen = 1;
        }
    }
    return 0;
}

enum { KILLED = 200 };

static int report(int status)
{
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 2;
}

int main(int argc, char **argv)
{
    int i = 1;
    if (i >= argc) {
        return usage();
    }
    if (strcmp(argv[i], "now") == 0) {
        cond = C_NOW;
        i += 1;
    } else if (strcmp(argv[i], "size") == 0 && i + 2 < argc) {
        cond = C_SIZE;
        path = argv[i + 1];
        want = atoll(argv[i + 2]);
        i += 3;
    } else if (strcmp(argv[i], "commits") == 0 && i + 2 < argc) {
        cond = C_COMMITS;
        path = argv[i + 1];
        commits = atoll(argv[i + 2]);
        i += 3;
    } else if (strcmp(argv[i], "writing") == 0 && i + 2 < argc) {
        cond = C_WRITING;
        path = argv[i + 1];
        want = atoll(argv[i + 2]);
        i += 3;
    } else {
        return usage();
    }
    if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
        return usage();
    }
    char **cmd = argv + i + 1;

    if (cond != C_NOW) {
        ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (ifd < 0) {
            perror("kill_at: inotify_init1");
            return 2;
        }
        char dir[4096];
        if (cond == C_SIZE) {
            parent_of(path, dir, sizeof dir);
        } else {
            snprintf(dir, sizeof dir, "%s", path);
            mkdir(dir, 0777); /* watched before the command creates it */
        }
        snprintf(watch_dir, sizeof watch_dir, "%s", dir);
        dir_wd = inotify_add_watch(ifd, dir, WATCH_MASK);
        if (dir_wd < 0 && cond == C_SIZE) {
            /* the file's directory comes later (write_text makes it): watch "." until then */
            cwd_wd = inotify_add_watch(ifd, ".", IN_CREATE);
        } else if (dir_wd < 0) {
            fprintf(stderr, "kill_at: watch %s: %s\n", dir, strerror(errno));
            return 2;
        }
    }

    pid_t pid = fork();
    if (pid < 0) {
        perror("kill_at: fork");
        return 2;
    }
    if (pid == 0) {
        if (ifd >= 0) {
            close(ifd);
        }
        execvp(cmd[0], cmd);
        perror(cmd[0]);
        _exit(127);
    }

    int status = 0;
    for (;;) {
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            return report(status); /* it ended before the condition came true */
        }
        int fire = cond == C_NOW || (cond == C_SIZE && size_reached());
        if (!fire) {
            struct pollfd p = { .fd = ifd, .events = POLLIN };
            if (poll(&p, 1, RECHECK_MS) > 0) {
                fire = handle_events();
            }
            if (cond == C_SIZE && dir_wd < 0) {
                dir_wd = inotify_add_watch(ifd, watch_dir, WATCH_MASK);
            }
            if (cond == C_SIZE && size_reached()) {
                fire = 1;
            }
        }
        if (fire) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
                return KILLED;
            }
            return report(status); /* it had ended already */
        }
    }
}
