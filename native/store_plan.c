/* store_plan.c - see store_plan.h */
#include "store_plan.h"

int64_t st_cut(int64_t n, int64_t least, int64_t room, int64_t unit, int64_t *pages, int64_t max)
{
    int64_t k = 0;
    while (n >= least && room > 0) {
        int64_t m = n < unit ? n : unit;
        if (m > room)
            m = room;
        if (k == max)
            return -1;
        pages[k++] = m;
        n -= m, room -= m;
    }
    return k;
}

/* the sum of st_cut's units (none kept) */
static int64_t fill(int64_t n, int64_t least, int64_t room, int64_t unit)
{
    int64_t w = 0;
    while (n >= least && room > 0) {
        int64_t m = n < unit ? n : unit;
        if (m > room)
            m = room;
        w += m, n -= m, room -= m;
    }
    return w;
}

/* the run's units: the buffer's b pages, then the call's w cut into write units */
static int units(st_batch *p)
{
    int64_t k = 0;
    if (p->b)
        p->units[k++] = p->b;
    int64_t c = st_cut(p->w, 1, p->w, p->unit, p->units + k, p->max_units - k);
    if (c < 0)
        return ST_PLAN_UNITS;
    p->nunits = k + c;
    return ST_PLAN_OK;
}

int st_plan_batch(st_batch *p)
{
    int64_t n = p->n, r = p->buffered, unit = p->unit, least = p->least;
    if (n < 0 || r < 0 || p->room < 0 || p->zone_pages < 0 || least < 1 || least > unit || p->max_units < 1
        || (p->phase != 1 && p->phase != 2) || (p->phase == 2 && (p->at < 0 || p->at > n)))
        return ST_PLAN_ARGS;
    p->top = p->b = p->w2 = p->zone_end = p->nunits = 0;
    if (p->phase == 2) {                    /* the rest: whole units, and a last one of >= least pages */
        p->w = fill(n - p->at, least, n, unit);
        if (p->w <= 0 || p->w > p->room)
            return ST_PLAN_NO_PLAN;
        return units(p);
    }
    /* a call that fits the buffer only gathers there; a buffer past its unit is flushed first */
    if (n <= 0 || r + n < unit || r > unit)
        return ST_PLAN_NO_PLAN;
    int64_t top = (r > 0 && r < least) ? unit - r : 0;
    int64_t rest = n - top, b = r + top, w2 = 0, zone_end = 0;
    if (b && rest < least)
        return ST_PLAN_NO_PLAN;
    int64_t w = fill(rest, least, rest, unit);
    if (b + w > p->room) {
        /* the zone's end: the buffer's unit and the call's units fill the zone (cut at its end),
           the seal, a fresh zone, the rest there */
        if (!p->split_ok || b > p->room)
            return ST_PLAN_NO_PLAN;
        w = fill(rest, least, p->room - b, unit);
        if (b + w != p->room)
            return ST_PLAN_NO_PLAN;
        w2 = fill(rest - w, least, rest - w, unit);
        if (w2 > p->zone_pages)
            return ST_PLAN_NO_PLAN;
        if ((w2 + unit - 1) / unit > p->max_units)
            return ST_PLAN_UNITS;
        zone_end = 1;
    } else if (!b && w <= unit) {
        return ST_PLAN_NO_PLAN;
    }
    p->at = p->top = top;
    p->b = b;
    p->w = w;
    p->w2 = w2;
    p->zone_end = zone_end;
    return units(p);
}
