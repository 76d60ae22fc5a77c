/*
 * ocssd_stripe.h - the Open-Channel zoned view's commit of appended sectors to its chunk stripe
 * (devices/ocssd_view.py: OcssdZonedView._commit and _write_chunks' order) in one pass instead of
 * a few dozen numpy calls per append.
 *
 * A zone is a stripe of `width` chunks; zone sector r goes to slot (r / unit) % width, sector
 * (r / unit / width) * unit + r % unit of that chunk. Per slot the device holds sectors
 * [0, dwp) and the view's host copy (`tail`, `ring` rows per slot, row r at r % ring) the ones
 * after, up to what the zone holds (h = per_chunk(r0)). Appending n rows from zone sector r0
 * commits, per slot, the sectors [dwp, c_new) with c_new = per_chunk(r0 + n) rounded down to
 * ws_min: those below h from the tail, the rest from the new rows. With `nappends` appends back
 * to back (lengths `appends`, adding up to n) the sectors are split into that many device writes,
 * a sector belonging to the first append whose own commit point passes it, as committing the
 * appends one by one would. Output order: write, then slot, then sector.
 *
 * Rows are `elem` bytes each (8: a sector's first word on a payload-free device; 4096: a sector).
 */
#ifndef ZSWAP_OCSSD_STRIPE_H
#define ZSWAP_OCSSD_STRIPE_H

#include <stdint.h>

/* Reasons ocs_commit_plan refuses (nothing written): never for a state the view makes, so the view
   raises RuntimeError (its numpy oracle: tests/support/ocssd_oracle.py). */
#define OCS_CAPACITY  -1    /* more sectors than `cap` */
#define OCS_STATE     -2    /* a slot's dwp above what the zone holds or commits (not a state _commit makes) */
#define OCS_APPENDS   -3    /* a negative append length, or lengths not adding up to n */

/* cffi:begin */
/* Plan zone's commit and gather its data: ppas[t] (chunk[slot] * sectors + sector) and data row
   t (elem bytes) for the t sectors returned, counts[k] of them per write (nappends writes, or
   counts[0] = all when nappends == 0), dwp_new[slot] = c_new. Returns t, or a negative OCS_*
   (the outputs then hold garbage; the view's state is never touched here). dwp, chunk, dwp_new: width entries; rows: n
   rows; tail: width * ring rows. */
int64_t ocs_commit_plan(int64_t width, int64_t unit, int64_t ws_min, int64_t ring, int64_t sectors,
                        int64_t elem, int64_t r0, int64_t n, const int64_t *appends, int64_t nappends,
                        const int64_t *dwp, const int64_t *chunk, const uint8_t *rows, const uint8_t *tail,
                        int64_t cap, int64_t *ppas, uint8_t *data, int64_t *counts, int64_t *dwp_new);

/* After the commit's device write: keep the last `ring` sectors of each slot of the n new rows
   in the tail (row of sector s at s % ring). */
void ocs_commit_keep(int64_t width, int64_t unit, int64_t ring, int64_t elem, int64_t r0, int64_t n,
                     const uint8_t *rows, uint8_t *tail);
/* cffi:end */

#endif
