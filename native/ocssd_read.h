/*
 * ocssd_read.h - the Open-Channel zoned view's read of zone ranges (devices/ocssd_read.py:
 * StripeReader.read_batch) as one pass over the requests' sectors instead of a dozen
 * numpy calls (ranges, divmods, unique, the run count) per batch.
 *
 * Zone sector r of zone z lies in slot (r / unit) % width, sector (r / unit / width) * unit +
 * r % unit of chunk chunk[z][slot]. A sector is written when r < hw[z] and the zone is bound;
 * a written sector is on the device when its chunk is full (dwp == sectors) or it is more than
 * mw_cunits below the slot's committed point dwp, else it is held in the view's host copy of an
 * open zone; the rest read as zeros.
 */
#ifndef ZSWAP_OCSSD_READ_H
#define ZSWAP_OCSSD_READ_H

#include <stdint.h>

/* cffi:begin */
/* Plan the read of nreq requests (byte offsets and lengths, 4096-aligned and inside the view: the
   caller checked) of zones of zs sectors. chunk, dwp: nr_zones x width; hw: nr_zones.
   Out, for the d on-device sectors in request order: ppas[d], pos[d] (the sector's index in the
   batch), req[d] (its request); for the h held ones: hpos/hzone/hslot/hsec[h]; stats[0] = h,
   stats[1] = runs of the device sectors (a run: consecutive ppas of one request, as
   tests/support/ocssd_oracle.py run_qd counts them), stats[2] = requests with a device sector, stats[3] = all
   sectors. Every output array holds `cap` entries. Returns d; -1 when there are more than cap
   sectors (stats[3] then says how many: the caller tries again with that room); -2 for a request
   of no sector or a zone beyond nr_zones (never for ranges read_batch checked: the caller raises
   RuntimeError). */
int64_t ocr_plan(int64_t nreq, const int64_t *offsets, const int64_t *lengths, int64_t zs, int64_t width,
                 int64_t unit, int64_t sectors, int64_t mw_cunits, int64_t nr_zones, const int64_t *chunk,
                 const int64_t *dwp, const int64_t *hw, int64_t cap, int64_t *ppas, int64_t *pos, int64_t *req,
                 int64_t *hpos, int64_t *hzone, int64_t *hslot, int64_t *hsec, int64_t *stats);

/* Each request's completion: the latest of its device sectors' done[] (d of them, request req[])
   and `now` when it has a sector not read from the device (held or unwritten). out: nreq, tmp:
   nreq int64 of scratch. */
void ocr_done(int64_t nreq, const int64_t *lengths, int64_t d, const int64_t *req, const double *done,
              double now, double *out, int64_t *tmp);
/* cffi:end */

#endif
