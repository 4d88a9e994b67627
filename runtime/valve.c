/* SPDX-License-Identifier: MIT */
/* valve.c: Flink's StatusWatermarkValve (SEMANTICS.md section 3, following the FLINK-40475
 * lines). Invariants: last_out only grows; an aligned channel is active; idle (the output
 * status) holds exactly when no channel is active. */
#include "valve.h"
#include "ms.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>

#include "mem.h"
#include "weir.h"

int wr_valve_init(wr_valve_t *v, int channels)
{
    v->ch = NULL;
    v->channels = 0;
    v->last_out = INT64_MIN;
    v->idle = false;
    if (channels < 1) {
        return WEIR_EINVAL;
    }
    v->ch = wr_xcalloc((size_t)channels, sizeof *v->ch);
    v->channels = channels;
    for (int c = 0; c < channels; c++) {
        v->ch[c].wm = INT64_MIN;
        v->ch[c].active = true;
        v->ch[c].aligned = true;
    }
    return 0;
}

void wr_valve_close(wr_valve_t *v)
{
    wr_free(v->ch);
    v->ch = NULL;
    v->channels = 0;
}

/* Flink's emitMinIfHigher: the output follows the min over aligned channels, forward only.
 * Unaligned channels (idle, or back from idle below the output) neither hold nor lower it. */
static int emit_min_if_higher(wr_valve_t *v)
{
    bool any = false;
    int64_t min = INT64_MAX;
    for (int c = 0; c < v->channels; c++) {
        if (v->ch[c].aligned) {
            any = true;
            if (v->ch[c].wm < min) {
                min = v->ch[c].wm;
            }
        }
    }
    if (any && min > v->last_out) {
        v->last_out = min;
        return WR_VALVE_ADVANCED;
    }
    return 0;
}

int64_t wr_valve_advance(wr_valve_t *v, int ch, int64_t wm)
{
    assert(ch >= 0 && ch < v->channels);
    wr_valve_channel_t *c = &v->ch[ch];
    if (v->idle || !c->active || wm <= c->wm) {
        return v->last_out;
    }
    c->wm = wm;
    if (!c->aligned && wm >= v->last_out) {
        c->aligned = true; /* a channel back from idle has caught up with the output */
    }
    emit_min_if_higher(v);
    return v->last_out;
}

/* FLINK-40475: when the last channel goes idle, flush the highest watermark any channel has
 * reached, whether or not the channel going idle held the output (the baseline valve flushed
 * only in that case, and could strand a watermark until some channel came back). */
static int flush_max(wr_valve_t *v)
{
    int64_t max = INT64_MIN;
    for (int c = 0; c < v->channels; c++) {
        if (v->ch[c].wm > max) {
            max = v->ch[c].wm;
        }
    }
    if (max > v->last_out) {
        v->last_out = max;
        return WR_VALVE_ADVANCED;
    }
    return 0;
}

static bool any_active(const wr_valve_t *v)
{
    for (int c = 0; c < v->channels; c++) {
        if (v->ch[c].active) {
            return true;
        }
    }
    return false;
}

int wr_valve_mark_idle(wr_valve_t *v, int ch)
{
    assert(ch >= 0 && ch < v->channels);
    wr_valve_channel_t *c = &v->ch[ch];
    if (!c->active) {
        return 0;
    }
    c->active = false;
    c->aligned = false;
    if (!any_active(v)) {
        int out = flush_max(v);
        v->idle = true;
        return out | WR_VALVE_STATUS_CHANGED;
    }
    /* Aligned channels never sit below last_out, and if any is aligned one sits at it (every
     * path that can raise the min re-derives it). So dropping a channel above last_out cannot
     * move the min; dropping the one at last_out may. */
    if (c->wm == v->last_out) {
        return emit_min_if_higher(v);
    }
    return 0;
}

int wr_valve_mark_active(wr_valve_t *v, int ch)
{
    assert(ch >= 0 && ch < v->channels);
    wr_valve_channel_t *c = &v->ch[ch];
    if (c->active) {
        return 0;
    }
    c->active = true;
    if (c->wm >= v->last_out) {
        c->aligned = true;
    }
    int out = 0;
    if (v->idle) {
        v->idle = false;
        out |= WR_VALVE_STATUS_CHANGED;
    }
    /* FLINK-40475: re-derive the min now, not at the next watermark: the returning channel may
     * be the only aligned one, above an output that stalled while it was away. */
    return out | emit_min_if_higher(v);
}

int wr_valve_add_channel(wr_valve_t *v)
{
    v->ch = wr_xreallocarray(v->ch, (size_t)v->channels + 1, sizeof *v->ch);
    v->ch[v->channels++] = (wr_valve_channel_t){.wm = INT64_MIN, .active = true, .aligned = true};
    if (v->idle) {
        v->idle = false;
        return WR_VALVE_STATUS_CHANGED;
    }
    return 0;
}

int64_t wr_valve_output(const wr_valve_t *v)
{
    return v->last_out;
}

bool wr_valve_is_idle(const wr_valve_t *v)
{
    return v->idle;
}

/* FFI wrappers (weir_ffi.h): a heap valve, double milliseconds, checked arguments. */

struct weir_valve {
    wr_valve_t v;
};

weir_valve_t *weir_valve_new(int32_t channels)
{
    if (channels < 1) {
        return NULL;
    }
    weir_valve_t *fv = wr_xmalloc(sizeof *fv);
    int rc = wr_valve_init(&fv->v, channels);
    assert(rc == 0);
    (void)rc;
    return fv;
}

void weir_valve_free(weir_valve_t *fv)
{
    if (!fv) {
        return;
    }
    wr_valve_close(&fv->v);
    wr_free(fv);
}

int32_t weir_valve_watermark(weir_valve_t *fv, int32_t channel, double wm)
{
    if (channel < 0 || channel >= fv->v.channels || isnan(wm)) {
        return WEIR_EINVAL;
    }
    int64_t before = fv->v.last_out;
    int64_t after = wr_valve_advance(&fv->v, channel, wr_ms_from_double(wm));
    return after > before ? WR_VALVE_ADVANCED : 0;
}

int32_t weir_valve_add_channel(weir_valve_t *fv)
{
    return wr_valve_add_channel(&fv->v);
}

int32_t weir_valve_status(weir_valve_t *fv, int32_t channel, int32_t idle)
{
    if (channel < 0 || channel >= fv->v.channels) {
        return WEIR_EINVAL;
    }
    if (idle) {
        return wr_valve_mark_idle(&fv->v, channel);
    }
    return wr_valve_mark_active(&fv->v, channel);
}

double weir_valve_output(const weir_valve_t *fv)
{
    return wr_ms_to_double(fv->v.last_out);
}

int32_t weir_valve_is_idle(const weir_valve_t *fv)
{
    return fv->v.idle ? 1 : 0;
}

double weir_valve_channel_watermark(const weir_valve_t *fv, int32_t channel)
{
    if (channel < 0 || channel >= fv->v.channels) {
        return -INFINITY;
    }
    return wr_ms_to_double(fv->v.ch[channel].wm);
}

int32_t weir_valve_channel_state(const weir_valve_t *fv, int32_t channel)
{
    if (channel < 0 || channel >= fv->v.channels) {
        return 0;
    }
    const wr_valve_channel_t *c = &fv->v.ch[channel];
    return (c->active ? 1 : 0) | (c->aligned ? 2 : 0);
}

int weir_valve_restore(weir_valve_t *fv, int32_t channel, double wm, int32_t state)
{
    if (channel < -1 || channel >= fv->v.channels || isnan(wm) || state < 0 || state > 3) {
        return WEIR_EINVAL;
    }
    if (channel == -1) {
        fv->v.last_out = wr_ms_from_double(wm);
        fv->v.idle = (state & 1) != 0;
        return 0;
    }
    wr_valve_channel_t *c = &fv->v.ch[channel];
    c->wm = wr_ms_from_double(wm);
    c->active = (state & 1) != 0;
    c->aligned = (state & 2) != 0;
    return 0;
}
