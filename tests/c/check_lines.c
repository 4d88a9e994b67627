/* SPDX-License-Identifier: MIT */
/* check_lines.c: the record splitter (runtime/lines.c), fed by hand in chunks of every size. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_support.h"
#include "lines.h"

enum { MAX_RECS = 64, REC_TEXT = 256 };

typedef struct got {
    int n;
    char text[MAX_RECS][REC_TEXT];
    size_t len[MAX_RECS];
    int64_t index[MAX_RECS];
    int flags[MAX_RECS];
    int ndropped;
    int64_t dropped[MAX_RECS];
} got_t;

static void feed(wr_lines_t *l, const char *p, size_t n)
{
    size_t room = 0;
    char *d = wr_lines_space(l, n, &room);
    if (room < n) { /* not ck_assert: that costs a syscall, and this runs in loops */
        ck_abort_msg("wr_lines_space gave %zu bytes, want %zu", room, n);
    }
    memcpy(d, p, n);
    wr_lines_commit(l, n);
}

static void take(got_t *g, int r, const wr_line_t *rec)
{
    if (r == WR_LINES_DROPPED) {
        g->dropped[g->ndropped++] = rec->index;
        return;
    }
    ck_assert_int_eq(r, WR_LINES_RECORD);
    ck_assert_uint_lt(rec->len, REC_TEXT);
    memcpy(g->text[g->n], rec->ptr, rec->len);
    g->text[g->n][rec->len] = '\0';
    g->len[g->n] = rec->len;
    g->index[g->n] = rec->index;
    g->flags[g->n] = rec->flags;
    g->n++;
}

/* Cuts every complete record (and, at eof, the leftover), releasing after each round as the
 * loop does at the start of a poll. */
static void drain(wr_lines_t *l, got_t *g, int eof)
{
    wr_line_t rec;
    int r;
    while ((r = wr_lines_next(l, &rec)) != WR_LINES_NONE) {
        take(g, r, &rec);
    }
    if (eof) {
        while ((r = wr_lines_finish(l, &rec)) != WR_LINES_NONE) {
            take(g, r, &rec);
        }
    }
    wr_lines_release(l);
}

/* Splits text fed in chunks of `chunk` bytes. */
static void split(const char *delim, int64_t max, const char *text, size_t len, size_t chunk,
                  got_t *g)
{
    wr_lines_t l;
    wr_lines_init(&l, delim, max);
    memset(g, 0, sizeof *g);
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        feed(&l, text + off, n);
        drain(&l, g, 0);
    }
    drain(&l, g, 1);
    wr_lines_close(&l);
}

START_TEST(test_records_are_cut_at_every_newline_in_any_chunking)
{
    static const char text[] = "a\nbb\n\nccc\n";
    for (size_t chunk = 1; chunk <= sizeof text; chunk++) {
        got_t g;
        split(NULL, 0, text, sizeof text - 1, chunk, &g);
        ck_assert_int_eq(g.n, 4);
        ck_assert_str_eq(g.text[0], "a");
        ck_assert_str_eq(g.text[1], "bb");
        ck_assert_str_eq(g.text[2], "");
        ck_assert_str_eq(g.text[3], "ccc");
        for (int i = 0; i < 4; i++) {
            ck_assert_int_eq(g.index[i], i + 1);
            ck_assert_int_eq(g.flags[i], 0);
        }
    }
}
END_TEST

START_TEST(test_one_trailing_cr_is_stripped_only_with_the_newline_delimiter)
{
    got_t g;
    static const char crlf[] = "a\r\nb\r\r\n\r\n";
    split(NULL, 0, crlf, sizeof crlf - 1, 3, &g);
    ck_assert_int_eq(g.n, 3);
    ck_assert_str_eq(g.text[0], "a");
    ck_assert_str_eq(g.text[1], "b\r");
    ck_assert_str_eq(g.text[2], "");

    static const char semi[] = "a\r;b\r;";
    split(";", 0, semi, sizeof semi - 1, 2, &g);
    ck_assert_int_eq(g.n, 2);
    ck_assert_str_eq(g.text[0], "a\r");
    ck_assert_str_eq(g.text[1], "b\r");
}
END_TEST

START_TEST(test_multi_byte_delimiter_split_across_chunks)
{
    static const char text[] = "x<>y<><>z<";
    for (size_t chunk = 1; chunk <= sizeof text; chunk++) {
        got_t g;
        split("<>", 0, text, sizeof text - 1, chunk, &g);
        ck_assert_int_eq(g.n, 4);
        ck_assert_str_eq(g.text[0], "x");
        ck_assert_str_eq(g.text[1], "y");
        ck_assert_str_eq(g.text[2], "");
        ck_assert_str_eq(g.text[3], "z<");
        ck_assert_int_eq(g.flags[3], WR_LINE_TRUNCATED_EOF);
    }
}
END_TEST

START_TEST(test_overlapping_delimiter_matches_at_its_first_occurrence)
{
    got_t g;
    static const char text[] = "aaab";
    split("aa", 0, text, sizeof text - 1, 1, &g);
    ck_assert_int_eq(g.n, 2);
    ck_assert_str_eq(g.text[0], "");
    ck_assert_str_eq(g.text[1], "ab");
}
END_TEST

START_TEST(test_leftover_at_eof_is_a_last_record_flagged_truncated)
{
    got_t g;
    split(NULL, 0, "a\nb", 3, 64, &g);
    ck_assert_int_eq(g.n, 2);
    ck_assert_int_eq(g.flags[0], 0);
    ck_assert_str_eq(g.text[1], "b");
    ck_assert_int_eq(g.index[1], 2);
    ck_assert_int_eq(g.flags[1], WR_LINE_TRUNCATED_EOF);

    split(NULL, 0, "a\n", 2, 64, &g);
    ck_assert_int_eq(g.n, 1); /* an input ending in the delimiter has no extra record */

    split(NULL, 0, "", 0, 64, &g);
    ck_assert_int_eq(g.n, 0);
}
END_TEST

START_TEST(test_finish_returns_the_leftover_only_once)
{
    wr_lines_t l;
    wr_line_t rec;
    wr_lines_init(&l, NULL, 0);
    feed(&l, "tail", 4);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_NONE);
    ck_assert_int_eq(wr_lines_finish(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(rec.len, 4);
    ck_assert_int_eq(wr_lines_finish(&l, &rec), WR_LINES_NONE);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_NONE);
    wr_lines_close(&l);
}
END_TEST

START_TEST(test_reopen_after_finish_starts_a_new_record_and_finish_works_again)
{
    wr_lines_t l;
    wr_line_t rec;
    wr_lines_init(&l, "||", 0);
    feed(&l, "a||hal|", 7); /* one byte of a delimiter, then the input ends */
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_NONE);
    ck_assert_int_eq(wr_lines_finish(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(rec.len, 4);
    ck_assert_mem_eq(rec.ptr, "hal|", 4);
    wr_lines_release(&l);
    wr_lines_reopen(&l);
    feed(&l, "|f||g", 5); /* its "|" does not complete the earlier one */
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(rec.len, 2);
    ck_assert_mem_eq(rec.ptr, "|f", 2);
    ck_assert_int_eq((int)rec.index, 3);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_NONE);
    ck_assert_int_eq(wr_lines_has_record(&l, 1), 1);
    ck_assert_int_eq(wr_lines_finish(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(rec.len, 1);
    ck_assert_int_eq(rec.flags, WR_LINE_TRUNCATED_EOF);
    ck_assert_int_eq(wr_lines_finish(&l, &rec), WR_LINES_NONE);
    wr_lines_close(&l);
}
END_TEST

START_TEST(test_nul_bytes_and_invalid_utf8_pass_through_untouched)
{
    static const char text[] = "a\0b\xff\xc3(\n\0\n";
    got_t g;
    split(NULL, 0, text, sizeof text - 1, 2, &g);
    ck_assert_int_eq(g.n, 2);
    ck_assert_uint_eq(g.len[0], 6);
    ck_assert_mem_eq(g.text[0], "a\0b\xff\xc3(", 6);
    ck_assert_uint_eq(g.len[1], 1);
    ck_assert_int_eq(g.text[1][0], '\0');
}
END_TEST

START_TEST(test_overlong_record_is_dropped_and_keeps_its_index)
{
    static const char text[] = "abc\nabcdefgh\nxy\nabcde";
    for (size_t chunk = 1; chunk <= sizeof text; chunk++) {
        got_t g;
        split(NULL, 4, text, sizeof text - 1, chunk, &g);
        ck_assert_int_eq(g.n, 2);
        ck_assert_str_eq(g.text[0], "abc");
        ck_assert_int_eq(g.index[0], 1);
        ck_assert_str_eq(g.text[1], "xy");
        ck_assert_int_eq(g.index[1], 3);
        ck_assert_int_eq(g.ndropped, 2);
        ck_assert_int_eq(g.dropped[0], 2);
        ck_assert_int_eq(g.dropped[1], 4); /* the overlong leftover at EOF */
    }
}
END_TEST

START_TEST(test_record_of_exactly_max_bytes_is_delivered)
{
    static const char text[] = "abcd\nabcd\r\nabcd";
    for (size_t chunk = 1; chunk <= sizeof text; chunk++) {
        got_t g;
        split(NULL, 4, text, sizeof text - 1, chunk, &g);
        ck_assert_int_eq(g.ndropped, 0);
        ck_assert_int_eq(g.n, 3);
        ck_assert_str_eq(g.text[1], "abcd");
    }
    got_t g;
    split("<>", 4, "abcd<>abcd<", 11, 1, &g);
    ck_assert_int_eq(g.n, 1);
    ck_assert_int_eq(g.ndropped, 1); /* "abcd<" at EOF is 5 bytes */
}
END_TEST

START_TEST(test_overlong_record_in_small_chunks_keeps_memory_bounded)
{
    wr_lines_t l;
    wr_lines_init(&l, "<>", 8);
    got_t g;
    memset(&g, 0, sizeof g);
    char chunk[1024];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 1024; i++) { /* 1 MiB without a delimiter */
        feed(&l, chunk, sizeof chunk);
        drain(&l, &g, 0);
        if (wr_lines_pending(&l) > wr_lines_partial_max(&l)) {
            ck_abort_msg("%zu bytes pending", wr_lines_pending(&l));
        }
    }
    ck_assert_uint_le(l.cap, 4 * sizeof chunk);
    feed(&l, "x<", 2);
    drain(&l, &g, 0);
    feed(&l, ">ok<>", 5);
    drain(&l, &g, 1);
    ck_assert_int_eq(g.ndropped, 1);
    ck_assert_int_eq(g.dropped[0], 1);
    ck_assert_int_eq(g.n, 1);
    ck_assert_str_eq(g.text[0], "ok");
    ck_assert_int_eq(g.index[0], 2);
    wr_lines_close(&l);
}
END_TEST

START_TEST(test_pinned_records_do_not_move_until_release)
{
    wr_lines_t l;
    wr_line_t rec;
    wr_lines_init(&l, NULL, 0);
    feed(&l, "first\nsecond", 12);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_RECORD);
    const char *p = rec.ptr;
    char *before = l.buf;
    size_t room = 0;
    wr_lines_space(&l, 1 << 20, &room); /* far more than is free: must not move while pinned */
    ck_assert_ptr_eq(l.buf, before);
    ck_assert_uint_lt(room, 1 << 20);
    ck_assert_mem_eq(p, "first", 5);
    wr_lines_release(&l);
    wr_lines_space(&l, 1 << 20, &room);
    ck_assert_uint_ge(room, 1 << 20);
    feed(&l, "\n", 1);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_RECORD);
    ck_assert_uint_eq(rec.len, 6);
    ck_assert_mem_eq(rec.ptr, "second", 6);
    ck_assert_int_eq(rec.index, 2);
    wr_lines_close(&l);
}
END_TEST

START_TEST(test_a_long_line_in_many_chunks_is_scanned_once)
{
    /* 4 MiB line in 1 KiB chunks: quadratic rescanning would take minutes, not milliseconds */
    wr_lines_t l;
    wr_line_t rec;
    wr_lines_init(&l, "\r\n", 8 << 20);
    char chunk[1024];
    memset(chunk, 'y', sizeof chunk);
    for (int i = 0; i < 4096; i++) {
        feed(&l, chunk, sizeof chunk);
        if (wr_lines_next(&l, &rec) != WR_LINES_NONE) {
            ck_abort_msg("a record without a delimiter");
        }
        wr_lines_release(&l);
    }
    feed(&l, "\r\n", 2);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_RECORD);
    ck_assert_uint_eq(rec.len, 4096 * sizeof chunk);
    wr_lines_close(&l);
}
END_TEST

START_TEST(test_has_record_counts_complete_records_not_half_or_dropped_ones)
{
    wr_lines_t l;
    wr_lines_init(&l, NULL, 4);
    ck_assert_int_eq(wr_lines_has_record(&l, 0), 0);
    ck_assert_int_eq(wr_lines_has_record(&l, 1), 0); /* nothing at all, even at eof */
    feed(&l, "ab", 2);
    ck_assert_int_eq(wr_lines_has_record(&l, 0), 0); /* the rest has not arrived */
    ck_assert_int_eq(wr_lines_has_record(&l, 1), 1); /* at eof it is the last record */
    feed(&l, "\r\n", 2);
    ck_assert_int_eq(wr_lines_has_record(&l, 0), 1);
    wr_line_t rec;
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(wr_lines_has_record(&l, 0), 0);
    feed(&l, "toolong\n", 8); /* 7 bytes > max 4: would be dropped */
    ck_assert_int_eq(wr_lines_has_record(&l, 1), 0);
    feed(&l, "\n", 1); /* an empty record after it does count */
    ck_assert_int_eq(wr_lines_has_record(&l, 0), 1);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_DROPPED);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(wr_lines_has_record(&l, 0), 0);
    wr_lines_release(&l);
    feed(&l, "waytoolong", 10); /* the splitter starts skipping this one */
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_NONE);
    ck_assert_int_eq(wr_lines_has_record(&l, 1), 0);
    feed(&l, "x\nok", 4); /* the skipped record ends; "ok" is a leftover */
    ck_assert_int_eq(wr_lines_has_record(&l, 0), 0);
    ck_assert_int_eq(wr_lines_has_record(&l, 1), 1);
    ck_assert_int_eq(wr_lines_next(&l, &rec), WR_LINES_DROPPED);
    ck_assert_int_eq(wr_lines_finish(&l, &rec), WR_LINES_RECORD);
    ck_assert_int_eq(wr_lines_has_record(&l, 1), 0); /* finished */
    wr_lines_close(&l);
}
END_TEST

static Suite *lines_suite(void)
{
    Suite *s = suite_create("lines");
    const check_case_t cases[] = {
        {"records_are_cut_at_every_newline", test_records_are_cut_at_every_newline_in_any_chunking},
        {"trailing_cr_stripped_only_for_newline",
         test_one_trailing_cr_is_stripped_only_with_the_newline_delimiter},
        {"multi_byte_delimiter_across_chunks", test_multi_byte_delimiter_split_across_chunks},
        {"overlapping_delimiter_first_occurrence",
         test_overlapping_delimiter_matches_at_its_first_occurrence},
        {"leftover_at_eof_is_flagged_truncated",
         test_leftover_at_eof_is_a_last_record_flagged_truncated},
        {"finish_returns_leftover_once", test_finish_returns_the_leftover_only_once},
        {"reopen_after_finish_new_record",
         test_reopen_after_finish_starts_a_new_record_and_finish_works_again},
        {"nul_and_invalid_utf8_pass_through",
         test_nul_bytes_and_invalid_utf8_pass_through_untouched},
        {"overlong_record_dropped_keeps_index",
         test_overlong_record_is_dropped_and_keeps_its_index},
        {"record_of_exactly_max_bytes_delivered", test_record_of_exactly_max_bytes_is_delivered},
        {"overlong_record_memory_bounded",
         test_overlong_record_in_small_chunks_keeps_memory_bounded},
        {"pinned_records_do_not_move", test_pinned_records_do_not_move_until_release},
        {"long_line_scanned_once", test_a_long_line_in_many_chunks_is_scanned_once},
        {"has_record_counts_complete_records_only",
         test_has_record_counts_complete_records_not_half_or_dropped_ones},
    };
    add_cases(s, cases, sizeof cases / sizeof cases[0]);
    return s;
}

int main(void)
{
    return run_suite(lines_suite());
}
