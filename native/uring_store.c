/* uring_store.c - see uring_store.h */
#include "uring.h"
#include "store_out.h"
#include "uring_store.h"

int ur_store_out(ur_engine *e, int ngfd, uint32_t nsid, uint32_t lba_size, uint64_t zone_lbas, uint32_t nzones,
                 uint32_t qd, int64_t max_len, void *out, int64_t *lens_out, int64_t *zones_out, int32_t *res,
                 uint64_t *alba)
{
    st_out *o = out;
    int rc = st_out_plan(o);
    if (rc <= 0)
        return rc;
    int64_t ps = o->page_size, k = o->nunits;
    const uint8_t *seg0 = o->b ? o->buf_data : NULL, *seg1 = o->pages + o->at * ps;
    /* what ur_append_run would refuse after the buffer was topped up: decline before it */
    if (!lba_size || k > UR_RUN_MAX || (uint64_t)o->zone >= nzones || (uintptr_t)seg1 % 4
        || (seg0 && (uintptr_t)seg0 % 4) || (o->first_slot * ps) % lba_size)
        return ST_OUT_DEVICE;
    for (int64_t i = 0; i < k; i++)
        if (o->lens[i] > max_len || o->lens[i] % lba_size)
            return ST_OUT_DEVICE;
    st_out_stage(o);
    for (int64_t i = 0; i < k; i++)
        lens_out[i] = o->lens[i], zones_out[i] = o->zones[i];
    int r = ur_append_run(e, ngfd, nsid, lba_size, zone_lbas, seg0, o->b * ps, seg1, o->w * ps, o->lens, max_len,
                          o->zones, nzones, (uint32_t)k, qd, (uint64_t)(o->first_slot * ps / lba_size), res, alba);
    if (r < 0)
        return (3 << 8) | (int)k;
    if (r == 0)
        return (2 << 8) | (int)k;
    st_out_end(o);
    return (1 << 8) | (int)k;
}
