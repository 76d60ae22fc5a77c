/* store_out.c - see store_out.h */
#include "store_out.h"
#include "store.h"

#include <string.h>

int st_out_plan(st_out *o)
{
    int64_t n = o->n, r = o->buf_n, unit = o->unit, least = o->least;
    /* _stream_write: a call that fits the buffer only gathers there; _one_batch_plan below */
    if (n <= 0 || r + n < unit || r > unit || o->zone < 0)
        return ST_OUT_NO_PLAN;
    int64_t room = o->data_slots - o->written[o->zone];
    int64_t top = (r > 0 && r < least) ? unit - r : 0;
    int64_t rest = n - top;
    int64_t tail = rest % unit;
    int64_t w = tail < least ? rest - tail : rest;   /* whole units, and a last one of >= least pages */
    int64_t b = r + top;
    if ((b && rest < least) || (!b && w <= unit) || b + w > room)
        return ST_OUT_NO_PLAN;
    int64_t k = 0;
    if (b)
        o->lens[k++] = b * o->page_size;
    for (int64_t m = w; m > 0; m -= unit) {
        if (k == ST_OUT_MAX_UNITS)
            return ST_OUT_UNITS;
        o->lens[k++] = (m < unit ? m : unit) * o->page_size;
    }
    if (b > o->buf_cap || n - top - w > o->buf_cap)
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
    o->top = top;
    o->b = b;
    o->w = w;
    o->nunits = k;
    o->first_slot = o->zone * o->slots_per_zone + o->written[o->zone];
    return 1;
}

int64_t st_out_stage(st_out *o)
{
    int64_t fresh = 0;
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
    int64_t ps = o->page_size, b = o->b, at = o->top + o->w;
    st_commit_run(o->loc, o->rmap, o->valid, o->slots_per_zone, o->buf_ids, b, o->h + o->top, o->w,
                  o->first_slot, o->in_flight, o->buffer_of, o->id_of, o->ids_out);
    int64_t left = o->buf_n - b;            /* WriteBuffer.drop_front(b) */
    if (left > 0) {
        memmove(o->buf_ids, o->buf_ids + b, (size_t)left * sizeof *o->buf_ids);
        memmove(o->buf_data, o->buf_data + b * ps, (size_t)(left * ps));
    }
    o->buf_n = left;
    if (o->n > at) {                        /* the tail waits in the buffer */
        st_stage(o->buf_ids, o->buf_data, o->buf_n, o->h + at, o->pages + at * ps, o->n - at, ps,
                 o->buffer_of, o->tag);
        o->buf_n += o->n - at;
    }
}
