/*
 * ocssd_vector.h - the emulated Open-Channel device's checks of a vectored write and its requests
 * to the timing model (devices/ocssd.py: EmulatedOcssdDevice.write_vectors), in one pass over the
 * vector instead of a sort, a unique and a dozen numpy calls per write.
 *
 * Only says whether the write is good: on "no" the device runs its numpy checks, which raise the
 * error with its message (so they stay the one statement of the rules and of the messages). Good
 * means every rule those checks apply holds: each ppa inside the device; no chunk OFFLINE or
 * CLOSED; per chunk, its sectors in vector order run on from its write pointer; per chunk a
 * multiple of ws_min sectors, and so per chunk and write when there are several writes; the
 * writes' counts not negative and adding up to the vector.
 *
 * And of a vectored read (EmulatedOcssdDevice.read_timed): each ppa inside the device, no chunk
 * OFFLINE, each sector readable (its chunk CLOSED, or the sector more than mw_cunits below the
 * write pointer); the same "no" means the numpy checks explain.
 */
#ifndef ZSWAP_OCSSD_VECTOR_H
#define ZSWAP_OCSSD_VECTOR_H

#include <stdint.h>

/* cffi:begin */
/* Check the vector ppas[0..n) written as nwrites writes of counts[w] sectors (nwrites == 0: one
   write of all). table: the chunk log, 3 int64 per chunk (state, write pointer, wear); states
   `closed` and `offline` refuse writes. scratch: one int64 per chunk, all -1 (left so).
   Out: uniq[0..*nuniq) the chunks written (first-seen order) and per[] their sectors; per write
   the model's requests: maximal runs of consecutive ppas in one chunk, also cut where a sector
   is a multiple of ws_opt in its chunk: run_first[] / run_len[] (at most n), runs[w] of them for
   write w. tmp: n int64 of scratch. Returns the number of runs, or -1 when the write breaks a
   rule (the outputs then garbage, scratch all -1 again). */
int64_t ocv_check(int64_t n, const int64_t *ppas, int64_t nwrites, const int64_t *counts,
                  int64_t nr_chunks, int64_t sectors, int64_t ws_min, int64_t ws_opt,
                  const int64_t *table, int64_t closed, int64_t offline, int64_t *scratch,
                  int64_t *uniq, int64_t *per, int64_t *nuniq,
                  int64_t *run_first, int64_t *run_len, int64_t *runs, int64_t *tmp);

/* After the write: per chunk written, its write pointer on by per[i] sectors, its state `closed`
   at the chunk's end, else `open`. */
void ocv_apply(int64_t nuniq, const int64_t *uniq, const int64_t *per, int64_t *table, int64_t sectors,
               int64_t open, int64_t closed);

/* Check the read of ppas[0..n) (n > 0) against the chunk log (as ocv_check) and make the model's
   requests: maximal runs of consecutive ppas in one chunk, run_first[] / run_len[] (at most n).
   Returns the number of runs, or -1 when the read breaks a rule (outputs then garbage). */
int64_t ocv_read_check(int64_t n, const int64_t *ppas, int64_t nr_chunks, int64_t sectors, int64_t mw_cunits,
                       const int64_t *table, int64_t closed, int64_t offline, int64_t *run_first, int64_t *run_len);
/* cffi:end */

#endif
