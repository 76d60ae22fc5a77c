/* store_out.c - see store_out.h */
#include "store_out.h"
#include "store.h"
#include "store_plan.h"

#include <stddef.h>

/* the run st_plan_batch planned, into the struct: the run's bytes and zone per unit, its first slot */
static void take(st_out *o, const st_batch *p, const int64_t *pages)
{
    for (int64_t i = 0; i < p->nunits; i++) {
        o->run.lens[i] = pages[i] * o->page_size;
        o->run.zones[i] = o->zone;
    }
    o->nunits = p->nunits;
    o->top = p->top;
    o->at = p->at;
    o->b = p->b;
    o->w = p->w;
    o->w2 = p->w2;
    o->zone_end = p->zone_end;
    o->first_slot = o->zone * o->slots_per_zone + o->written[o->zone];
}

int st_out_plan(st_out *o)
{
    if (o->zone < 0)
        return ST_OUT_NO_PLAN;
    int64_t pages[ST_OUT_MAX_UNITS];
    st_batch p = {
        .n = o->n, .at = o->at, .buffered = o->buf_n, .room = o->data_slots - o->written[o->zone],
        .zone_pages = o->data_slots, .unit = o->unit, .least = o->least, .split_ok = o->split_ok,
        .phase = o->phase, .max_units = ST_OUT_MAX_UNITS, .units = pages,
    };
    int rc = st_plan_batch(&p);
    if (rc != ST_PLAN_OK)
        return rc;                          /* ST_OUT_NO_PLAN / ST_OUT_UNITS: the same numbers */
    if (o->phase == 2) {
        take(o, &p, pages);
        return 1;
    }
    if (p.b > o->buf_cap || o->n - p.top - p.w - p.w2 > o->buf_cap)   /* the buffer's unit; the tail left */
        return ST_OUT_NO_PLAN;
    int64_t counts[3];
    rc = st_prepare(o->ids, o->n, o->direct, o->direct_size, o->loc, o->buffer_of, o->in_flight, o->h, counts);
    if (rc)
        return rc;
    if (counts[2])
        return ST_OUT_BUFFERED;
    if (counts[1] > o->room_pages)
        return ST_OUT_FULL;
    if (o->next_handle + counts[0] - (counts[0] < o->reusable ? counts[0] : o->reusable) > o->handle_cap)
        return ST_OUT_GROW;                 /* (reused handles need no room) */
    take(o, &p, pages);
    o->fresh = counts[0];
    o->new_pages = counts[1];
    return 1;
}

int64_t st_out_stage(st_out *o)
{
    int64_t fresh = 0;
    if (o->phase == 2)
        return 0;
    if (o->fresh) {
        int64_t take = o->fresh < o->reusable ? o->fresh : o->reusable;   /* discarded handles first */
        fresh = st_insert(o->ids, o->n, o->h, o->direct, o->id_of, o->next_handle,
                          o->free_stack + o->reusable - take, take);
    }
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
    o->buf_n = st_drop_front(o->buf_ids, o->buf_data, o->buf_n, b, ps);
    o->at = at;
    if (o->phase == 1 && o->w2)             /* phase 2 writes the rest, then the tail waits */
        return;
    if (o->n > at) {                        /* the tail waits in the buffer */
        st_stage(o->buf_ids, o->buf_data, o->buf_n, o->h + at, o->pages + at * ps, o->n - at, ps,
                 o->buffer_of, o->tag);
        o->buf_n += o->n - at;
    }
}

int st_out_call(st_out *o, const zs_run_writer *w)
{
    int rc = st_out_plan(o);
    if (rc <= 0)
        return rc;
    int64_t ps = o->page_size, k = o->nunits;
    zs_run *r = &o->run;
    r->version = ZS_RUN_VERSION;
    r->nunits = (uint32_t)k;
    r->seg0 = o->b ? o->buf_data : NULL;    /* the buffer's unit (after the top-up: its first b pages) */
    r->seg0_len = o->b * ps;
    r->seg1 = o->pages + o->at * ps;        /* the caller's pages of the run */
    r->seg1_len = o->w * ps;
    r->expect = o->first_slot * ps;
    if (w->check(w->ctx, r) != ZS_RUN_OK)
        return ST_OUT_DEVICE;
    st_out_stage(o);
    int s = w->append(w->ctx, r);
    if (s == ZS_RUN_LANDED) {
        st_out_end(o);
        return (1 << 8) | (int)k;
    }
    return ((s == ZS_RUN_OTHER ? 2 : 3) << 8) | (int)k;
}
