/* store.c - see store.h */
#include "store.h"

#include <string.h>

int st_prepare(const int64_t *ids, int64_t n, int64_t *direct, int64_t direct_size,
               const uint32_t *loc, const uint8_t *buffer_of, uint8_t *mark, int64_t *h, int64_t *counts)
{
    int64_t fresh = 0, added = 0, buffered = 0, i;
    int rc = 0;
    for (i = 0; i < n; i++) {
        int64_t id = ids[i], v;
        if (id < 0) { rc = -1; break; }
        if (id >= direct_size) { rc = -2; break; }
        v = direct[id];
        if (v >= 0) {
            if (mark[v]) { rc = -3; break; }
            mark[v] = 1;
            h[i] = v;
            if (buffer_of[v])
                buffered++;
            else if (loc[v] == ST_UNMAPPED)
                added++;
        } else if (v == -1) {
            direct[id] = -3 - i;            /* seen once in this batch (undone below) */
            h[i] = -1;
            fresh++;
        } else {
            rc = -3;
            break;
        }
    }
    for (int64_t k = 0; k < i; k++) {       /* undo the marks */
        if (h[k] >= 0)
            mark[h[k]] = 0;
        else
            direct[ids[k]] = -1;
    }
    counts[0] = fresh;
    counts[1] = fresh + added;
    counts[2] = buffered;
    return rc;
}

int64_t st_insert(const int64_t *ids, int64_t n, int64_t *h, int64_t *direct, int64_t *id_of, int64_t next,
                  const int64_t *reuse, int64_t take)
{
    int64_t start = next, i = 0, k = 0;
    for (; k < take && i < n; i++) {        /* the first `take` fresh ids: discarded handles */
        if (h[i] < 0) {
            h[i] = reuse[k++];
            direct[ids[i]] = h[i];
            id_of[h[i]] = ids[i];
        }
    }
    for (; i < n; i++) {                    /* the rest: new handles */
        if (h[i] < 0) {
            h[i] = next++;
            direct[ids[i]] = h[i];
            id_of[h[i]] = ids[i];
        }
    }
    return next - start;
}

void st_fill(uint8_t *a, const int64_t *h, int64_t n, uint8_t v)
{
    for (int64_t i = 0; i < n; i++)
        a[h[i]] = v;
}

void st_commit(uint32_t *loc, int64_t *rmap, int64_t *valid, int64_t slots_per_zone, const int64_t *h,
               int64_t n, int64_t first_slot, uint8_t *in_flight, uint8_t *buffer_of, int clear_buffered)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t hh = h[i];
        uint32_t old = loc[hh];
        if (old != ST_UNMAPPED) {
            rmap[old] = 0;
            valid[(int64_t)old / slots_per_zone]--;
        }
        loc[hh] = (uint32_t)(first_slot + i);
        rmap[first_slot + i] = hh + 1;
        in_flight[hh] = 0;
        if (clear_buffered)
            buffer_of[hh] = 0;
    }
    valid[first_slot / slots_per_zone] += n;
}

void st_stage(int64_t *buf_ids, uint8_t *buf_data, int64_t at, const int64_t *h, const uint8_t *pages,
              int64_t n, int64_t page_size, uint8_t *buffer_of, uint8_t tag)
{
    memcpy(buf_ids + at, h, (size_t)n * sizeof *h);
    memcpy(buf_data + at * page_size, pages, (size_t)(n * page_size));
    for (int64_t i = 0; i < n; i++)
        buffer_of[h[i]] = tag;
}

void st_commit_run(uint32_t *loc, int64_t *rmap, int64_t *valid, int64_t slots_per_zone, const int64_t *h1,
                   int64_t n1, const int64_t *h2, int64_t n2, int64_t first_slot, uint8_t *in_flight,
                   uint8_t *buffer_of, const int64_t *id_of, int64_t *ids_out)
{
    for (int64_t i = 0; i < n1; i++)
        ids_out[i] = id_of[h1[i]];
    for (int64_t i = 0; i < n2; i++)
        ids_out[n1 + i] = id_of[h2[i]];
    if (n1)
        st_commit(loc, rmap, valid, slots_per_zone, h1, n1, first_slot, in_flight, buffer_of, 1);
    if (n2)
        st_commit(loc, rmap, valid, slots_per_zone, h2, n2, first_slot + n1, in_flight, buffer_of, 0);
}

int64_t st_drop_front(int64_t *buf_ids, uint8_t *buf_data, int64_t n, int64_t k, int64_t page_size)
{
    int64_t left = n - k;
    if (left > 0 && k > 0) {
        memmove(buf_ids, buf_ids + k, (size_t)left * sizeof *buf_ids);
        memmove(buf_data, buf_data + k * page_size, (size_t)(left * page_size));
    }
    return left;
}

int st_discard(const int64_t *ids, int64_t n, int64_t *direct, int64_t direct_size, uint32_t *loc, int64_t *rmap,
               int64_t *valid, int64_t slots_per_zone, const uint8_t *buffer_of, int32_t *prefetch_pos,
               int64_t *prefetch_ring, uint8_t *lost, uint16_t *swap_outs, int remove, int64_t *free_stack,
               int64_t reusable, int64_t *buffered, int64_t *counts)
{
    for (int64_t i = 0; i < n; i++) {       /* checked first: a refused batch changes nothing */
        if (ids[i] < 0)
            return -1;
        if (ids[i] >= direct_size)
            return -2;
    }
    int64_t held = 0, stored = 0, dropped = 0, cleared = 0, nbuf = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t h = direct[ids[i]];
        if (h < 0)
            continue;
        held++;
        uint32_t old = loc[h];
        if (buffer_of[h]) {
            buffered[nbuf++] = h;
            stored++;
        } else if (old != ST_UNMAPPED) {
            stored++;
        }
        if (old != ST_UNMAPPED) {
            rmap[old] = 0;
            valid[(int64_t)old / slots_per_zone]--;
            loc[h] = ST_UNMAPPED;
        }
        if (prefetch_pos[h]) {
            prefetch_ring[prefetch_pos[h] - 1] = -1;
            prefetch_pos[h] = 0;
            dropped++;
        }
        if (lost[h]) {
            lost[h] = 0;
            cleared++;
        }
        if (remove) {
            swap_outs[h] = 0;
            direct[ids[i]] = -1;
            free_stack[reusable++] = h;
        }
    }
    counts[0] = held;
    counts[1] = stored;
    counts[2] = dropped;
    counts[3] = cleared;
    counts[4] = nbuf;
    return 0;
}
