/* SPDX-License-Identifier: MIT */
/* check_inputlog.c: the input log of a socket or pipe source (runtime/inputlog.c): appended
 * bytes land in the file, a fresh open empties it, a restore replays exactly the bytes after
 * its offset into the lines and then appends after them, a short or changed log is refused
 * naming it, a full disk is an error, and release punches a hole that keeps offsets. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_support.h"
#include "inputlog.h"
#include "lines.h"

static char dir[256];
static char path[300];

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/check_inputlog.XXXXXX", base ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/input.log", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

static long long file_size(const char *p)
{
    struct stat st;
    ck_assert_int_eq(stat(p, &st), 0);
    return (long long)st.st_size;
}

/* every record of l, joined by '|' */
static void drain(wr_lines_t *l, char *out, size_t cap)
{
    wr_line_t rec;
    out[0] = '\0';
    while (wr_lines_next(l, &rec) == WR_LINES_RECORD) {
        size_t n = strlen(out);
        snprintf(out + n, cap - n, "%s%.*s", n ? "|" : "", (int)rec.len, rec.ptr);
    }
    wr_lines_release(l);
}

START_TEST(test_inputlog_fresh_open_empties_and_append_logs)
{
    setup();
    FILE *f = fopen(path, "wb");
    fputs("old bytes\n", f);
    fclose(f);
    wr_inputlog_t g;
    wr_inputlog_init(&g);
    char why[256];
    ck_assert_int_eq(wr_inputlog_open(&g, path, -1, -1, why, sizeof why), 0);
    ck_assert_int_eq(file_size(path), 0);
    ck_assert_int_eq(wr_inputlog_replaying(&g), 0);
    ck_assert_int_eq(wr_inputlog_append(&g, "a\nbb\n", 5), 0);
    ck_assert_int_eq(wr_inputlog_append(&g, "ccc", 3), 0);
    ck_assert_int_eq(file_size(path), 8);
    ck_assert_int_eq(wr_inputlog_position(&g, 3), 5); /* "ccc" is not cut yet */
    wr_inputlog_close(&g);
    teardown();
}
END_TEST

START_TEST(test_inputlog_restore_replays_the_bytes_after_the_offset_then_appends)
{
    setup();
    wr_inputlog_t g;
    wr_inputlog_init(&g);
    char why[256];
    ck_assert_int_eq(wr_inputlog_open(&g, path, -1, -1, why, sizeof why), 0);
    ck_assert_int_eq(wr_inputlog_append(&g, "a\nbb\nccc\ndd", 11), 0);
    double check = wr_inputlog_check(&g, 5);
    ck_assert(check >= 0);
    wr_inputlog_close(&g);

    wr_inputlog_init(&g);
    ck_assert_int_eq(wr_inputlog_open(&g, path, 5, check, why, sizeof why), 0);
    ck_assert_int_eq(wr_inputlog_replaying(&g), 1);
    wr_lines_t l;
    wr_lines_init(&l, NULL, 0);
    while (wr_inputlog_replaying(&g)) {
        ck_assert_int_eq(wr_inputlog_replay(&g, &l, 4, 1), 0);
    }
    /* live bytes go after the log's end, and positions stay log offsets */
    ck_assert_int_eq(wr_inputlog_append(&g, "d\n", 2), 0);
    {
        size_t got = 0;
        char *p = wr_lines_space(&l, 2, &got);
        memcpy(p, "d\n", 2);
        wr_lines_commit(&l, 2);
    }
    char out[64];
    drain(&l, out, sizeof out);
    ck_assert_str_eq(out, "ccc|ddd");
    ck_assert_int_eq(wr_inputlog_position(&g, wr_lines_pending(&l)), 13);
    ck_assert_int_eq(file_size(path), 13);
    wr_lines_close(&l);
    wr_inputlog_close(&g);
    teardown();
}
END_TEST

START_TEST(test_inputlog_a_short_or_changed_log_is_refused_naming_it)
{
    setup();
    wr_inputlog_t g;
    wr_inputlog_init(&g);
    char why[512];
    ck_assert_int_eq(wr_inputlog_open(&g, path, -1, -1, why, sizeof why), 0);
    ck_assert_int_eq(wr_inputlog_append(&g, "0123456789\n", 11), 0);
    double check = wr_inputlog_check(&g, 11);
    wr_inputlog_close(&g);
    wr_inputlog_init(&g);
    ck_assert_int_eq(wr_inputlog_open(&g, path, 20, -1, why, sizeof why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "has 11 bytes, the checkpoint read 20"));
    ck_assert_ptr_nonnull(strstr(why, path));
    ck_assert_int_eq(wr_inputlog_open(&g, path, 11, check + 1, why, sizeof why), -EINVAL);
    ck_assert_ptr_nonnull(strstr(why, "changed"));
    ck_assert_int_eq(g.fd, -1);
    teardown();
}
END_TEST

START_TEST(test_inputlog_a_full_disk_is_an_error)
{
    wr_inputlog_t g;
    wr_inputlog_init(&g);
    char why[256];
    if (wr_inputlog_open(&g, "/dev/full", -1, -1, why, sizeof why) != 0) {
        return; /* no /dev/full here */
    }
    ck_assert_int_eq(wr_inputlog_append(&g, "x\n", 2), -ENOSPC);
    wr_inputlog_close(&g);
}
END_TEST

START_TEST(test_inputlog_release_punches_a_hole_and_keeps_offsets)
{
    setup();
    wr_inputlog_t g;
    wr_inputlog_init(&g);
    char why[256];
    ck_assert_int_eq(wr_inputlog_open(&g, path, -1, -1, why, sizeof why), 0);
    static char block[64 * 1024];
    memset(block, 'x', sizeof block);
    block[sizeof block - 1] = '\n';
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(wr_inputlog_append(&g, block, sizeof block), 0);
    }
    double check = wr_inputlog_check(&g, 7 * (int64_t)sizeof block);
    ck_assert_int_eq(wr_inputlog_release(&g, 7 * (int64_t)sizeof block), 0);
    ck_assert_int_eq(file_size(path), 8 * (long long)sizeof block);
    /* the check bytes before the offset are kept */
    ck_assert(wr_inputlog_check(&g, 7 * (int64_t)sizeof block) == check);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    if ((long long)st.st_blocks * 512 < 8 * (long long)sizeof block) {
        char c = 1;
        ck_assert_int_eq(pread(g.fd, &c, 1, 0), 1);
        ck_assert_int_eq(c, 0); /* a hole reads as zeros */
    }
    wr_inputlog_close(&g);
    teardown();
}
END_TEST

static Suite *inputlog_suite(void)
{
    Suite *s = suite_create("inputlog");
    add_case(s, "fresh_open_empties_and_append_logs",
             test_inputlog_fresh_open_empties_and_append_logs);
    add_case(s, "restore_replays_the_bytes_after_the_offset_then_appends",
             test_inputlog_restore_replays_the_bytes_after_the_offset_then_appends);
    add_case(s, "a_short_or_changed_log_is_refused_naming_it",
             test_inputlog_a_short_or_changed_log_is_refused_naming_it);
    add_case(s, "a_full_disk_is_an_error", test_inputlog_a_full_disk_is_an_error);
    add_case(s, "release_punches_a_hole_and_keeps_offsets",
             test_inputlog_release_punches_a_hole_and_keeps_offsets);
    return s;
}

int main(void)
{
    return run_suite(inputlog_suite());
}
