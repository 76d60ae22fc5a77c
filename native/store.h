/*
 * store.h - the swap store's per-page bookkeeping for its swap_out fast path (store/native.py):
 * one pass over a batch's pages in place of a dozen numpy operations, on the store's own arrays
 * (the id map's direct array and handle -> id column, the slot map's location / reverse map /
 * valid counts, the per-handle in-flight and write-buffer flags). The pure-Python code in
 * store/idmap.py and store/slotmap.py stays the reference; tests/store/test_store_fastpath.py checks
 * that both leave the same state.
 *
 * Handles and ids are int64, slots uint32 (ST_UNMAPPED: none), flags uint8.
 */
#ifndef ZSWAP_STORE_H
#define ZSWAP_STORE_H

#include <stdint.h>

#define ST_UNMAPPED 0xFFFFFFFFu

/* cffi:begin */
/* Look a batch of page ids up in the id map's direct array and classify it, changing nothing.
   h[i] = the handle of ids[i], -1 when not held. counts[0] = ids not held, counts[1] = pages that
   are new to the store (not held, or held without a device copy and not buffered), counts[2] =
   held pages waiting in a write buffer. Returns 0, or without classifying: -1 a negative id,
   -2 an id the direct array does not cover, -3 an id twice in the batch. ``mark`` (one flag per
   handle, all zero) is used as scratch and left all zero. */
int st_prepare(const int64_t *ids, int64_t n, int64_t *direct, int64_t direct_size,
               const uint32_t *loc, const uint8_t *buffer_of, uint8_t *mark, int64_t *h, int64_t *counts);

/* Hand the ids with h[i] < 0 handles in batch order: the first `take` of them reuse[0 .. take - 1]
   (discarded handles: IdMap.insert's order is the top `take` of its free stack, bottom first), the
   rest new handles next, next + 1, ...; direct[id] = handle, id_of[handle] = id (the caller made
   sure every id is below the direct array's size and id_of holds next + the new ones). Returns how
   many new handles were handed out (the reused ones not counted). */
int64_t st_insert(const int64_t *ids, int64_t n, int64_t *h, int64_t *direct, int64_t *id_of, int64_t next,
                  const int64_t *reuse, int64_t take);

/* a[h[i]] = v for every i */
void st_fill(uint8_t *a, const int64_t *h, int64_t n, uint8_t v);

/* The handles' new copies were written to consecutive slots from first_slot (one zone): invalidate
   their old copies (reverse map entry 0, the old zone's valid count down), point them at the new
   slots, set the reverse map, count them valid, and clear in_flight (and buffer_of when
   clear_buffered). Distinct handles only. */
void st_commit(uint32_t *loc, int64_t *rmap, int64_t *valid, int64_t slots_per_zone, const int64_t *h,
               int64_t n, int64_t first_slot, uint8_t *in_flight, uint8_t *buffer_of, int clear_buffered);

/* A write buffer takes n pages (WriteBuffer.add and the buffer_of fill in one pass): buf_ids[at + i]
   = h[i], row at + i of buf_data = row i of pages (page_size bytes each), buffer_of[h[i]] = tag.
   The caller made sure the buffer holds at + n rows. */
void st_stage(int64_t *buf_ids, uint8_t *buf_data, int64_t at, const int64_t *h, const uint8_t *pages,
              int64_t n, int64_t page_size, uint8_t *buffer_of, uint8_t tag);

/* A write buffer's first k pages were written (WriteBuffer.drop_front; st_out_end): the n - k after
   them move to the front, ids and rows (page_size bytes each). Returns n - k. 0 <= k <= n. */
int64_t st_drop_front(int64_t *buf_ids, uint8_t *buf_data, int64_t n, int64_t k, int64_t page_size);

/* The one-batch call's commit: h1 (n1 handles from a write buffer) then h2 (n2 of the caller's)
   written to consecutive slots from first_slot (one zone), as st_commit(h1, clear_buffered=1)
   then st_commit(h2, 0); ids_out[0 .. n1 + n2) = their page ids (id_of) in slot order. */
void st_commit_run(uint32_t *loc, int64_t *rmap, int64_t *valid, int64_t slots_per_zone, const int64_t *h1,
                   int64_t n1, const int64_t *h2, int64_t n2, int64_t first_slot, uint8_t *in_flight,
                   uint8_t *buffer_of, const int64_t *id_of, int64_t *ids_out);

/* Discard page ids held in the id map's direct array (``SwapStore.discard``): for each held id its
   device copy invalidated (reverse map entry 0, its zone's valid count down, loc[h] unmapped), its
   read-ahead copy dropped (prefetch_ring[prefetch_pos[h] - 1] = -1, prefetch_pos[h] = 0), its lost
   flag cleared; with `remove`, also swap_outs[h] = 0, direct[id] = -1 and h pushed on the free
   stack at free_stack[reusable ..] (an id given twice then finds nothing held the second time;
   without `remove` the caller passes distinct ids). Handles whose newest copy waits in a write
   buffer (buffer_of[h] != 0) are listed in buffered[] for the caller to take out of the buffers.
   counts: [0] ids held (handles freed with `remove`), [1] pages that were stored (on the device
   or buffered), [2] read-ahead copies dropped, [3] lost flags cleared, [4] handles in buffered[].
   Returns 0, or without changing anything: -1 a negative id, -2 an id the direct array does not
   cover. The caller made sure free_stack has room for reusable + n. */
int st_discard(const int64_t *ids, int64_t n, int64_t *direct, int64_t direct_size, uint32_t *loc, int64_t *rmap,
               int64_t *valid, int64_t slots_per_zone, const uint8_t *buffer_of, int32_t *prefetch_pos,
               int64_t *prefetch_ring, uint8_t *lost, uint16_t *swap_outs, int remove, int64_t *free_stack,
               int64_t reusable, int64_t *buffered, int64_t *counts);
/* cffi:end */

#endif
