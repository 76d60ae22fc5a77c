/* store_out.c - see store_out.h */
#include "store_out.h"
#include "store.h"

#include <string.h>

/* the lengths of w pages cut into write units, the last one shorter (into lens from k) */
static int64_t cut(st_out *o, int64_t k, int64_t w)
{
    for (int64_t m = w; m > 0; m -= o->unit) {
        if (k == ST_OUT_MAX_UNITS)
            return -1;
        o->lens[k++] = (m < o->unit ? m : o->unit) * o->page_size;
    }
    return k;
}

/* the caller's pages the general path writes of `rest` into a zone with room for them all:
   whole units, and a last one of at least `least` pages */
static int64_t whole(const st_out *o, int64_t rest)
{
    int64_t tail = rest % o->unit;
    return tail < o->least ? rest - tail : rest;
}

static int plan_rest(st_out *o)
{
    int64_t room = o->data_slots - o->written[o->zone];
    o->top = o->b = o->zone_end = o->w2 = 0;
    o->w = whole(o, o->n - o->at);
    if (o->w <= 0 || o->w > room)
        return ST_OUT_NO_PLAN;
    int64_t k = cut(o, 0, o->w);
    if (k < 0)
        return ST_OUT_UNITS;
    for (int64_t i = 0; i < k; i++)
        o->zones[i] = o->zone;
    o->nunits = k;
    o->first_slot = o->zone * o->slots_per_zone + o->written[o->zone];
    return 1;
}

int st_out_plan(st_out *o)
{
    if (o->phase == 2)
        return plan_rest(o);
    int64_t n = o->n, r = o->buf_n, unit = o->unit, least = o->least;
    /* _stream_write: a call that fits the buffer only gathers there; _one_batch_plan below */
    if (n <= 0 || r + n < unit || r > unit || o->zone < 0)
        return ST_OUT_NO_PLAN;
    int64_t room = o->data_slots - o->written[o->zone];
    int64_t top = (r > 0 && r < least) ? unit - r : 0;
    int64_t rest = n - top;
    int64_t w = whole(o, rest);
    int64_t b = r + top, w2 = 0, zone_end = 0;
    if (b && rest < least)
        return ST_OUT_NO_PLAN;
    if (b + w > room) {
        /* the zone's end: _write_buffer_and / _write_one fill the zone (units cut at its end), the
           seal, a fresh zone, _write_one of the rest there */
        if (!o->split_ok || b > room)
            return ST_OUT_NO_PLAN;
        int64_t left = room - b, rem = rest;
        w = 0;
        while (rem >= least && left > 0) {
            int64_t m = rem < unit ? rem : unit;
            if (m > left)
                m = left;
            w += m, rem -= m, left -= m;
        }
        if (left)
            return ST_OUT_NO_PLAN;
        w2 = whole(o, rem);
        if (w2 > o->data_slots)
            return ST_OUT_NO_PLAN;
        zone_end = 1;
    } else if (!b && w <= unit) {
        return ST_OUT_NO_PLAN;
    }
    int64_t k = 0;
    if (b)
        o->lens[k++] = b * o->page_size;
    k = cut(o, k, w);
    if (k < 0 || (w2 && (w2 + unit - 1) / unit > ST_OUT_MAX_UNITS))
        return ST_OUT_UNITS;
    if (b > o->buf_cap || n - top - w - w2 > o->buf_cap)   /* the buffer's unit; the tail left */
        return ST_OUT_NO_PLAN;
    int64_t counts[3];
    int rc = st_prepare(o->ids, n, o->direct, o->direct_size, o->loc, o->buffer_of, o->in_flight, o->h, counts);
    if (rc)
        return rc;
    if (counts[2])
        return ST_OUT_BUFFERED;
    if (counts[1] > o->room_pages)
        return ST_OUT_FULL;
    if (o->next_handle + counts[0] > o->handle_cap)
        return ST_OUT_GROW;
    for (int64_t i = 0; i < k; i++)
        o->zones[i] = o->zone;
    o->fresh = counts[0];
    o->new_pages = counts[1];
    o->top = o->at = top;
    o->b = b;
    o->w = w;
    o->w2 = w2;
    o->zone_end = zone_end;
    o->nunits = k;
    o->first_slot = o->zone * o->slots_per_zone + o->written[o->zone];
    return 1;
}

int64_t st_out_stage(st_out *o)
{
    int64_t fresh = 0;
    if (o->phase == 2)
        return 0;
    if (o->fresh)
        fresh = st_insert(o->ids, o->n, o->h, o->direct, o->id_of, o->next_handle);
    o->next_handle += fresh;
    if (o->top) {
        st_stage(o->buf_ids, o->buf_data, o->buf_n, o->h, o->pages, o->top, o->page_size, o->buffer_of, o->tag);
        o->buf_n += o->top;
    }
    return fresh;
}

void st_out_end(st_out *o)
{
    int64_t ps = o->page_size, b = o->b, at = o->at + o->w;
    st_commit_run(o->loc, o->rmap, o->valid, o->slots_per_zone, o->buf_ids, b, o->h + o->at, o->w,
                  o->first_slot, o->in_flight, o->buffer_of, o->id_of, o->ids_out);
    int64_t left = o->buf_n - b;            /* WriteBuffer.drop_front(b) */
    if (left > 0) {
        memmove(o->buf_ids, o->buf_ids + b, (size_t)left * sizeof *o->buf_ids);
        memmove(o->buf_data, o->buf_data + b * ps, (size_t)(left * ps));
    }
    o->buf_n = left;
    o->at = at;
    if (o->phase == 1 && o->w2)             /* phase 2 writes the rest, then the tail waits */
        return;
    if (o->n > at) {                        /* the tail waits in the buffer */
        st_stage(o->buf_ids, o->buf_data, o->buf_n, o->h + at, o->pages + at * ps, o->n - at, ps,
                 o->buffer_of, o->tag);
        o->buf_n += o->n - at;
    }
}
