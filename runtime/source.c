/* SPDX-License-Identifier: MIT */
/* source.c: the source base (source.h): the registry of sources, appending events to the batch
 * being filled, cutting text into LINE and RECORDS events, END, FIONREAD, and what Lua asks of
 * a source (stats, describe, pending, name). Invariant: an event is only ever appended to the
 * batch of the poll running now, and never beyond its max. */
#include "source.h"

#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>

#include "fields.h"
#include "mem.h"
#include "out.h"
#include "rt.h"

/* ---- registry ---------------------------------------------------------------------------- */

int wr_source_may_add(weir_rt_t *rt)
{
    if (rt->started) {
        wr_err_set(&rt->err, WEIR_ESTATE, "sources must be declared before weir_rt_start");
        return 0;
    }
    return 1;
}

void wr_source_destroy(wr_source_t *s)
{
    wr_free(s->describe);
    s->describe = NULL;
    wr_free(s->input_log);
    s->input_log = NULL;
    s->ops->destroy(s);
}

int32_t wr_source_add(weir_rt_t *rt, wr_source_t *s, const char *describe)
{
    if (!wr_source_may_add(rt)) {
        wr_source_destroy(s);
        return WEIR_ESTATE;
    }
    if ((size_t)rt->nsources == rt->sources_cap) {
        rt->sources_cap = rt->sources_cap ? rt->sources_cap * 2 : 4;
        rt->sources = wr_xreallocarray(rt->sources, rt->sources_cap, sizeof *rt->sources);
    }
    s->rt = rt;
    s->id = rt->nsources;
    s->describe = wr_xstrdup(describe);
    rt->sources[rt->nsources++] = s;
    return s->id;
}

int wr_source_add_alone(weir_rt_t *rt, wr_source_t *s, const char *describe)
{
    if (rt->alone != NULL) {
        wr_source_destroy(s);
        return wr_err_set(&rt->err, WEIR_ESTATE, "%s: the runtime has an input already",
                          describe);
    }
    s->rt = rt;
    s->id = -1;
    s->describe = wr_xstrdup(describe);
    rt->alone = s;
    return 0;
}

/* ---- the batch --------------------------------------------------------------------------- */

weir_event_t *wr_source_push(weir_rt_t *rt, wr_source_t *s, int32_t kind)
{
    if (rt->n >= rt->max) {
        return NULL;
    }
    weir_event_t *e = &rt->out[rt->n++];
    e->kind = kind;
    e->source = s ? s->id : -1; /* the input delivered alone has id -1 too */
    e->ptr = NULL;
    e->len = 0;
    e->flags = 0;
    e->index = 0;
    e->time_ms = (double)rt->now_ms;
    return e;
}

/* An overlong record: counted, and the first one per source reported on stderr. */
static void count_dropped(wr_source_t *s, const wr_lines_t *l, const wr_line_t *rec)
{
    s->stat[WEIR_STAT_DROPPED] += 1;
    if (!s->drop_reported) {
        s->drop_reported = 1;
        wr_out_clear_status();
        fprintf(stderr, "weir: %s: line %lld: record longer than %zu bytes dropped\n",
                s->describe, (long long)rec->index, l->max_bytes);
    }
}

/* The hot path of emit_text/emit_fields, static so that it inlines there as before the split.
 */
static int next_line(wr_source_t *s, wr_lines_t *l, int at_eof, wr_line_t *rec)
{
    int r = wr_lines_next_inline(l, rec);
    if (r == WR_LINES_NONE && at_eof) {
        r = wr_lines_finish(l, rec);
    }
    if (r == WR_LINES_DROPPED) {
        count_dropped(s, l, rec);
    }
    return r;
}

int wr_source_next_line(wr_source_t *s, wr_lines_t *l, int at_eof, wr_line_t *rec)
{
    return next_line(s, l, at_eof, rec);
}

/* emit_text's common case in one loop, as emit_fields_fast: a one-byte delimiter, lines found
 * in the buffer and none too long, the counters in locals until the loop stops. */
static void emit_text_fast(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l)
{
    if (l->delim_len != 1 || l->skipping) {
        return;
    }
    const char dc = l->delim[0];
    const char *b = l->buf;
    const size_t tail = l->tail, max_bytes = l->max_bytes;
    const int strip_cr = l->strip_cr;
    size_t head = l->head;
    size_t from = l->search > head ? l->search : head;
    int64_t count = l->count;
    int64_t records = 0;
    const int32_t id = s->id;
    const double now = (double)rt->now_ms;
    while (rt->n < rt->max && from < tail) {
        const char *hit = memchr(b + from, dc, tail - from);
        if (hit == NULL) {
            break;
        }
        size_t end = (size_t)(hit - b);
        size_t len = end - head;
        if (strip_cr && len > 0 && b[end - 1] == '\r') {
            len--;
        }
        if (len > max_bytes) {
            break;
        }
        count++;
        records++;
        weir_event_t *e = &rt->out[rt->n++]; /* as wr_source_push */
        e->kind = WEIR_EV_LINE;
        e->source = id;
        e->ptr = b + head;
        e->len = (int32_t)len; /* len <= max_bytes <= INT32_MAX */
        e->flags = 0;
        e->index = (double)count;
        e->time_ms = now;
        head = end + 1;
        from = head;
    }
    if (records > 0) {
        l->head = head;
        l->search = head;
        l->count = count;
        l->pinned = 1;
        s->stat[WEIR_STAT_RECORDS] += (double)records;
    }
}

int wr_source_emit_text(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof)
{
    emit_text_fast(rt, s, l);
    for (;;) {
        if (rt->n >= rt->max) {
            return 0;
        }
        wr_line_t rec;
        int r = next_line(s, l, at_eof, &rec);
        if (r == WR_LINES_NONE) {
            return 1;
        }
        if (r == WR_LINES_DROPPED) {
            continue;
        }
        weir_event_t *e = wr_source_push(rt, s, WEIR_EV_LINE);
        e->ptr = rec.ptr;
        e->len = (int32_t)rec.len; /* rec.len <= max_bytes <= INT32_MAX */
        e->flags = rec.flags == WR_LINE_TRUNCATED_EOF ? WEIR_LINE_TRUNCATED_EOF : 0;
        e->index = (double)rec.index;
        s->stat[WEIR_STAT_RECORDS] += 1;
    }
}

/* Line count (1-based) parsed into slot: a record extends run (or starts a RECORDS event) and
 * takes the slot (*used + 1); a line that does not parse becomes a MALFORMED line event, which
 * ends the run. Returns the RECORDS event the next line may extend. */
static weir_event_t *parse_line(weir_rt_t *rt, wr_source_t *s, weir_fields_t *fields,
                                const char *line, size_t len, char *slot, int64_t count,
                                int32_t *used, weir_event_t *run)
{
    if (wr_fields_parse(fields, line, len, slot) != 0) {
        weir_event_t *e = wr_source_push(rt, s, WEIR_EV_LINE);
        e->ptr = line;
        e->len = (int32_t)len;
        e->flags = WEIR_LINE_MALFORMED;
        e->index = (double)count;
        return NULL;
    }
    (*used)++;
    if (run != NULL) {
        run->len++;
        return run;
    }
    run = wr_source_push(rt, s, WEIR_EV_RECORDS);
    run->ptr = slot;
    run->len = 1;
    run->index = (double)count;
    return run;
}

/* emit_fields' common case in one loop: a one-byte delimiter, lines found in the buffer and
 * none too long. The splitter's and the batch's counters stay in locals and are written back
 * when the loop stops; what the loop does not take (no delimiter left, an overlong line, a
 * skipped one, no room) the general loop in wr_source_emit_fields does, with the same effects
 * as wr_lines_next would have had line by line. Returns the RECORDS event the next line may
 * extend. */
static weir_event_t *emit_fields_fast(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l,
                                      weir_fields_t *fields, char *buf, int32_t cap,
                                      int32_t *used, size_t size, weir_event_t *run)
{
    if (l->delim_len != 1 || l->skipping) {
        return run;
    }
    const char dc = l->delim[0];
    const char *b = l->buf;
    const size_t tail = l->tail, max_bytes = l->max_bytes;
    const int strip_cr = l->strip_cr;
    size_t head = l->head;
    size_t from = l->search > head ? l->search : head;
    int64_t count = l->count;
    int32_t u = *used;
    int64_t records = 0;
    while (u < cap && rt->n < rt->max && from < tail) {
        const char *hit = memchr(b + from, dc, tail - from);
        if (hit == NULL) {
            break;
        }
        size_t end = (size_t)(hit - b);
        size_t len = end - head;
        if (strip_cr && len > 0 && b[end - 1] == '\r') {
            len--;
        }
        if (len > max_bytes) {
            break;
        }
        count++;
        records++;
        run = parse_line(rt, s, fields, b + head, len, buf + (size_t)u * size, count, &u, run);
        head = end + 1;
        from = head;
    }
    if (records > 0) {
        l->head = head;
        l->search = head;
        l->count = count;
        l->pinned = 1;
        *used = u;
        s->stat[WEIR_STAT_RECORDS] += (double)records;
    }
    return run;
}

/* The last delimiter byte c in [from, end), or NULL. */
static const char *last_delimiter(const char *from, const char *end, char c)
{
    while (end > from) {
        if (*--end == c) {
            return end;
        }
    }
    return NULL;
}

/* emit_fields' one pass, for a layout wr_fields_scannable takes: the buffer up to its last
 * delimiter is cut and parsed by wr_fields_scan, lines and fields together, the records
 * filled in place in buf. A line the scan does not take is cut and parsed here the general
 * way (wr_fields_parse: a record, or a WEIR_LINE_MALFORMED line); an overlong one stops the
 * pass, for the general loop to drop. The same events and effects as emit_fields_fast. */
static weir_event_t *emit_fields_scan(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l,
                                      weir_fields_t *fields, char *buf, int32_t cap,
                                      int32_t *used, size_t size, weir_event_t *run)
{
    const char dc = l->delim[0];
    const char *b = l->buf;
    const size_t max_bytes = l->max_bytes;
    const int strip_cr = l->strip_cr;
    size_t from = l->search > l->head ? l->search : l->head;
    const char *lim = from < l->tail ? last_delimiter(b + from, b + l->tail, dc) : NULL;
    if (lim == NULL) {
        return run;
    }
    const char *p = b + l->head;
    int64_t count = l->count;
    int32_t u = *used;
    while (p <= lim && u < cap && (run != NULL || rt->n < rt->max)) {
        const char *next = p;
        size_t k = wr_fields_scan(fields, p, lim, dc, strip_cr, max_bytes, buf + (size_t)u * size,
                                  (size_t)(cap - u), &next);
        if (k > 0) {
            if (run != NULL) {
                run->len += (int32_t)k;
            } else {
                run = wr_source_push(rt, s, WEIR_EV_RECORDS);
                run->ptr = buf + (size_t)u * size;
                run->len = (int32_t)k;
                run->index = (double)(count + 1);
            }
            u += (int32_t)k;
            count += (int64_t)k;
            p = next;
            continue;
        }
        /* the line at p is not the scan's: cut it here (lim ends it at the latest) */
        const char *hit = memchr(p, dc, (size_t)(lim - p) + 1);
        size_t len = (size_t)(hit - p);
        if (strip_cr && len > 0 && hit[-1] == '\r') {
            len--;
        }
        if (len > max_bytes || rt->n >= rt->max) {
            break; /* dropped by the general loop, or no room for its event */
        }
        count++;
        run = parse_line(rt, s, fields, p, len, buf + (size_t)u * size, count, &u, run);
        p = hit + 1;
    }
    int64_t records = count - l->count;
    if (records > 0) {
        size_t head = (size_t)(p - b);
        l->head = head;
        /* past lim no delimiter is left */
        l->search = p > lim ? l->tail : head;
        l->count = count;
        l->pinned = 1;
        *used = u;
        s->stat[WEIR_STAT_RECORDS] += (double)records;
    }
    return run;
}

int wr_source_emit_fields(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof,
                        weir_fields_t *fields, char *buf, int32_t cap, int32_t *used)
{
    size_t size = (size_t)wr_fields_size(fields);
    weir_event_t *run = NULL; /* the RECORDS event the next parsed line may extend */
    if (cap > rt->max) {
        cap = rt->max;
    }
    if (l->delim_len == 1 && !l->skipping && wr_fields_scannable(fields, l->delim[0])) {
        run = emit_fields_scan(rt, s, l, fields, buf, cap, used, size, run);
    } else {
        run = emit_fields_fast(rt, s, l, fields, buf, cap, used, size, run);
    }
    for (;;) {
        /* A line is cut only with room for both its record and a new event. */
        if (rt->n >= rt->max || *used >= cap) {
            return 0;
        }
        wr_line_t rec;
        int r = next_line(s, l, at_eof, &rec);
        if (r == WR_LINES_NONE) {
            return 1;
        }
        if (r == WR_LINES_DROPPED) {
            run = NULL; /* its line number is skipped: the run cannot go on */
            continue;
        }
        s->stat[WEIR_STAT_RECORDS] += 1;
        char *slot = buf + (size_t)*used * size;
        if (wr_fields_parse(fields, rec.ptr, rec.len, slot) != 0) {
            weir_event_t *e = wr_source_push(rt, s, WEIR_EV_LINE);
            e->ptr = rec.ptr;
            e->len = (int32_t)rec.len;
            e->flags = WEIR_LINE_MALFORMED
                       | (rec.flags == WR_LINE_TRUNCATED_EOF ? WEIR_LINE_TRUNCATED_EOF : 0);
            e->index = (double)rec.index;
            run = NULL;
            continue;
        }
        (*used)++;
        if (run != NULL) {
            run->len++;
            continue;
        }
        run = wr_source_push(rt, s, WEIR_EV_RECORDS);
        run->ptr = slot;
        run->len = 1;
        run->index = (double)rec.index;
    }
}

int wr_source_emit_end(weir_rt_t *rt, wr_source_t *s, int32_t flags)
{
    weir_event_t *e = wr_source_push(rt, s, WEIR_EV_END);
    if (e == NULL) {
        return 0;
    }
    e->flags = flags;
    s->ended = 1;
    return 1;
}

int wr_source_unread_fd(int fd)
{
    int n = 0;
    if (ioctl(fd, FIONREAD, &n) < 0) {
        return 0;
    }
    return n > 0;
}

int wr_source_unread(const uv_handle_t *h)
{
    uv_os_fd_t fd;
    if (uv_fileno(h, &fd) < 0) {
        return 0;
    }
    return wr_source_unread_fd(fd);
}

/* ---- introspection (weir_ffi.h) ----------------------------------------------------------- */

static wr_source_t *find_source(const weir_rt_t *rt, int32_t id)
{
    if (rt == NULL || id < 0 || id >= rt->nsources) {
        return NULL;
    }
    return rt->sources[id];
}

double weir_source_stat(const weir_rt_t *rt, int32_t source, int32_t what)
{
    const wr_source_t *s = find_source(rt, source);
    if (s == NULL || what < WEIR_STAT_RECORDS || what > WEIR_STAT_RECONNECTS) {
        return -1;
    }
    return s->stat[what];
}

const char *weir_source_describe(const weir_rt_t *rt, int32_t source)
{
    const wr_source_t *s = find_source(rt, source);
    return s ? s->describe : "";
}

/* The idle-advance guard asks this between polls: time may push a watermark forward only while
 * the source is quiet, so records held back by backpressure (a full batch, unread kernel
 * bytes) are never made late. Each kind says what "waiting" means in its pending hook. */
int32_t weir_source_pending(const weir_rt_t *rt, int32_t source)
{
    const wr_source_t *s = find_source(rt, source);
    if (s == NULL) {
        return WEIR_EINVAL;
    }
    if (!rt->started || s->ended) {
        return 0;
    }
    return s->ops->pending(s, wr_clock_now(&rt->clock)) ? 1 : 0;
}

/* Watermark alignment: the loop skips a paused source's fill (unless the kind pauses itself,
 * fills_paused) and next_due, so it neither delivers nor holds the virtual clock; the
 * kind's pause hook stops its I/O. A stop wins: a stopping source drains and ends. */
int weir_source_pause(weir_rt_t *rt, int32_t source, int32_t on)
{
    wr_source_t *s = (wr_source_t *)find_source(rt, source);
    if (s == NULL) {
        return WEIR_EINVAL;
    }
    on = on != 0;
    if (s->paused == on || s->ended || s->stopping) {
        return 0;
    }
    s->paused = on;
    if (s->ops->pause && rt->started) {
        s->ops->pause(s, on);
    }
    return 0;
}

int32_t weir_source_paused(const weir_rt_t *rt, int32_t source)
{
    const wr_source_t *s = find_source(rt, source);
    return s == NULL ? WEIR_EINVAL : s->paused && !s->stopping && !s->ended;
}

int weir_source_position(const weir_rt_t *rt, int32_t source, weir_source_position_t *out)
{
    const wr_source_t *s = find_source(rt, source);
    if (s == NULL || out == NULL) {
        return WEIR_EINVAL;
    }
    memset(out, 0, sizeof *out);
    out->records = s->stat[WEIR_STAT_RECORDS];
    out->bytes = s->stat[WEIR_STAT_BYTES];
    out->dropped = s->stat[WEIR_STAT_DROPPED];
    out->ended = s->ended;
    out->check = -1;
    if (s->ops->position) {
        s->ops->position(s, out);
    }
    return 0;
}

int weir_source_seek(weir_rt_t *rt, int32_t source, const weir_source_position_t *pos)
{
    wr_source_t *s = find_source(rt, source);
    if (s == NULL || pos == NULL) {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "%s: seek after start", s->describe);
    }
    if (s->ops->seek == NULL || !pos->replayable) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: cannot continue from a checkpoint",
                          s->describe);
    }
    if (!(pos->records >= 0 && pos->bytes >= 0 && pos->dropped >= 0)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: bad position", s->describe);
    }
    /* the counters first: a kind's seek may correct them (a file's bytes restart at offset) */
    s->stat[WEIR_STAT_RECORDS] = pos->records;
    s->stat[WEIR_STAT_BYTES] = pos->bytes;
    s->stat[WEIR_STAT_DROPPED] = pos->dropped;
    s->drop_reported = pos->dropped > 0; /* the first drop was reported before */
    return s->ops->seek(s, pos);
}

int weir_source_input_log(weir_rt_t *rt, int32_t source, const char *path)
{
    wr_source_t *s = find_source(rt, source);
    if (s == NULL || path == NULL || path[0] == '\0') {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "%s: input log after start", s->describe);
    }
    if (strcmp(s->kind, "socket_text_stream") != 0 && strcmp(s->kind, "stdin") != 0) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: only a socket or stdin has an input log",
                          s->describe);
    }
    wr_free(s->input_log);
    s->input_log = wr_xstrdup(path);
    return 0;
}

int weir_source_input_log_release(weir_rt_t *rt, int32_t source, double offset)
{
    wr_source_t *s = find_source(rt, source);
    if (s == NULL || !(offset >= 0 && offset < 9.0e15)) {
        return WEIR_EINVAL;
    }
    if (s->ops->release_log == NULL) {
        return 0;
    }
    int rc = s->ops->release_log(s, (int64_t)offset);
    return rc < 0 ? wr_err_set(&rt->err, rc, "%s: input log %s: %s", s->describe,
                               s->input_log ? s->input_log : "", weir_strerror(rc))
                  : 0;
}

int weir_source_set_name(weir_rt_t *rt, int32_t source, const char *name)
{
    wr_source_t *s = find_source(rt, source);
    if (s == NULL) {
        return rt ? wr_err_set(&rt->err, WEIR_EINVAL, "no source %d", (int)source) : WEIR_EINVAL;
    }
    size_t n = strlen(s->kind) + (name ? strlen(name) : 0) + 2;
    char *d = wr_xmalloc(n);
    if (name != NULL && name[0] != '\0') {
        snprintf(d, n, "%s %s", s->kind, name);
    } else {
        snprintf(d, n, "%s", s->kind);
    }
    wr_free(s->describe);
    s->describe = d;
    return 0;
}
