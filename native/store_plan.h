/*
 * store_plan.h - the swap store's write rule, the one implementation (store/write_rule.py calls it
 * for the general path, store_out.c for the express path; tests/support/write_rule_oracle.py is its
 * pure-Python twin):
 *
 * - st_cut: how pages go into a zone: whole write units while at least `least` pages remain and
 *   the zone has room, the last one cut at the zone's end;
 * - st_plan_batch: whether a user stream's swap_out call is "one batch" (the write buffer's unit,
 *   topped up from the call when shorter than `least`, then the call's units, back to back into
 *   the stream's open zone) and its units: the same units, in the same order, as the general
 *   path's steps (top up, the buffer's unit with the call's units, the rest unit by unit). At the
 *   zone's end (split_ok: a fresh zone can be taken without GC) the call is two runs: phase 1
 *   fills the zone, phase 2 writes the rest in the fresh one.
 *
 * Pages everywhere (no bytes); nothing here touches the store: inputs in, plan out.
 */
#ifndef ZSWAP_STORE_PLAN_H
#define ZSWAP_STORE_PLAN_H

#include <stdint.h>

/* st_plan_batch's results (the st_out reasons, store_out.h, share the numbers) */
#define ST_PLAN_OK        1
#define ST_PLAN_NO_PLAN  -7     /* not one batch (a small call, the buffer too full, the zone's end, ...) */
#define ST_PLAN_UNITS    -8     /* a run of more than max_units units */
#define ST_PLAN_ARGS    -10     /* bad arguments (a negative count, not 1 <= least <= unit, max_units < 1) */

/* cffi:begin */
typedef struct {
    /* in */
    int64_t n;                  /* the call's pages */
    int64_t at;                 /* phase 2: the call's pages phase 1 wrote (its first page here) */
    int64_t buffered;           /* pages waiting in the stream's write buffer */
    int64_t room;               /* pages the stream's open zone has room for */
    int64_t zone_pages;         /* data pages of a fresh zone */
    int64_t unit, least;        /* pages per write unit; the smallest write */
    int64_t split_ok;           /* the run may end at the zone's end (a fresh zone can be taken without GC) */
    int64_t phase;              /* 1: the call; 2: the rest of a split call, into the fresh zone */
    int64_t max_units;          /* units the caller's `units` array holds */
    int64_t *units;             /* out: pages per unit (the buffer's b first, when b), nunits of them */
    /* out */
    int64_t top;                /* the call's pages that top the buffer up (phase 1) */
    int64_t b;                  /* the buffer's pages in the run (0: none) */
    int64_t w;                  /* the call's pages in the run, from `at` (phase 1: at = top) */
    int64_t w2;                 /* phase 1 of a split call: the call's pages phase 2 writes (0: no split) */
    int64_t zone_end;           /* the run fills the zone (the general path's _write_jobs then seals it) */
    int64_t nunits;
} st_batch;

/* Pages per unit of n pages into a zone with `room` pages (units of `unit` pages while at least
   `least` remain and room is left), into pages[0 ..); returns the count, or -1 when more than max. */
int64_t st_cut(int64_t n, int64_t least, int64_t room, int64_t unit, int64_t *pages, int64_t max);

/* Plan phase 1 (the call: `at` ignored, set to top) or phase 2 (the rest from `at`): ST_PLAN_OK and
   the out fields, or a reason above (the out fields then meaningless). Changes nothing else. */
int st_plan_batch(st_batch *p);
/* cffi:end */

#endif
