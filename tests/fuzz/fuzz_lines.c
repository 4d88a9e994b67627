/* SPDX-License-Identifier: MIT */
/* fuzz_lines.c: runtime/lines.c against a naive splitter. Input: byte 0 picks the delimiter,
 * byte 1 max_bytes (0: the 1 MiB default, else 1..32), bytes 2-3 seed the chunk sizes and the
 * release decisions; the rest is the text. The splitter is fed in random chunks, records stay
 * pinned across several chunks at random, and every record, index, flag and drop must be what
 * the naive splitter says; wr_lines_has_record must predict whether a record comes out, the
 * pending bytes stay bounded, and pinned records keep their bytes until released. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_support.h"
#include "lines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const DELIMS[] = { "\n", "\r\n", ",", "ab", "aa", "aba", "\x01", "xyzzy" };
enum { N_DELIMS = sizeof DELIMS / sizeof DELIMS[0], MAX_PINNED = 4096 };

typedef struct want {
    size_t start; /* into the text */
    size_t len;   /* after the "\r" strip */
    int dropped;
    int flags;
} want_t;

/* The naive splitter: the leftmost delimiter from the record's start, tried at every byte. */
static size_t split(const uint8_t *t, size_t n, const char *d, size_t max, want_t *out)
{
    size_t dl = strlen(d), pos = 0, k = 0;
    int strip_cr = strcmp(d, "\n") == 0;
    while (pos < n) {
        size_t hit = pos;
        while (hit + dl <= n && memcmp(t + hit, d, dl) != 0) {
            hit++;
        }
        int eof = hit + dl > n;
        size_t end = eof ? n : hit;
        size_t len = end - pos;
        if (strip_cr && len > 0 && t[end - 1] == '\r') {
            len--;
        }
        out[k++] = (want_t){ pos, len, len > max, eof ? WR_LINE_TRUNCATED_EOF : 0 };
        pos = eof ? n : hit + dl;
    }
    return k;
}

typedef struct run {
    wr_lines_t l;
    const uint8_t *text;
    const want_t *want;
    size_t n_want;
    size_t got;                    /* records (and drops) seen so far */
    wr_line_t pinned[MAX_PINNED];  /* records returned since the last release */
    size_t n_pinned;
} run_t;

static void check_record(run_t *r, int rc, const wr_line_t *rec)
{
    FUZZ_CHECK(r->got < r->n_want, "record %zu beyond the %zu the naive splitter finds",
               r->got + 1, r->n_want);
    const want_t *w = &r->want[r->got];
    r->got++;
    FUZZ_CHECK(rec->index == (int64_t)r->got, "index %lld, want %zu", (long long)rec->index,
               r->got);
    FUZZ_CHECK(rec->flags == w->flags, "record %zu: flags %d, want %d", r->got, rec->flags,
               w->flags);
    if (w->dropped) {
        FUZZ_CHECK(rc == WR_LINES_DROPPED, "record %zu (%zu bytes) should be dropped", r->got,
                   w->len);
        return;
    }
    FUZZ_CHECK(rc == WR_LINES_RECORD, "record %zu (%zu bytes) dropped", r->got, w->len);
    FUZZ_CHECK(rec->len == w->len && memcmp(rec->ptr, r->text + w->start, w->len) == 0,
               "record %zu: %zu bytes differ from the naive %zu", r->got, rec->len, w->len);
    if (r->n_pinned < MAX_PINNED) {
        r->pinned[r->n_pinned++] = *rec;
    }
}

/* Pinned records must still hold their bytes: the buffer may not have moved under them. */
static void release(run_t *r)
{
    for (size_t i = 0; i < r->n_pinned; i++) {
        const wr_line_t *p = &r->pinned[i];
        const want_t *w = &r->want[p->index - 1];
        FUZZ_CHECK(memcmp(p->ptr, r->text + w->start, w->len) == 0,
                   "pinned record %lld changed before its release", (long long)p->index);
    }
    r->n_pinned = 0;
    wr_lines_release(&r->l);
}

/* wr_lines_next until NONE; returns 1 if a record (not a drop) came out. */
static int drain(run_t *r)
{
    int any = 0, rc;
    wr_line_t rec;
    while ((rc = wr_lines_next(&r->l, &rec)) != WR_LINES_NONE) {
        check_record(r, rc, &rec);
        any |= rc == WR_LINES_RECORD;
    }
    FUZZ_CHECK(wr_lines_pending(&r->l) <= wr_lines_partial_max(&r->l),
               "%zu bytes pending, more than the %zu a partial record may hold",
               wr_lines_pending(&r->l), wr_lines_partial_max(&r->l));
    return any;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) {
        return 0;
    }
    const char *delim = DELIMS[data[0] % N_DELIMS];
    size_t max = data[1] == 0 ? (size_t)WR_LINES_DEFAULT_MAX : (size_t)(data[1] % 32) + 1;
    fuzz_rng_t rng;
    fuzz_rng_seed(&rng, (uint64_t)data[2] << 8 | data[3]);
    const uint8_t *text = data + 4;
    size_t n = size - 4;

    static want_t want[1 << 17];
    if (n >= sizeof want / sizeof want[0]) {
        return 0; /* more records than this table holds; libFuzzer's inputs are far smaller */
    }
    static run_t r;
    memset(&r, 0, sizeof r);
    r.text = text;
    r.want = want;
    r.n_want = split(text, n, delim, max, want);
    wr_lines_init(&r.l, delim, data[1] == 0 ? 0 : (int64_t)max);

    size_t off = 0;
    while (off < n) {
        size_t chunk = fuzz_rng_below(&rng, 4) == 0 ? 1 + fuzz_rng_below(&rng, 300)
                                                    : 1 + fuzz_rng_below(&rng, 8);
        size_t got = 0;
        char *dst = wr_lines_space(&r.l, chunk, &got);
        if (!r.l.pinned) {
            FUZZ_CHECK(got >= chunk, "unpinned splitter gave %zu bytes of room for %zu", got,
                       chunk);
        }
        if (got == 0) {
            release(&r); /* a full, pinned buffer: the source would release at its next poll */
            continue;
        }
        size_t k = chunk < got ? chunk : got;
        k = k < n - off ? k : n - off;
        memcpy(dst, text + off, k);
        wr_lines_commit(&r.l, k);
        off += k;
        int predicted = wr_lines_has_record(&r.l, 0);
        int any = drain(&r);
        FUZZ_CHECK(predicted == any, "has_record said %d, a record came out: %d", predicted,
                   any);
        if (fuzz_rng_below(&rng, 3) == 0) {
            release(&r);
        }
    }
    int predicted = wr_lines_has_record(&r.l, 1);
    int any = drain(&r);
    wr_line_t rec;
    int rc = wr_lines_finish(&r.l, &rec);
    if (rc != WR_LINES_NONE) {
        check_record(&r, rc, &rec);
    }
    FUZZ_CHECK(predicted == (any || rc == WR_LINES_RECORD),
               "has_record at EOF said %d, a record came out: %d", predicted,
               any || rc == WR_LINES_RECORD);
    FUZZ_CHECK(wr_lines_finish(&r.l, &rec) == WR_LINES_NONE, "a second finish returned more");
    FUZZ_CHECK(wr_lines_has_record(&r.l, 1) == 0, "has_record after finish");
    FUZZ_CHECK(r.got == r.n_want, "%zu records out, the naive splitter finds %zu", r.got,
               r.n_want);
    release(&r);
    wr_lines_close(&r.l);
    return 0;
}
