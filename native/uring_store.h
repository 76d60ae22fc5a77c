/*
 * uring_store.h - the swap store's usual swap_out call (store_out.h) with its device write on the
 * io_uring passthrough path (ur_append_run) in ONE call: in a TCG guest every Python step costs
 * tens of microseconds, more than the bookkeeping itself.
 */
#ifndef ZSWAP_URING_STORE_H
#define ZSWAP_URING_STORE_H
#include <stdint.h>

/* cffi:begin */
/* `out` is the store's st_out (store_out.h; void * here: the struct belongs to the other cffi module).
   st_out_plan; if the units would not pass ur_append_run's checks (longer than max_len, not whole
   blocks, a zone out of range, a buffer not dword aligned) declines with ST_OUT_DEVICE (-9);
   st_out_stage; the units' lengths and zones copied to lens_out / zones_out; ur_append_run from the
   buffer's unit and the caller's pages, expecting them back to back from first_slot; if they landed
   so, st_out_end.
   Returns <= 0: declined (st_out_plan's reason), nothing changed or sent. Else (status << 8) | units:
   status 1 landed and committed; 2 sent, landed otherwise or failed (res, alba as ur_zone_append;
   staged, not committed); 3 staged but the ring refused the batch with nothing sent. */
int ur_store_out(ur_engine *e, int ngfd, uint32_t nsid, uint32_t lba_size, uint64_t zone_lbas, uint32_t nzones,
                 uint32_t qd, int64_t max_len, void *out, int64_t *lens_out, int64_t *zones_out, int32_t *res,
                 uint64_t *alba);
/* cffi:end */
#endif
