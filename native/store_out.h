/*
 * store_out.h - the swap store's usual swap_out call in C (store/express.py): a batch of pages
 * that are all fresh or replace copies on the device (none waits in a write buffer), written as
 * the write buffer's unit (topped up from the batch) and the batch's whole units, back to back
 * into the stream's open zone, which has room for them all; the rest waits in the buffer. The
 * same steps, in the same order and with the same result, as SwapStore.swap_out's general path
 * (store/commit.py: stream_write, _one_batch); anything else is declined with nothing changed and
 * the caller takes that path. Which units the call is written as is decided by the store's one
 * write rule, st_plan_batch (store_plan.h), which the general path calls too (store/write_rule.py).
 *
 * At a zone's end (the units do not all fit, and a fresh zone can be taken without GC: split_ok)
 * the call is two runs, as the general path's _write_buffer_and / _write_one write it: the first
 * fills the open zone (the buffer's unit, then the batch's units, the last cut at the zone's end),
 * the caller seals it and opens the next, and phase 2 writes the rest of the batch's units there.
 *
 * Three steps, so the device write can sit between them: st_out_plan (checks and plans, changes
 * nothing), st_out_stage (new handles, the buffer topped up), the device write, st_out_end (the
 * run committed, the tail buffered). st_out_call runs all three with a device's write inside, the
 * run handed over as the neutral, versioned zs_run (append_run.h) to the device's zs_run_writer:
 * the io_uring device (uring_store.c) knows the run, never this struct.
 */
#ifndef ZSWAP_STORE_OUT_H
#define ZSWAP_STORE_OUT_H

#include <stdint.h>

#include "append_run.h"

#define ST_OUT_MAX_UNITS ZS_RUN_MAX_UNITS     /* the run's units (run.lens / run.zones) */

/* Reasons st_out_plan declines (nothing changed): -1 .. -3 as st_prepare, and */
#define ST_OUT_BUFFERED  -4     /* a page of the batch waits in a write buffer */
#define ST_OUT_FULL      -5     /* the new pages do not fit (the general path raises SwapFullError) */
#define ST_OUT_GROW      -6     /* new handles would need the per-handle arrays to grow */
#define ST_OUT_NO_PLAN   -7     /* not one batch of the open zone (st_plan_batch's ST_PLAN_NO_PLAN, or no open zone) */
#define ST_OUT_UNITS     -8     /* more than ST_OUT_MAX_UNITS units (ST_PLAN_UNITS) */
#define ST_OUT_DEVICE    -9     /* the device's writer would refuse the run (its check: st_out_call) */
#define ST_OUT_ARGS     -10     /* st_plan_batch refused the struct's counts (ST_PLAN_ARGS: a bug, not a call) */

/* cffi:begin */

typedef struct {
    /* the store's arrays (the caller refreshes a pointer when its array is replaced) */
    int64_t *direct;            /* id map: id -> handle (-1: none) */
    int64_t direct_size;
    int64_t *id_of;             /* handle -> id */
    int64_t handle_cap;         /* handles every per-handle array holds */
    uint32_t *loc;              /* slot map */
    int64_t *rmap;
    int64_t *valid;
    int64_t slots_per_zone;
    uint8_t *buffer_of;
    uint8_t *in_flight;         /* all zero between calls (st_prepare's scratch) */
    const int64_t *written;     /* zone -> data pages written (the write cursor) */
    int64_t data_slots;         /* data pages per zone */
    int64_t page_size, unit, least;   /* bytes per page; pages per write unit; smallest write */
    /* the call */
    const int64_t *ids;
    const uint8_t *pages;
    int64_t n;
    int64_t *h;                 /* n handles out */
    int64_t *ids_out;           /* the run's page ids in slot order out (buffer unit + caller's units) */
    int64_t next_handle;        /* the id map's next handle (in; out after st_out_stage) */
    const int64_t *free_stack;  /* the id map's discarded handles, reused first (top: the last) */
    int64_t reusable;           /* how many it holds */
    int64_t room_pages;         /* pages the store may still take (capacity - live) */
    int64_t zone;               /* the stream's open zone */
    /* the stream's write buffer */
    int64_t *buf_ids;
    uint8_t *buf_data;
    int64_t buf_cap;
    int64_t buf_n;              /* in; out after st_out_stage and st_out_end */
    uint8_t tag;                /* buffer_of value of its pages (stream + 1) */
    int64_t split_ok;           /* a fresh zone can be taken without GC (the run may end at the zone's end) */
    int64_t phase;              /* 1: the call's first run; 2: the rest of a split call (zone: the fresh one) */
    /* the plan (st_out_plan: st_plan_batch's; its units are the run's lens / zones, in bytes) */
    int64_t fresh, new_pages;   /* ids not held; pages new to the store */
    int64_t top, b, w;          /* pages topped up, buffer unit pages, caller's pages in this run */
    int64_t at;                 /* the caller's first page in this run (phase 1: top) */
    int64_t zone_end;           /* this run is cut at the zone's end (the general path's _write_jobs) */
    int64_t w2;                 /* phase 1 of a split call: the caller's pages of phase 2 (0: none) */
    int64_t first_slot;         /* slot of the run's first page */
    int64_t nunits;
    zs_run run;                 /* the run for the device (st_out_plan: units; st_out_call: the rest) */
} st_out;

/* Check and plan the call (phase 1) or the rest of a split call (phase 2, after st_out_end of
   phase 1: the zone is the fresh one); 1 when it is the usual call, else a reason above. Changes
   nothing but the plan fields (phase 1: and h, the handles of ids held, -1 for the others). */
int st_out_plan(st_out *o);
/* After st_out_plan returned 1 in phase 1: hand the fresh ids their handles (batch order; the
   discarded ones on top of free_stack first, as st_insert), top the buffer up to its unit (buf_n
   becomes b). Returns the new handles handed out (next_handle moved by as many; the reused ones,
   min(fresh, reusable), are the caller's to pop). Phase 2: nothing. */
int64_t st_out_stage(st_out *o);
/* After st_out_stage and a device write that landed back to back from first_slot: commit the
   buffer's b pages then the caller's w from at (st_commit_run, ids_out filled), drop them from the
   buffer and buffer the tail (the caller's pages after the run), unless phase 2 follows (w2). */
void st_out_end(st_out *o);
/* The call's run with a device's write inside, in one C call: st_out_plan; the run described in
   o->run (version, buffers, expected offset); the writer's check (anything but ZS_RUN_OK: declined,
   ST_OUT_DEVICE, nothing changed); st_out_stage; the writer's append; st_out_end when the run
   landed back to back. Returns <= 0: declined (st_out_plan's reason or ST_OUT_DEVICE), nothing
   changed or sent. Else (status << 8) | units: 1 landed and committed; 2 sent, landed otherwise or
   failed (the writer's results; staged, not committed); 3 staged, nothing sent. */
int st_out_call(st_out *o, const zs_run_writer *w);
/* cffi:end */

#endif
