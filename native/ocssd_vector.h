/*
 * ocssd_vector.h - the emulated Open-Channel device's checks of a vectored write and its requests
 * to the timing model (devices/ocssd.py: EmulatedOcssdDevice.write_vectors), in one pass over the
 * vector instead of a sort, a unique and a dozen numpy calls per write.
 *
 * The one statement of the chunk rules (tests/support/ocssd_oracle.py is their numpy oracle). A write is
 * good when each ppa is inside the device; no chunk is OFFLINE or CLOSED; per chunk, its sectors
 * in vector order run on from its write pointer; per chunk a multiple of ws_min sectors, and so
 * per chunk and write when there are several writes; the writes' counts are not negative and add
 * up to the vector. A refused one returns the first rule broken, in that order, as an OCV_* code
 * with err[] naming the offender: the device words the error from them.
 *
 * And of a vectored read (EmulatedOcssdDevice.read_timed): each ppa inside the device, no chunk
 * OFFLINE, each sector readable (its chunk CLOSED, or the sector more than mw_cunits below the
 * write pointer); refused the same way.
 */
#ifndef ZSWAP_OCSSD_VECTOR_H
#define ZSWAP_OCSSD_VECTOR_H

#include <stdint.h>

/* cffi:begin */
/* Why a write or read is refused (err[] as named). */
enum {
    OCV_OUTSIDE = -1,       /* err[0]: the first ppa outside the device */
    OCV_OFFLINE = -2,       /* err[0]: the first ppa on an OFFLINE chunk */
    OCV_CLOSED = -3,        /* err[0]: the first ppa on a CLOSED chunk (writes) */
    OCV_ORDER = -4,         /* err[0]: the first ppa off its chunk's next sector, err[1] that sector */
    OCV_WS_MIN = -5,        /* err[0]: the first ppa of the lowest chunk given a count off ws_min, err[1] the count */
    OCV_COUNTS = -6,        /* counts negative or not adding up to the vector */
    OCV_WRITE_WS_MIN = -7,  /* err[0]: the write, err[1] its lowest chunk with a count off ws_min, err[2] the count */
    OCV_UNREADABLE = -8     /* err[0]: the first ppa not yet readable (reads) */
};

/* Check the vector ppas[0..n) (n > 0) written as nwrites writes of counts[w] sectors (nwrites < 0:
   one write of all, counts unused; nwrites == 0: no counts, which cannot split the vector). table: the chunk log, 3 int64 per chunk (state, write pointer, wear); states
   `closed` and `offline` refuse writes. scratch: one int64 per chunk, all -1 (left so).
   Out: uniq[0..*nuniq) the chunks written (first-seen order) and per[] their sectors; per write
   the model's requests: maximal runs of consecutive ppas in one chunk, also cut where a sector
   is a multiple of ws_opt in its chunk: run_first[] / run_len[] (at most n), runs[w] of them for
   write w. tmp: n int64 of scratch. Returns the number of runs, or an OCV_* code when the write
   breaks a rule (err[0..3) then names the offender, the other outputs garbage; scratch all -1
   again either way). */
int64_t ocv_check(int64_t n, const int64_t *ppas, int64_t nwrites, const int64_t *counts,
                  int64_t nr_chunks, int64_t sectors, int64_t ws_min, int64_t ws_opt,
                  const int64_t *table, int64_t closed, int64_t offline, int64_t *scratch,
                  int64_t *uniq, int64_t *per, int64_t *nuniq,
                  int64_t *run_first, int64_t *run_len, int64_t *runs, int64_t *tmp, int64_t *err);

/* After the write: per chunk written, its write pointer on by per[i] sectors, its state `closed`
   at the chunk's end, else `open`. */
void ocv_apply(int64_t nuniq, const int64_t *uniq, const int64_t *per, int64_t *table, int64_t sectors,
               int64_t open, int64_t closed);

/* Check the read of ppas[0..n) (n > 0) against the chunk log (as ocv_check) and make the model's
   requests: maximal runs of consecutive ppas in one chunk, run_first[] / run_len[] (at most n).
   Returns the number of runs, or an OCV_* code when the read breaks a rule (err[0] then names
   the offender, the other outputs garbage). */
int64_t ocv_read_check(int64_t n, const int64_t *ppas, int64_t nr_chunks, int64_t sectors, int64_t mw_cunits,
                       const int64_t *table, int64_t closed, int64_t offline, int64_t *run_first, int64_t *run_len,
                       int64_t *err);
/* cffi:end */

#endif
