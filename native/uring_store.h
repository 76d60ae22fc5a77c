/*
 * uring_store.h - the io_uring device's writer of append runs (append_run.h): a run a caller
 * describes (the store's usual swap_out call, store_out.c) appended through the uring-cmd ring
 * (ur_append_run) inside the caller's own C call: in a TCG guest every Python step costs tens of
 * microseconds, more than the bookkeeping itself. The device knows the run, not the caller.
 */
#ifndef ZSWAP_URING_STORE_H
#define ZSWAP_URING_STORE_H
#include <stdint.h>

#include "append_run.h"

/* cffi:begin */
/* The device's side of a zs_run_writer (its ctx): the ring, the namespace, and where the results go. */
typedef struct {
    ur_engine *e;
    int ngfd;
    uint32_t nsid, lba_size;
    uint64_t zone_lbas;
    uint32_t nzones, qd;
    int64_t max_len;            /* the device's largest append, bytes */
    int32_t *res;               /* per unit, as ur_zone_append (ZS_RUN_OTHER) */
    uint64_t *alba;
} ur_run_ctx;

/* ZS_RUN_OK, or what ur_append_run would refuse: ZS_RUN_BAD_VERSION (another version),
   ZS_RUN_CANNOT (more than UR_RUN_MAX units, a zone out of range, a buffer not dword aligned, a
   length longer than max_len or not whole blocks, expect not on a block). Sends nothing. */
int ur_run_check(void *ctx, const zs_run *run);
/* ur_append_run of the run: ZS_RUN_LANDED, ZS_RUN_OTHER (res, alba filled) or ZS_RUN_REFUSED. */
int ur_run_append(void *ctx, const zs_run *run);
/* cffi:end */
#endif
