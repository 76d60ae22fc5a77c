/* ocssd_stripe.c - see ocssd_stripe.h */
#include "ocssd_stripe.h"

#include <string.h>

/* sectors slot s holds once the zone holds its first x sectors (ocssd_view.per_chunk) */
static inline int64_t per_chunk(int64_t x, int64_t width, int64_t unit, int64_t s)
{
    int64_t row = width * unit, rem = x % row - s * unit;
    return x / row * unit + (rem < 0 ? 0 : rem > unit ? unit : rem);
}

/* the zone sector of slot s's sector sec (the inverse of ocssd_view.stripe_position) */
static inline int64_t zone_sector(int64_t width, int64_t unit, int64_t s, int64_t sec)
{
    return ((sec / unit) * width + s) * unit + sec % unit;
}

int64_t ocs_commit_plan(int64_t width, int64_t unit, int64_t ws_min, int64_t ring, int64_t sectors,
                        int64_t elem, int64_t r0, int64_t n, const int64_t *appends, int64_t nappends,
                        const int64_t *dwp, const int64_t *chunk, const uint8_t *rows, const uint8_t *tail,
                        int64_t cap, int64_t *ppas, uint8_t *data, int64_t *counts, int64_t *dwp_new)
{
    int64_t sum = 0;
    for (int64_t k = 0; k < nappends; k++) {
        if (appends[k] < 0)
            return OCS_APPENDS;
        sum += appends[k];
    }
    if (nappends && sum != n)
        return OCS_APPENDS;
    /* committed per slot: [dwp, c_new), the tail's [dwp, h) and the new rows' [h, c_new) back to
       back, which needs dwp <= h and dwp <= c_new (always so after a commit or a bind) */
    for (int64_t s = 0; s < width; s++) {
        dwp_new[s] = per_chunk(r0 + n, width, unit, s) / ws_min * ws_min;
        if (dwp[s] > per_chunk(r0, width, unit, s) || dwp[s] > dwp_new[s])
            return OCS_STATE;
    }
    int64_t t = 0, writes = nappends ? nappends : 1, end = r0;
    for (int64_t k = 0; k < writes; k++) {
        int64_t start = end;    /* this write's sectors per slot: [its predecessor's point, its own) */
        end = k == writes - 1 ? r0 + n : end + appends[k];
        int64_t t0 = t;
        for (int64_t s = 0; s < width; s++) {
            int64_t lo = dwp[s], hi = per_chunk(end, width, unit, s) / ws_min * ws_min;
            if (k > 0) {
                int64_t p = per_chunk(start, width, unit, s) / ws_min * ws_min;
                lo = p > lo ? p : lo;
            }
            if (hi <= lo)
                continue;
            if (t + (hi - lo) > cap)
                return OCS_CAPACITY;
            int64_t h = per_chunk(r0, width, unit, s), base = chunk[s] * sectors;
            for (int64_t sec = lo; sec < hi; sec++, t++) {
                ppas[t] = base + sec;
                const uint8_t *src = sec < h ? tail + (s * ring + sec % ring) * elem
                                             : rows + (zone_sector(width, unit, s, sec) - r0) * elem;
                if (elem == 8)
                    memcpy(data + t * 8, src, 8);
                else
                    memcpy(data + t * elem, src, (size_t)elem);
            }
        }
        counts[k] = t - t0;
    }
    return t;
}

void ocs_commit_keep(int64_t width, int64_t unit, int64_t ring, int64_t elem, int64_t r0, int64_t n,
                     const uint8_t *rows, uint8_t *tail)
{
    for (int64_t s = 0; s < width; s++) {
        int64_t h = per_chunk(r0, width, unit, s), e = per_chunk(r0 + n, width, unit, s);
        int64_t lo = e - ring > h ? e - ring : h;
        for (int64_t sec = lo; sec < e; sec++)
            memcpy(tail + (s * ring + sec % ring) * elem,
                   rows + (zone_sector(width, unit, s, sec) - r0) * elem, (size_t)elem);
    }
}
