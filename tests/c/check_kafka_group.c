/* SPDX-License-Identifier: MIT */
/* check_kafka_group.c: group membership (kafka_group.c) against librdkafka's mock cluster in
 * this process, members driven by one uv loop: two members split 8 partitions disjointly; a
 * member leaving gives the other all; a joining member gets its share only after the owner
 * finished the cooperative revoke (and, librdkafka pausing the owner's fetchers meanwhile, the
 * owner reads nothing until then); a static member that dies loses its partitions after the
 * session timeout and gets a share back when it rejoins with its instance id; a lost
 * assignment (the coordinator forgot the member, or the coordinator is down past the session
 * timeout) comes as a LOST event; and the hand-off with kafka_state.c's store: the partitions
 * given up are snapshotted before the finish and restored by their next owner, which starts
 * them at the snapshot's offset; an accepted assignment is in librdkafka's assignment at once,
 * paused, and starts at its finish's offsets. Each member checks
 * that it only ever reads partitions it owns, from the offset its assignment gave. These are
 * real-time tests (the mock's rebalance delays are seconds): every wait is for an event, with a
 * generous deadline. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "check_support.h"
#include "kafka_group.h"
#include "kafka_state.h"
#include "mem.h"
#include "weir.h"

enum { NPARTS = 8, MAXM = 3, DEADLINE_MS = 60000, API_HEARTBEAT = 12 };

typedef struct cluster {
    rd_kafka_t *producer; /* holds the mock cluster */
    rd_kafka_mock_cluster_t *mc;
    char bootstrap[256];
} cluster_t;

/* Produces "P:OFFSET" into every partition of "t" (its offset must be offset). */
static void produce_round(cluster_t *c, int offset)
{
    for (int p = 0; p < NPARTS; p++) {
        char v[16];
        snprintf(v, sizeof v, "%d:%d", p, offset);
        ck_assert_int_eq(rd_kafka_producev(c->producer, RD_KAFKA_V_TOPIC("t"),
                                           RD_KAFKA_V_PARTITION(p), RD_KAFKA_V_VALUE(v, strlen(v)),
                                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                           RD_KAFKA_V_END),
                         0);
    }
    ck_assert_int_eq(rd_kafka_flush(c->producer, 10000), 0);
}

/* A mock cluster with topic "t" of 8 partitions, two messages in each (offsets 0 and 1). */
static void cluster_start(cluster_t *c)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    ck_assert_int_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    ck_assert_int_eq(rd_kafka_conf_set(conf, "log_level", "2", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK); /* not the broker-down errors of a test that wants them */
    c->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    ck_assert_ptr_nonnull(c->producer);
    c->mc = rd_kafka_handle_mock_cluster(c->producer);
    ck_assert_ptr_nonnull(c->mc);
    ck_assert_int_eq(rd_kafka_mock_topic_create(c->mc, "t", NPARTS, 1), 0);
    snprintf(c->bootstrap, sizeof c->bootstrap, "%s", rd_kafka_mock_cluster_bootstraps(c->mc));
    for (int i = 0; i < 2; i++) {
        produce_round(c, i);
    }
    ck_assert_int_eq(rd_kafka_flush(c->producer, 10000), 0);
}

static void cluster_stop(cluster_t *c)
{
    rd_kafka_destroy(c->producer);
}

/* A member as the test sees it: its view of what it owns (from the events it finished), what
 * it read, and a log of its events. */
typedef struct member {
    wr_kafka_group_t *g;
    char name[16];
    int hold;              /* leave events unfinished (the test finishes them) */
    int64_t start_offset;  /* what assignments are finished with (-1: committed/earliest) */
    int owned[NPARTS];
    int64_t from[NPARTS];  /* the lowest offset it may read of an owned partition */
    int read_since[NPARTS]; /* messages read since the partition was last assigned */
    int assigned, revoked, lost; /* events seen, by kind */
    int revoked_parts[NPARTS];   /* partitions of the last REVOKED or LOST event */
    uint64_t seen_seq;           /* the last event counted */
    int wakes;                   /* the group's uv_poll said the queue has something */
    /* With a store, the member keeps a state per partition (its next offset and the count of
     * messages read), snapshots a partition when it is revoked and restores it when assigned,
     * as a job will. */
    wr_kafka_state_t *store;
    int64_t next[NPARTS];
    int total[NPARTS];
    int restored;                /* partitions restored from a snapshot */
} member_t;

typedef struct world {
    uv_loop_t loop;
    cluster_t c;
    member_t m[MAXM];
    uint64_t order; /* a global counter: which finish happened before which event */
    uint64_t finished_revoke_at[MAXM];
    uint64_t first_assign_after[MAXM];
} world_t;

static void on_wake(wr_kafka_group_t *g, void *arg)
{
    ((member_t *)arg)->wakes++;
}

static void member_start(world_t *w, int i, const char *name, const char *instance)
{
    member_t *m = &w->m[i];
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->start_offset = -1;
    const char *topics[] = {"t"};
    const char *conf[] = {"session.timeout.ms", "3000", "heartbeat.interval.ms", "250",
                          "auto.offset.reset", "earliest", "fetch.wait.max.ms", "50",
                          "log_level", "3"};
    wr_kafka_group_opts_t o = {.bootstrap_servers = w->c.bootstrap,
                               .group_id = "g",
                               .instance_id = instance,
                               .topics = topics,
                               .ntopics = 1,
                               .conf = conf,
                               .nconf = 10,
                               .wake = on_wake,
                               .wake_arg = m};
    wr_err_t err = {0};
    m->g = wr_kafka_group_new(&w->loop, &o, &err);
    ck_assert_msg(m->g != NULL, "%s", err.msg);
    ck_assert_int_eq(wr_kafka_group_start(m->g, &err), 0);
}

static void member_close(world_t *w, int i, int how)
{
    wr_kafka_group_close(w->m[i].g, how);
    w->m[i].g = NULL;
    memset(w->m[i].owned, 0, sizeof w->m[i].owned);
}

static int count(const int *a)
{
    int n = 0;
    for (int p = 0; p < NPARTS; p++) {
        n += a[p] != 0;
    }
    return n;
}

/* Finishes m's oldest event, updating the test's view as the module's contract says. */
static void finish(world_t *w, int i)
{
    member_t *m = &w->m[i];
    const wr_kafka_group_event_t *e = wr_kafka_group_event(m->g);
    ck_assert_ptr_nonnull(e);
    int64_t offs[NPARTS];
    wr_err_t err = {0};
    if (m->store && e->kind == WR_KAFKA_GROUP_REVOKED) {
        /* the hand-off: the revoked partitions' last snapshots, acknowledged, before the
         * finish lets the group move them */
        for (int k = 0; k < e->n; k++) {
            int p = e->parts[k].partition;
            char blob[64];
            int len = snprintf(blob, sizeof blob, "%lld %d", (long long)m->next[p], m->total[p]);
            ck_assert_msg(wr_kafka_state_put(m->store, "t", p, (uint64_t)m->next[p], blob,
                                             (size_t)len, &err) == 0, "%s", err.msg);
        }
        ck_assert_msg(wr_kafka_state_flush(m->store, 20000, &err) == 0, "%s", err.msg);
    }
    wr_kafka_state_snapshot_t snaps[NPARTS];
    memset(snaps, 0, sizeof snaps);
    if (m->store && e->kind == WR_KAFKA_GROUP_ASSIGNED) {
        for (int k = 0; k < e->n; k++) {
            snaps[k].topic = e->parts[k].topic;
            snaps[k].partition = e->parts[k].partition;
        }
        ck_assert_msg(wr_kafka_state_read(m->store, snaps, e->n, &err) == 0, "%s", err.msg);
    }
    for (int k = 0; k < e->n; k++) {
        offs[k] = m->start_offset;
        int p = e->parts[k].partition;
        if (e->kind == WR_KAFKA_GROUP_ASSIGNED) {
            m->owned[p] = 1;
            m->next[p] = 0;
            m->total[p] = 0;
            long long next = 0;
            int total = 0;
            if (snaps[k].found) {
                ck_assert_int_eq(sscanf(snaps[k].blob, "%lld %d", &next, &total), 2);
                m->next[p] = next;
                m->total[p] = total;
                offs[k] = next;
                m->restored++;
            }
            wr_free(snaps[k].blob);
            m->from[p] = offs[k] < 0 ? 0 : offs[k];
            m->read_since[p] = 0;
        }
    }
    if (e->kind != WR_KAFKA_GROUP_ASSIGNED) {
        w->finished_revoke_at[i] = ++w->order;
    }
    ck_assert_msg(wr_kafka_group_finish(m->g, offs, &err) == 0, "%s", err.msg);
}

/* Takes m's messages and events (finishing events unless m holds them). */
static void serve(world_t *w, int i)
{
    member_t *m = &w->m[i];
    if (m->g == NULL) {
        return;
    }
    rd_kafka_message_t *msgs[64];
    int n;
    do {
        n = wr_kafka_group_consume(m->g, msgs, 64);
        ck_assert_msg(n >= 0, "%s: %s", m->name, wr_kafka_group_error(m->g));
        for (int k = 0; k < n; k++) {
            rd_kafka_message_t *msg = msgs[k];
            if (msg->err == 0) {
                int p = msg->partition;
                ck_assert_str_eq(rd_kafka_topic_name(msg->rkt), "t");
                ck_assert_msg(m->owned[p], "%s read partition %d, which it does not own",
                              m->name, p);
                ck_assert_msg(msg->offset >= m->from[p], "%s read %d@%lld before %lld",
                              m->name, p, (long long)msg->offset, (long long)m->from[p]);
                char want[16];
                snprintf(want, sizeof want, "%d:%lld", p, (long long)msg->offset);
                ck_assert_int_eq((int)msg->len, (int)strlen(want));
                ck_assert(memcmp(msg->payload, want, msg->len) == 0);
                m->read_since[p]++;
                m->next[p] = msg->offset + 1;
                m->total[p]++;
            }
            rd_kafka_message_destroy(msg);
        }
        const wr_kafka_group_event_t *e;
        while ((e = wr_kafka_group_event(m->g))) {
            if (e->seq <= m->seen_seq) {
                break; /* held */
            }
            m->seen_seq = e->seq;
            if (getenv("WEIR_TEST_TRACE")) { /* to see a rebalance's steps */
                fprintf(stderr, "%llu ms %s: kind %d:", (unsigned long long)uv_now(&w->loop),
                        m->name, e->kind);
                for (int k = 0; k < e->n; k++) {
                    fprintf(stderr, " %d", (int)e->parts[k].partition);
                }
                fprintf(stderr, "\n");
            }
            if (e->kind == WR_KAFKA_GROUP_ASSIGNED) {
                m->assigned++;
                if (w->first_assign_after[i] == 0) {
                    w->first_assign_after[i] = ++w->order;
                }
            } else {
                memset(m->revoked_parts, 0, sizeof m->revoked_parts);
                for (int k = 0; k < e->n; k++) {
                    int p = e->parts[k].partition;
                    ck_assert_msg(m->owned[p], "%s: revoke of %d, which it does not own",
                                  m->name, p);
                    m->owned[p] = 0; /* its messages are dropped from now on */
                    m->revoked_parts[p] = 1;
                }
                if (e->kind == WR_KAFKA_GROUP_LOST) {
                    m->lost++;
                } else {
                    m->revoked++;
                }
            }
            if (m->hold) {
                break;
            }
            finish(w, i);
        }
    } while (n == 64 || wr_kafka_group_pending(m->g));
}

static void on_deadline(uv_timer_t *t)
{
    *(int *)t->data = 1;
}

/* Runs the loop, serving every member, until cond(w) or the deadline; returns cond(w). */
static int pump_until(world_t *w, int (*cond)(world_t *w), int deadline_ms)
{
    int expired = 0;
    uv_timer_t t;
    uv_timer_init(&w->loop, &t);
    t.data = &expired;
    uv_timer_start(&t, on_deadline, (uint64_t)deadline_ms, 0);
    int ok = 0;
    for (;;) {
        for (int i = 0; i < MAXM; i++) {
            serve(w, i);
        }
        if ((ok = cond(w)) || expired) {
            break;
        }
        uv_run(&w->loop, UV_RUN_ONCE);
    }
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(&w->loop, UV_RUN_NOWAIT);
    return ok;
}

static int no_event_waits(world_t *w)
{
    for (int i = 0; i < MAXM; i++) {
        if (w->m[i].g && wr_kafka_group_event(w->m[i].g)) {
            return 0;
        }
    }
    return 1;
}

/* The members' views agree with the module's and are disjoint; returns how many partitions
 * they cover, and whether each owned partition was read since its assignment (*fresh). */
static int coverage(world_t *w, int *fresh)
{
    int seen[NPARTS] = {0};
    *fresh = 1;
    for (int i = 0; i < MAXM; i++) {
        member_t *m = &w->m[i];
        if (m->g == NULL) {
            continue;
        }
        int32_t n = 0;
        const wr_kafka_group_part_t *parts = wr_kafka_group_owned(m->g, &n);
        int mod[NPARTS] = {0};
        for (int32_t k = 0; k < n; k++) {
            mod[parts[k].partition] = 1;
        }
        for (int p = 0; p < NPARTS; p++) {
            if (m->owned[p]) {
                ck_assert_msg(!seen[p], "partition %d owned twice", p);
                seen[p] = 1;
                ck_assert_msg(mod[p], "%s owns %d in the test's view only", m->name, p);
                *fresh &= m->read_since[p] > 0 || m->from[p] >= 2;
            }
        }
    }
    return count(seen);
}

static int all_covered_and_read(world_t *w)
{
    int fresh;
    return no_event_waits(w) && coverage(w, &fresh) == NPARTS && fresh;
}

static int members_split_evenly(world_t *w)
{
    if (!all_covered_and_read(w)) {
        return 0;
    }
    for (int i = 0; i < MAXM; i++) {
        if (w->m[i].g && count(w->m[i].owned) != NPARTS / 2) {
            return 0;
        }
    }
    return 1;
}

/* b and c split evenly, and c read offsets 1 and 2 of each of its partitions (it started
 * them at 1). */
static int c_read_from_its_offset(world_t *w)
{
    if (!members_split_evenly(w)) {
        return 0;
    }
    for (int p = 0; p < NPARTS; p++) {
        if (w->m[2].owned[p] && w->m[2].read_since[p] != 2) {
            return 0;
        }
    }
    return 1;
}

static int b_read_offset_2(world_t *w)
{
    for (int p = 0; p < NPARTS; p++) {
        if (w->m[1].owned[p] && w->m[1].read_since[p] != 3) {
            return 0;
        }
    }
    return 1;
}

static int m1_owns_all(world_t *w)
{
    return all_covered_and_read(w) && count(w->m[1].owned) == NPARTS;
}

static int m0_owns_all(world_t *w)
{
    return all_covered_and_read(w) && count(w->m[0].owned) == NPARTS;
}

static int m1_has_a_revoke_waiting(world_t *w)
{
    const wr_kafka_group_event_t *e = wr_kafka_group_event(w->m[1].g);
    return e != NULL && e->kind == WR_KAFKA_GROUP_REVOKED;
}

static int someone_lost(world_t *w)
{
    return w->m[0].lost + w->m[1].lost > 0;
}

static int never(world_t *w)
{
    return 0;
}

static void world_init(world_t *w)
{
    memset(w, 0, sizeof *w);
    ck_assert_int_eq(uv_loop_init(&w->loop), 0);
    cluster_start(&w->c);
}

static void world_close(world_t *w)
{
    for (int i = 0; i < MAXM; i++) {
        if (w->m[i].g) {
            member_close(w, i, WR_KAFKA_GROUP_LEAVE);
        }
    }
    uv_run(&w->loop, UV_RUN_DEFAULT); /* the polls' close callbacks free the members */
    ck_assert_int_eq(uv_loop_close(&w->loop), 0);
    for (int i = 0; i < MAXM; i++) {
        wr_kafka_state_free(w->m[i].store);
    }
    cluster_stop(&w->c);
}

START_TEST(test_two_members_split_eight_partitions_and_hand_off_on_leave_and_join)
{
    world_t w;
    world_init(&w);
    member_start(&w, 0, "a", NULL);
    member_start(&w, 1, "b", NULL);
    ck_assert_msg(pump_until(&w, members_split_evenly, DEADLINE_MS),
                  "a owns %d, b owns %d", count(w.m[0].owned), count(w.m[1].owned));
    ck_assert_int_eq(w.m[0].lost + w.m[1].lost, 0);
    char id0[128];
    char id1[128];
    wr_kafka_group_member_id(w.m[0].g, id0, sizeof id0);
    wr_kafka_group_member_id(w.m[1].g, id1, sizeof id1);
    ck_assert(id0[0] != '\0' && id1[0] != '\0' && strcmp(id0, id1) != 0);

    /* a leaves (a dynamic member sends LeaveGroup): b gets a's partitions */
    member_close(&w, 0, WR_KAFKA_GROUP_LEAVE);
    ck_assert_msg(pump_until(&w, m1_owns_all, DEADLINE_MS), "b owns %d", count(w.m[1].owned));

    /* c joins while b holds every partition: b gets a revoke (cooperative: only what moves),
     * and c gets those partitions only after b finished it; c's assignment starts at 1 */
    w.m[1].hold = 1;
    uint64_t revokes = (uint64_t)w.m[1].revoked;
    member_start(&w, 2, "c", NULL);
    w.m[2].start_offset = 1;
    ck_assert(pump_until(&w, m1_has_a_revoke_waiting, DEADLINE_MS));
    ck_assert_int_eq(w.m[1].revoked, (int)revokes + 1);
    ck_assert_int_eq(count(w.m[1].revoked_parts), NPARTS / 2);
    /* hold the revoke over more than one of the mock's rebalance delays (2 s): c gets nothing;
     * and librdkafka pauses b's whole assignment until the revoke is finished (its
     * rd_kafka_assignment_pause, "incremental rebalance"), so b reads nothing new either */
    produce_round(&w.c, 2);
    pump_until(&w, never, 2500);
    ck_assert_int_eq(count(w.m[2].owned), 0);
    ck_assert_int_eq(w.m[2].assigned, 0);
    for (int p = 0; p < NPARTS; p++) {
        if (w.m[1].owned[p]) {
            ck_assert_int_eq(w.m[1].read_since[p], 2); /* offsets 0 and 1, not the new 2 */
        }
    }
    finish(&w, 1);
    w.m[1].hold = 0;
    ck_assert_msg(pump_until(&w, c_read_from_its_offset, DEADLINE_MS), "b owns %d, c owns %d",
                  count(w.m[1].owned), count(w.m[2].owned));
    ck_assert(w.first_assign_after[2] > w.finished_revoke_at[1]);
    for (int p = 0; p < NPARTS; p++) {
        ck_assert_int_eq(w.m[2].owned[p], w.m[1].revoked_parts[p]); /* sticky: just those */
    }
    ck_assert(pump_until(&w, b_read_offset_2, DEADLINE_MS)); /* resumed after the finish */
    ck_assert(w.m[1].wakes > 0 && w.m[2].wakes > 0); /* the uv_poll woke the loop */
    ck_assert_int_eq(w.m[1].lost + w.m[2].lost, 0);
    world_close(&w);
}
END_TEST

START_TEST(test_a_static_member_that_dies_loses_its_partitions_after_the_session_timeout)
{
    world_t w;
    world_init(&w);
    member_start(&w, 0, "a", "weir-a");
    member_start(&w, 1, "b", "weir-b");
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    int b_had[NPARTS];
    memcpy(b_had, w.m[1].owned, sizeof b_had);

    /* b vanishes as a killed process does (no LeaveGroup): after session.timeout.ms the
     * coordinator drops it, and a gets b's partitions */
    member_close(&w, 1, WR_KAFKA_GROUP_VANISH);
    ck_assert_msg(pump_until(&w, m0_owns_all, DEADLINE_MS), "a owns %d", count(w.m[0].owned));
    ck_assert_int_eq(w.m[0].revoked + w.m[0].lost, 0); /* a kept its own throughout */

    /* b comes back with the same instance id: the group gives it a share again */
    member_start(&w, 1, "b", "weir-b");
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    ck_assert_int_ge(w.m[0].revoked, 1); /* a gave b a share back */
    ck_assert_int_eq(w.m[0].lost + w.m[1].lost, 0);
    world_close(&w);
}
END_TEST

/* A rolling restart: b stops (a static member sends no LeaveGroup) and starts again at once
 * with its instance id. A broker with static membership (KIP-345) would hand b its old
 * partitions with no rebalance; librdkafka 2.0.2's mock cluster ignores the instance id (its
 * JoinGroup handler never stores it), so b rejoins as a new member, the old one times out, and
 * the group rebalances: only what holds on both is checked here. */
START_TEST(test_a_static_member_restarting_at_once_gets_a_share)
{
    world_t w;
    world_init(&w);
    member_start(&w, 0, "a", "weir-a");
    member_start(&w, 1, "b", "weir-b");
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    member_close(&w, 1, WR_KAFKA_GROUP_LEAVE);
    member_start(&w, 1, "b", "weir-b");
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    ck_assert_int_eq(w.m[0].lost + w.m[1].lost, 0);
    world_close(&w);
}
END_TEST

static int both_lost(world_t *w)
{
    return w->m[0].lost > 0 && w->m[1].lost > 0;
}

START_TEST(test_the_coordinator_down_past_the_session_timeout_loses_every_assignment)
{
    world_t w;
    world_init(&w);
    member_start(&w, 0, "a", NULL);
    member_start(&w, 1, "b", NULL);
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    /* no heartbeat gets through: each member's own session timeout gives its partitions up
     * as lost (the coordinator, if it were up, would have given them away) */
    ck_assert_int_eq(rd_kafka_mock_broker_set_down(w.c.mc, 1), 0);
    ck_assert(pump_until(&w, both_lost, DEADLINE_MS));
    ck_assert_int_eq(count(w.m[0].owned) + count(w.m[1].owned), 0);
    ck_assert_ptr_nonnull(wr_kafka_group_last_warning(w.m[0].g)); /* the broker is down */
    ck_assert_ptr_null(wr_kafka_group_error(w.m[0].g));           /* but nothing is fatal */
    ck_assert_int_eq(rd_kafka_mock_broker_set_up(w.c.mc, 1), 0);
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    world_close(&w);
}
END_TEST

START_TEST(test_a_forgotten_member_gets_a_lost_event_and_rejoins)
{
    world_t w;
    world_init(&w);
    member_start(&w, 0, "a", NULL);
    member_start(&w, 1, "b", NULL);
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    /* the coordinator answers the next heartbeat with UNKNOWN_MEMBER_ID: that member's
     * assignment is lost (another may own its partitions already) */
    rd_kafka_mock_push_request_errors(w.c.mc, API_HEARTBEAT, 1,
                                      RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
    ck_assert(pump_until(&w, someone_lost, DEADLINE_MS));
    int lost = w.m[0].lost + w.m[1].lost;
    ck_assert_int_eq(lost, 1);
    int who = w.m[0].lost ? 0 : 1;
    ck_assert_int_eq(count(w.m[who].revoked_parts), NPARTS / 2);
    ck_assert_msg(pump_until(&w, all_covered_and_read, DEADLINE_MS), "a %d b %d",
                  count(w.m[0].owned), count(w.m[1].owned));
    world_close(&w);
}
END_TEST

START_TEST(test_fixed_and_bad_properties_are_refused)
{
    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    const char *topics[] = {"t"};
    const char *fixed[] = {"partition.assignment.strategy", "range"};
    wr_kafka_group_opts_t o = {.bootstrap_servers = "127.0.0.1:1", .group_id = "g",
                               .topics = topics, .ntopics = 1, .conf = fixed, .nconf = 2};
    wr_err_t err = {0};
    ck_assert_ptr_null(wr_kafka_group_new(&loop, &o, &err));
    ck_assert_str_eq(err.msg, "property partition.assignment.strategy: set by weir (the group "
                              "member needs its value)");
    const char *bad[] = {"no.such.property", "1"};
    o.conf = bad;
    ck_assert_ptr_null(wr_kafka_group_new(&loop, &o, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "property no.such.property: "));
    o.conf = NULL;
    o.nconf = 0;
    o.instance_id = "";
    ck_assert_ptr_null(wr_kafka_group_new(&loop, &o, &err));
    o.instance_id = NULL;
    wr_kafka_group_t *g = wr_kafka_group_new(&loop, &o, &err);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_null(wr_kafka_group_event(g));
    ck_assert_int_eq(wr_kafka_group_finish(g, NULL, &err), WEIR_ESTATE);
    wr_kafka_group_close(g, WR_KAFKA_GROUP_VANISH);
    uv_run(&loop, UV_RUN_DEFAULT);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static int b_restored_and_all_read_3(world_t *w)
{
    if (!members_split_evenly(w) || w->m[1].restored != NPARTS / 2) {
        return 0;
    }
    for (int i = 0; i < 2; i++) {
        for (int p = 0; p < NPARTS; p++) {
            if (w->m[i].owned[p] && w->m[i].total[p] != 3) {
                return 0;
            }
        }
    }
    return 1;
}

static int a_read_two_of_each(world_t *w)
{
    if (!all_covered_and_read(w)) {
        return 0;
    }
    for (int p = 0; p < NPARTS; p++) {
        if (w->m[0].total[p] != 2) {
            return 0;
        }
    }
    return 1;
}

static wr_kafka_state_t *state_store(world_t *w)
{
    const char *conf[] = {"log_level", "2"};
    wr_kafka_state_opts_t o = {.bootstrap_servers = w->c.bootstrap, .topic = "g-state",
                               .partitions = NPARTS, .conf = conf, .nconf = 2,
                               .timeout_ms = 20000};
    wr_err_t err = {0};
    wr_kafka_state_t *s = wr_kafka_state_open(&o, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    return s;
}

/* The whole hand-off with the state store: a owns all 8 and has read 2 messages of each; b
 * joins; a snapshots the 4 partitions it gives up (next offset 2, count 2) and finishes only
 * once they are acknowledged; b restores them, starts them at offset 2, and its counts go on
 * from 2 when a third message arrives: nothing read twice, nothing missed. */
START_TEST(test_a_revoked_partition_s_snapshot_reaches_its_next_owner)
{
    world_t w;
    world_init(&w);
    ck_assert_int_eq(rd_kafka_mock_topic_create(w.c.mc, "g-state", NPARTS, 1), 0);
    member_start(&w, 0, "a", NULL);
    w.m[0].store = state_store(&w);
    ck_assert(pump_until(&w, a_read_two_of_each, DEADLINE_MS));
    ck_assert_int_eq(w.m[0].restored, 0); /* nothing in the state topic yet */
    member_start(&w, 1, "b", NULL);
    w.m[1].store = state_store(&w);
    ck_assert(pump_until(&w, members_split_evenly, DEADLINE_MS));
    ck_assert_int_eq(w.m[0].revoked, 1);
    produce_round(&w.c, 2);
    ck_assert_msg(pump_until(&w, b_restored_and_all_read_3, DEADLINE_MS), "b restored %d",
                  w.m[1].restored);
    for (int p = 0; p < NPARTS; p++) {
        if (w.m[1].owned[p]) {
            ck_assert(w.m[1].from[p] == 2);
            ck_assert_int_eq(w.m[1].read_since[p], 1); /* offset 2 only */
        }
    }
    world_close(&w);
}
END_TEST

static int m0_has_an_assignment_waiting(world_t *w)
{
    return w->m[0].assigned > 0;
}

static int m0_read_from_1_on(world_t *w)
{
    for (int p = 0; p < NPARTS; p++) {
        if (!w->m[0].owned[p] || w->m[0].read_since[p] != 2) { /* offsets 1 and 2 */
            return 0;
        }
    }
    return 1;
}

/* An accepted assignment (wr_kafka_group_accept, what a restore does instead of holding the
 * event): its partitions are in librdkafka's assignment at once (it waits for no call), but
 * consume returns none of their messages (paused; what was fetched is dropped) until the
 * finish, which starts each at its offset (1 here: offset 0 is never read, 1 and 2 are). */
START_TEST(test_an_accepted_assignment_is_applied_at_once_paused_and_sought_at_its_finish)
{
    world_t w;
    world_init(&w);
    member_start(&w, 0, "a", NULL);
    w.m[0].hold = 1;
    ck_assert(pump_until(&w, m0_has_an_assignment_waiting, DEADLINE_MS));
    wr_err_t err = {0};
    int64_t at[NPARTS];
    for (int p = 0; p < NPARTS; p++) {
        at[p] = 0; /* what it would start at: the finish moves it to 1 */
    }
    ck_assert_msg(wr_kafka_group_accept(w.m[0].g, at, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(wr_kafka_group_accept(w.m[0].g, at, &err), WEIR_ESTATE); /* once */
    rd_kafka_topic_partition_list_t *l = NULL;
    ck_assert_int_eq(rd_kafka_assignment(wr_kafka_group_rk(w.m[0].g), &l), 0);
    ck_assert_int_eq(l->cnt, NPARTS);
    rd_kafka_topic_partition_list_destroy(l);
    int32_t n = 0;
    wr_kafka_group_owned(w.m[0].g, &n);
    ck_assert_int_eq(n, NPARTS);
    /* the test's view owns nothing yet: serve fails on any message that comes through */
    produce_round(&w.c, 2);
    pump_until(&w, never, 1500);
    w.m[0].start_offset = 1;
    finish(&w, 0);
    w.m[0].hold = 0;
    ck_assert_msg(pump_until(&w, m0_read_from_1_on, DEADLINE_MS), "a owns %d",
                  count(w.m[0].owned));
    ck_assert_int_eq(w.m[0].lost, 0);
    world_close(&w);
}
END_TEST

static Suite *kafka_group_suite(void)
{
    Suite *s = suite_create("kafka_group");
    add_timed_case(s, "split_and_hand_off",
                   test_two_members_split_eight_partitions_and_hand_off_on_leave_and_join, 240);
    add_timed_case(s, "static_member_dies",
                   test_a_static_member_that_dies_loses_its_partitions_after_the_session_timeout,
                   240);
    add_timed_case(s, "static_restart", test_a_static_member_restarting_at_once_gets_a_share,
                   240);
    add_timed_case(s, "coordinator_down",
                   test_the_coordinator_down_past_the_session_timeout_loses_every_assignment, 240);
    add_timed_case(s, "lost", test_a_forgotten_member_gets_a_lost_event_and_rejoins, 240);
    add_timed_case(s, "hand_off_with_state",
                   test_a_revoked_partition_s_snapshot_reaches_its_next_owner, 240);
    add_timed_case(s, "accepted_assignment",
                   test_an_accepted_assignment_is_applied_at_once_paused_and_sought_at_its_finish,
                   240);
    add_timed_case(s, "properties", test_fixed_and_bad_properties_are_refused, 60);
    return s;
}

int main(void)
{
    return run_suite(kafka_group_suite());
}
