/* SPDX-License-Identifier: MIT */
/* pty_run: runs a command on a pseudo-terminal, as a person at a terminal would, for the REPL
 * tests. `pty_run INPUT -- CMD ARGS...` starts CMD on a new pty (80x24), then for each line of
 * INPUT waits (up to 10 s) until the output ends with the prompt "> " or ">> " or "feed> ",
 * types the line and Enter; a line "^D" sends Ctrl-D and "^C" Ctrl-C, and "^C!TEXT" sends
 * Ctrl-C without waiting for a prompt, once TEXT has appeared (to interrupt a running command),
 * and "^T!TEXT" sends SIGTERM to CMD the same way. It copies everything
 * the terminal shows to stdout and exits with CMD's status (1 on a timeout). */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static char seen[1 << 20];
static size_t nseen;

/* Reads what the terminal shows for up to ms milliseconds; returns -1 at EOF. */
static int pump(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int r = poll(&p, 1, ms);
    if (r <= 0) {
        return 0;
    }
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) {
        return -1;
    }
    fwrite(buf, 1, (size_t)n, stdout);
    size_t keep = (size_t)n < sizeof seen - nseen ? (size_t)n : sizeof seen - nseen;
    memcpy(seen + nseen, buf, keep);
    nseen += keep;
    return 1;
}

/* The output ends with a prompt: "> " last, or followed only by terminal control sequences
 * (ESC [ parameters letter). A "> " further back is a redrawn line (after a completion list,
 * "> -- env:"), not a prompt waiting for input. */
static int at_prompt(void)
{
    size_t end = nseen;
    for (;;) {
        size_t i;
        if (end > 0 && ((seen[end - 1] >= 'A' && seen[end - 1] <= 'Z') ||
                        (seen[end - 1] >= 'a' && seen[end - 1] <= 'z'))) {
            i = end - 1;
            while (i > 0 && ((seen[i - 1] >= '0' && seen[i - 1] <= '9') ||
                             seen[i - 1] == ';' || seen[i - 1] == '?')) {
                i--;
            }
            if (i >= 2 && seen[i - 1] == '[' && seen[i - 2] == '\033') {
                end = i - 2; /* drop the control sequence */
                continue;
            }
        }
        break;
    }
    return end >= 2 && seen[end - 1] == ' ' && seen[end - 2] == '>';
}

int main(int argc, char **argv)
{
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fputs("usage: pty_run INPUT -- CMD ARGS...\n", stderr);
        return 2;
    }
    FILE *in = fopen(argv[1], "r");
    if (!in) {
        perror(argv[1]);
        return 2;
    }
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    int fd;
    pid_t pid = forkpty(&fd, NULL, NULL, &ws);
    if (pid < 0) {
        perror("forkpty");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[3], argv + 3);
        perror(argv[3]);
        _exit(127);
    }
    char line[4096];
    int rc = 0;
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "^C!", 3) == 0 || strncmp(line, "^T!", 3) == 0) {
            /* Ctrl-C (^T: SIGTERM) while a command runs: no prompt to wait for; wait until the
             * command has shown TEXT (so it is surely running), then a little more */
            const char *text = line + 3;
            for (int waited = 0; waited < 10000 && !memmem(seen, nseen, text, strlen(text));
                 waited += 25) {
                if (pump(fd, 25) < 0) {
                    break;
                }
            }
            for (int i = 0; i < 8; i++) {
                pump(fd, 25);
            }
            if (line[1] == 'T') {
                kill(pid, SIGTERM);
            } else {
                write(fd, "\x03", 1);
            }
            continue;
        }
        int waited = 0;
        while (!at_prompt() && waited < 10000) {
            if (pump(fd, 50) < 0) {
                break;
            }
            waited += 50;
        }
        if (!at_prompt()) {
            fputs("\npty_run: no prompt within 10 s; the terminal's last bytes:\n", stderr);
            size_t from = nseen > 200 ? nseen - 200 : 0;
            for (size_t i = from; i < nseen; i++) {
                unsigned char c = (unsigned char)seen[i];
                fprintf(stderr, c >= 32 && c < 127 ? "%c" : "\\x%02x", c);
            }
            fputs("\n", stderr);
            rc = 1;
            break;
        }
        nseen = 0; /* the next prompt must be a new one */
        if (strcmp(line, "^D") == 0) {
            write(fd, "\x04", 1);
        } else if (strcmp(line, "^C") == 0) {
            write(fd, "\x03", 1);
        } else {
            write(fd, line, strlen(line));
            write(fd, "\r", 1);
        }
        for (int i = 0; i < 4; i++) {
            pump(fd, 25); /* let the echo and the command's output show */
        }
    }
    for (int t = 0; t < 400 && pump(fd, 25) >= 0; t++) {
    }
    /* the terminal closes before the process has finished exiting: give it 10 s */
    int status = 0;
    int reaped = 0;
    for (int t = 0; t < 400 && !reaped; t++) {
        reaped = waitpid(pid, &status, WNOHANG) == pid;
        if (!reaped) {
            poll(NULL, 0, 25);
        }
    }
    if (!reaped) {
        kill(pid, SIGTERM);
        waitpid(pid, &status, 0);
        rc = 1;
    }
    fclose(in);
    close(fd);
    if (rc) {
        return rc;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
