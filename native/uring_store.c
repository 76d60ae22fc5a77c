/* uring_store.c - see uring_store.h */
#include "uring.h"
#include "uring_store.h"

int ur_run_check(void *ctx, const zs_run *run)
{
    const ur_run_ctx *c = ctx;
    if (run->version != ZS_RUN_VERSION)
        return ZS_RUN_BAD_VERSION;
    uint32_t k = run->nunits;
    if (!c->lba_size || k > UR_RUN_MAX || k > ZS_RUN_MAX_UNITS || (uintptr_t)run->seg1 % 4
        || (run->seg0_len && (uintptr_t)run->seg0 % 4) || run->expect % c->lba_size)
        return ZS_RUN_CANNOT;
    for (uint32_t i = 0; i < k; i++)
        if (run->lens[i] > c->max_len || run->lens[i] % c->lba_size || (uint64_t)run->zones[i] >= c->nzones)
            return ZS_RUN_CANNOT;
    return ZS_RUN_OK;
}

int ur_run_append(void *ctx, const zs_run *run)
{
    const ur_run_ctx *c = ctx;
    int r = ur_append_run(c->e, c->ngfd, c->nsid, c->lba_size, c->zone_lbas, run->seg0, run->seg0_len, run->seg1,
                          run->seg1_len, run->lens, c->max_len, run->zones, c->nzones, run->nunits, c->qd,
                          (uint64_t)run->expect / c->lba_size, c->res, c->alba);
    if (r < 0)
        return ZS_RUN_REFUSED;
    return r == 0 ? ZS_RUN_OTHER : ZS_RUN_LANDED;
}
