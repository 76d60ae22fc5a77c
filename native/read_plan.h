/*
 * read_plan.h - the swap store's read rule, the one implementation (store/readpath.py calls it for
 * swap-ins and GC reads; tests/store/test_readpath.py's per-slot reference is its Python twin):
 * which device requests read a set of distinct slots, and where each slot's page lands in the
 * concatenated data.
 *
 * - window 0: runs of adjacent slots within one zone become one request, split every max_pages;
 * - window W > 0: each request is the W-aligned window (from the zone's first slot) that holds
 *   requested slots, clipped at the zone's written end (the prefetch read); rp_extras then lists
 *   the rows read that nobody asked for.
 *
 * Slots and counts in pages (slot = zone * slots_per_zone + page in the zone); nothing here touches
 * the store: inputs in, plan out.
 */
#ifndef ZSWAP_READ_PLAN_H
#define ZSWAP_READ_PLAN_H

#include <stdint.h>

#define RP_ARGS   -1        /* a negative count, slots_per_zone < 1, max_pages < 1 */
#define RP_SLOT   -2        /* window > 0: a slot outside the zones, or at/past its zone's written end */

/* cffi:begin */
/* Plan reads for the n distinct slots. buf holds 8 n int64 (the caller's, untouched past them):
   [0, n) starts, [n, 2n) lengths (first nreq of each, in slot order), [2n, 3n) each input slot's
   row in the data, [3n, 4n) each input slot's request, [4n, 5n) the slots sorted, the rest
   scratch. written[z] (z < nzones): data pages written in zone z (read with a window only).
   Returns nreq, or RP_ARGS / RP_SLOT (buf then meaningless). */
int64_t rp_plan_reads(const int64_t *slots, int64_t n, int64_t slots_per_zone, const int64_t *written,
                      int64_t nzones, int64_t window, int64_t max_pages, int64_t *buf);

/* After rp_plan_reads (same n, buf, nreq) with a window: the slots its requests read that were not
   asked for, ascending, and their rows; `total - n` of each (total: the requests' pages). */
void rp_extras(int64_t n, const int64_t *buf, int64_t nreq, int64_t *extra_slots, int64_t *extra_rows);
/* cffi:end */

#endif
