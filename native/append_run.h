/*
 * append_run.h - a run of zone appends, described for any device (no store, no ring): what a
 * caller fills and a device reads, so that neither knows the other's structs. The store fills it
 * for its usual swap_out call (store_out.c: st_out_call), the io_uring device appends it
 * (uring_store.c); the emulated devices of the tests take it through cffi callbacks.
 *
 * The units are cut in order from up to two buffers (seg0 then seg1; an empty one is skipped), each
 * unit `lens[i]` bytes into zone `zones[i]`; the run is "back to back" when unit i lands at
 * `expect` plus the lengths before it. `version` is checked at the boundary: a device refuses a run
 * of another version (ZS_RUN_BAD_VERSION, nothing sent), so a change of this layout must bump it.
 */
#ifndef ZSWAP_APPEND_RUN_H
#define ZSWAP_APPEND_RUN_H

#include <stdint.h>

#define ZS_RUN_VERSION      1
#define ZS_RUN_MAX_UNITS   64

/* a writer's results */
#define ZS_RUN_OK           0   /* check: the device can take the run */
#define ZS_RUN_LANDED       1   /* append: every unit landed back to back from expect */
#define ZS_RUN_OTHER        2   /* append: sent, landed otherwise or failed (the device's results say how) */
#define ZS_RUN_REFUSED      3   /* append: nothing sent (the queue refused the batch) */
#define ZS_RUN_CANNOT      -9   /* check: the device cannot take this run (nothing done) */
#define ZS_RUN_BAD_VERSION -11  /* check: a run of another version (nothing done) */

/* cffi:begin */
typedef struct {
    uint32_t version;           /* ZS_RUN_VERSION */
    uint32_t nunits;            /* <= ZS_RUN_MAX_UNITS (64) */
    const uint8_t *seg0;        /* the bytes the units are cut from, in order */
    int64_t seg0_len;
    const uint8_t *seg1;
    int64_t seg1_len;
    int64_t expect;             /* byte offset the first unit lands at when the run is back to back */
    int64_t lens[64];           /* bytes per unit */
    int64_t zones[64];          /* zone per unit */
} zs_run;

/* A device's writer of runs: `check` (nothing done: ZS_RUN_OK, ZS_RUN_CANNOT or ZS_RUN_BAD_VERSION)
   and `append` (ZS_RUN_LANDED, ZS_RUN_OTHER or ZS_RUN_REFUSED); `ctx` is the device's, passed back. */
typedef struct {
    int (*check)(void *ctx, const zs_run *run);
    int (*append)(void *ctx, const zs_run *run);
    void *ctx;
} zs_run_writer;
/* cffi:end */

#endif
