/* SPDX-License-Identifier: MIT */
/* tcp_serve: a one-shot TCP server for CLI tests. `tcp_serve [-w MS] PORTFILE [FILE...]`
 * listens on 127.0.0.1 on a free port, writes the port number to PORTFILE, then for each FILE
 * accepts one connection, sends the file's bytes, waits MS milliseconds (default 0) and closes
 * it. With no FILE it sends nothing and closes. Exits 0, or 1 on any failure; it gives up
 * after 20 s without a connection. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int send_file(int fd, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        size_t off = 0;
        while (off < n) {
            ssize_t w = send(fd, buf + off, n - off, MSG_NOSIGNAL);
            if (w <= 0) {
                fclose(f);
                return -1;
            }
            off += (size_t)w;
        }
    }
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    int wait_ms = 0;
    if (argc > 2 && strcmp(argv[1], "-w") == 0) {
        wait_ms = atoi(argv[2]);
        argv += 2;
        argc -= 2;
    }
    if (argc < 2) {
        fputs("usage: tcp_serve [-w MS] PORTFILE [FILE...]\n", stderr);
        return 1;
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 4) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &len) != 0) {
        perror("tcp_serve");
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *pf = fopen(tmp, "w");
    if (!pf) {
        perror(tmp);
        return 1;
    }
    fprintf(pf, "%d\n", ntohs(a.sin_port));
    fclose(pf);
    rename(tmp, argv[1]);
    int count = argc > 2 ? argc - 2 : 1;
    for (int i = 0; i < count; i++) {
        struct pollfd p = {.fd = s, .events = POLLIN};
        if (poll(&p, 1, 20000) != 1) {
            fputs("tcp_serve: no connection within 20 s\n", stderr);
            return 1;
        }
        int c = accept(s, NULL, NULL);
        if (c < 0) {
            perror("accept");
            return 1;
        }
        if (argc > 2 && send_file(c, argv[2 + i]) != 0) {
            close(c);
            return 1;
        }
        if (wait_ms > 0) {
            poll(NULL, 0, wait_ms);
        }
        shutdown(c, SHUT_WR);
        /* wait for the client to close its side, so no data is lost to a reset */
        char sink[256];
        struct pollfd q = {.fd = c, .events = POLLIN};
        while (poll(&q, 1, 5000) == 1 && recv(c, sink, sizeof sink, 0) > 0) {
        }
        close(c);
    }
    close(s);
    return 0;
}
