/* SPDX-License-Identifier: MIT */
/* kafka_mock.c: `weir kafka-mock`. librdkafka's mock cluster (rdkafka_mock.h) lives in the
 * threads of an otherwise idle producer handle; this file creates it, makes the topics, says
 * where it listens, and waits for a signal or a control command on stdin (signalfd + poll; the
 * signals are blocked before librdkafka starts its threads, so only signalfd sees them). No Lua,
 * no libuv: the command never runs a job. librdkafka's memory is outside weir's account. */
#include "kafka_mock.h"

#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int wr_kafka_mock_add_topic(wr_kafka_mock_opts_t *o, char *arg)
{
    char *colon = strrchr(arg, ':');
    if (!colon || colon == arg || colon - arg > 249 ||
        o->ntopics == (int)(sizeof o->topic / sizeof o->topic[0])) {
        return -1;
    }
    for (const char *c = arg; c < colon; c++) {
        if (!(*c == '.' || *c == '_' || *c == '-' || (*c >= 'a' && *c <= 'z') ||
              (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) {
            return -1;
        }
    }
    char *end = NULL;
    errno = 0;
    long n = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || n < 1 || n > 10000) {
        return -1;
    }
    *colon = '\0';
    o->topic[o->ntopics] = arg;
    o->partitions[o->ntopics++] = (int)n;
    return 0;
}

/* librdkafka's log lines, worded as weir's (the idle producer has nothing to say but errors). */
static void log_line(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    if (level <= 3) {
        fprintf(stderr, "weir: kafka-mock: %s: %s\n", fac, buf);
    }
}

/* One control command from stdin (its line without the newline), answered on stdout. */
static void command(rd_kafka_mock_cluster_t *mc, int brokers, char *line)
{
    char what[16];
    char arg[300];
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (line[0] == '\0') {
        return;
    }
    if (sscanf(line, "%15s %299s", what, arg) != 2) {
        printf("error: expected `down ID`, `up ID` or `topic NAME:PARTITIONS`, got %s\n", line);
    } else if (strcmp(what, "down") == 0 || strcmp(what, "up") == 0) {
        char *end = NULL;
        long id = strtol(arg, &end, 10);
        if (*end || id < 1 || id > brokers) {
            printf("error: %s: no broker %s (the brokers are 1 to %d)\n", what, arg, brokers);
        } else {
            err = what[0] == 'd' ? rd_kafka_mock_broker_set_down(mc, (int32_t)id)
                                 : rd_kafka_mock_broker_set_up(mc, (int32_t)id);
            if (err) {
                printf("error: %s %ld: %s\n", what, id, rd_kafka_err2str(err));
            } else {
                printf("ok\n");
            }
        }
    } else if (strcmp(what, "topic") == 0) {
        wr_kafka_mock_opts_t one = {0};
        if (wr_kafka_mock_add_topic(&one, arg) != 0) {
            printf("error: topic: expected NAME:PARTITIONS, got %s\n", arg);
        } else if ((err = rd_kafka_mock_topic_create(mc, one.topic[0], one.partitions[0], 1))) {
            printf("error: topic %s: %s\n", one.topic[0], rd_kafka_err2str(err));
        } else {
            printf("ok\n");
        }
    } else {
        printf("error: unknown command %s (expected down, up or topic)\n", what);
    }
    fflush(stdout);
}

int wr_kafka_mock_serve(const wr_kafka_mock_opts_t *o)
{
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    if (pthread_sigmask(SIG_BLOCK, &stop, NULL) != 0) {
        fprintf(stderr, "weir: kafka-mock: cannot block SIGINT/SIGTERM\n");
        return 1;
    }
    int sfd = signalfd(-1, &stop, SFD_CLOEXEC);
    if (sfd < 0) {
        fprintf(stderr, "weir: kafka-mock: signalfd: %s\n", strerror(errno));
        return 1;
    }
    char errstr[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set_log_cb(conf, log_line);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    if (!rk) {
        fprintf(stderr, "weir: kafka-mock: %s\n", errstr);
        close(sfd);
        return 1;
    }
    int status = 1;
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, o->brokers);
    if (!mc) {
        fprintf(stderr, "weir: kafka-mock: cannot start a mock cluster of %d broker%s\n",
                o->brokers, o->brokers == 1 ? "" : "s");
        goto fail_cluster;
    }
    for (int i = 0; i < o->ntopics; i++) {
        rd_kafka_resp_err_t err =
            rd_kafka_mock_topic_create(mc, o->topic[i], o->partitions[i], 1);
        if (err) {
            fprintf(stderr, "weir: kafka-mock: --topic %s:%d: %s\n", o->topic[i], o->partitions[i],
                    rd_kafka_err2str(err));
            goto fail_topics;
        }
    }
    printf("bootstrap.servers=%s\n", rd_kafka_mock_cluster_bootstraps(mc));
    fflush(stdout);
    struct pollfd fds[2] = {{.fd = sfd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
    char line[1024];
    size_t used = 0;
    for (;;) {
        int n = poll(fds, 2, -1);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 || fds[0].revents) {
            break; /* the signal (or poll failing: nothing left to wait with) */
        }
        if (fds[1].revents) {
            ssize_t r = read(0, line + used, sizeof line - 1 - used);
            if (r <= 0) {
                fds[1].fd = -1; /* stdin ended (or is unreadable): the signal alone stops us */
                continue;
            }
            used += (size_t)r;
            char *nl;
            while ((nl = memchr(line, '\n', used))) {
                *nl = '\0';
                command(mc, o->brokers, line);
                used -= (size_t)(nl + 1 - line);
                memmove(line, nl + 1, used);
            }
            if (used == sizeof line - 1) {
                line[used] = '\0';
                printf("error: a command line longer than %zu bytes\n", sizeof line - 2);
                fflush(stdout);
                used = 0;
            }
        }
    }
    status = 0;
fail_topics:
    rd_kafka_mock_cluster_destroy(mc);
fail_cluster:
    rd_kafka_destroy(rk);
    close(sfd);
    return status;
}
