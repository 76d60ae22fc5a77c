/*
 * zns_ftl.c - zoned mapping on the shared timing model.  No mapping table, no device GC.
 *
 * A zone's capacity is cut into program units (one-shot units of oneshot_pages flash pages);
 * program unit p of zone z lives on die (base(z) + p % dies_per_zone) % n_dies, where
 *   dies_per_zone = min(n_dies, program units per zone)  (a small zone uses fewer dies), and
 *   base(z) = (z * dies_per_zone) % n_dies                (small zones are spread over the dies),
 *   or with zone_die_stagger base(z) = z % n_dies (zones written at once start on different dies:
 *   otherwise zones of a whole stripe all start on die 0 and writers in step queue on one die).
 * Each die's share of a zone (its "slice") is a whole number of erase blocks: the slice is
 * ceil(units / dies_per_zone) program units; if that is larger than one preset erase block it
 * takes several blocks (erased one after another on that die), otherwise the zone geometry
 * defines the block (as NVMeVirt does: BLK_SIZE = ZONE_SIZE / DIES_PER_ZONE).  Reset = erase of
 * the slices that were programmed, in parallel over the zone's dies.  An erase costs t_erase
 * scaled by the erased block's size over the preset's erase block, as the conventional FTL's
 * scaled-down blocks do, so erasing costs the same per byte on both FTLs.
 *
 * Wear: a zone's blocks are fixed, so erases are counted per physical block, indexed zone-major:
 * zone z owns blocks [z * blocks_per_zone, (z + 1) * blocks_per_zone), slice s's blocks
 * (die (base(z) + s) % n_dies) from slice_first[s] on within that range, in the order the slice
 * fills them.  A reset erases (and counts) only the blocks holding programmed pages.
 *
 * Writes are acknowledged from the shared write buffer; a program unit is programmed when it is
 * full or reaches the zone capacity; finish pads and programs a partial unit.  The caller (the
 * zoned device layer) enforces write-pointer rules; the model only tracks, per zone, how far
 * data has been written (wp_units) and programmed (prog_units), to know which reads hit flash,
 * the buffer, or nothing.
 */
#include "ssd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct zns_ftl {
    ssd_timing T;
    int n_dies;
    int32_t units_per_page;     /* 4 KiB units per flash page */
    int32_t units_per_prog;     /* 4 KiB units per program unit */
    int32_t pages_per_block;    /* the preset's erase block, in pages */
    int32_t oneshot_pages;      /* pages per program unit */
    int64_t nr_zones;
    int64_t zone_bytes;         /* zone size (address space) */
    int64_t zone_cap_bytes;     /* zone capacity (writable) */
    int64_t zone_units;         /* zone capacity in 4 KiB units */
    int64_t progs_per_zone;     /* program units per zone capacity (the last may be short) */
    int32_t dies_per_zone;      /* dies a zone is striped over */
    int32_t stagger;            /* base(z) = z mod n_dies: zones written together use different dies */
    int64_t *wp_units;          /* per zone: units written (data accepted) */
    int64_t *prog_units;        /* per zone: units handed to NAND programs (incl. padded ones) */
    int64_t *ready_ns;          /* per zone: time the zone's pending data last arrived */
    int64_t blocks_per_zone;    /* erase blocks of one zone, over all its slices */
    int64_t *slice_first;       /* dies_per_zone + 1: slice s's first block within its zone */
    int64_t *erases;            /* nr_zones * blocks_per_zone: erases per physical block (wear) */
};

/* Pages of slice s: its share of the zone's program units (the first slices take one more). */
static inline int64_t slice_pages(const zns_ftl *Z, int64_t s)
{
    return (Z->progs_per_zone - s + Z->dies_per_zone - 1) / Z->dies_per_zone * Z->oneshot_pages;
}

static inline int zdie(const zns_ftl *Z, int64_t z, int64_t pu)
{
    int64_t base = ((Z->stagger ? z : z * Z->dies_per_zone)) % Z->n_dies;
    return (int)((base + pu % Z->dies_per_zone) % Z->n_dies);
}

static void zns_program_pu(zns_ftl *Z, int64_t z, int64_t pu, int64_t units, int64_t t)
{
    int64_t pad = (int64_t)Z->units_per_prog - units;
    int die = zdie(Z, z, pu);
    int64_t done = ssd_nand_prog(&Z->T, die, t, (int64_t)Z->units_per_prog * SSD_UNIT);
    ssd_wb_program(&Z->T, die, done, units);
    if (pad > 0) {
        Z->T.cnt.pad_bytes += pad * SSD_UNIT;
        Z->T.cnt.media_write_bytes += pad * SSD_UNIT;
    }
}

static int64_t zns_req(void *ftl, int op, int64_t off, int64_t len, int64_t t_issue)
{
    zns_ftl *Z = (zns_ftl *)ftl;
    ssd_timing *T = &Z->T;
    if (off < 0 || len < 0 || (off % SSD_UNIT) || (len % SSD_UNIT) ||
        off + len > Z->nr_zones * Z->zone_bytes)
        return -1;
    int64_t t = t_issue + T->t_cmd_ns;
    int64_t n = len / SSD_UNIT;
    if (op == SSD_OP_WRITE || op == SSD_OP_APPEND) {
        /* the controller's time for the command overlaps the data's transfer */
        int64_t c = ssd_ctrl(T, op, t);
        int64_t w = ssd_write_path(T, t_issue, len);
        t = ssd_wb_reserve(T, t, n);
        int64_t done = ssd_link_in(T, t, len);
        if (c > done)
            done = c;
        if (w > done)
            done = w;
        if (op == SSD_OP_APPEND)
            done += T->t_append_ns;
        /* a write lies inside one zone's capacity (the device layer enforces it) */
        int64_t z = off / Z->zone_bytes;
        int64_t u0 = (off % Z->zone_bytes) / SSD_UNIT;
        if (u0 + n > Z->zone_units)
            return -1;
        for (int64_t u = u0; u < u0 + n; u++) {
            int64_t in_pu = u % Z->units_per_prog + 1;
            if (in_pu == Z->units_per_prog || u + 1 == Z->zone_units) {
                int64_t first = u + 1 - in_pu;
                /* program the part of the unit not already programmed */
                int64_t lo = Z->prog_units[z] > first ? Z->prog_units[z] : first;
                if (u + 1 > lo) {
                    zns_program_pu(Z, z, u / Z->units_per_prog, u + 1 - lo, done);
                    Z->prog_units[z] = u + 1;
                }
            }
        }
        if (u0 + n > Z->wp_units[z])
            Z->wp_units[z] = u0 + n;
        Z->ready_ns[z] = done;
        T->cnt.host_write_bytes += len;
        T->cnt.media_write_bytes += len;
        return done;
    }
    if (op != SSD_OP_READ)
        return -1;
    t = ssd_ctrl(T, op, t + T->t_read_cmd_ns);
    int64_t end = t;
    int64_t pos = off;
    while (pos < off + len) {
        int64_t z = pos / Z->zone_bytes;
        int64_t u = (pos % Z->zone_bytes) / SSD_UNIT;
        int64_t zone_left = (Z->zone_bytes - pos % Z->zone_bytes) / SSD_UNIT;
        int64_t left = (off + len - pos) / SSD_UNIT;
        if (left > zone_left)
            left = zone_left;
        int64_t cnt, ready;
        if (u >= Z->wp_units[z] || u >= Z->zone_units) {
            cnt = left; /* never written / beyond capacity: zeroes */
            ready = t;
        } else if (u >= Z->prog_units[z]) {
            cnt = Z->wp_units[z] - u; /* in the write buffer */
            if (cnt > left)
                cnt = left;
            T->cnt.buffer_read_bytes += cnt * SSD_UNIT;
            ready = t;
        } else {
            /* run inside one flash page of one program unit */
            int64_t page_end = (u / Z->units_per_page + 1) * Z->units_per_page;
            cnt = page_end - u;
            if (cnt > left)
                cnt = left;
            if (u + cnt > Z->prog_units[z])
                cnt = Z->prog_units[z] - u;
            ready = ssd_host_read(T, zdie(Z, z, u / Z->units_per_prog), t, cnt * SSD_UNIT);
        }
        int64_t le = ssd_link_out(T, ready, cnt * SSD_UNIT);
        if (le > end)
            end = le;
        pos += cnt * SSD_UNIT;
    }
    T->cnt.host_read_bytes += len;
    return end;
}

zns_ftl *zns_new(const ssd_params *p, int64_t nr_zones, int64_t zone_size, int64_t zone_capacity)
{
    if (p->page_size % SSD_UNIT || p->oneshot_pages < 1 || nr_zones < 1 ||
        zone_capacity < SSD_UNIT || zone_capacity % SSD_UNIT || zone_size < zone_capacity ||
        zone_size % SSD_UNIT)
        return NULL;
    zns_ftl *Z = (zns_ftl *)calloc(1, sizeof(zns_ftl));
    if (!Z)
        return NULL;
    if (ssd_timing_init(&Z->T, p) < 0) {
        free(Z);
        return NULL;
    }
    Z->n_dies = Z->T.n_dies;
    Z->units_per_page = p->page_size / SSD_UNIT;
    Z->oneshot_pages = p->oneshot_pages;
    Z->units_per_prog = Z->units_per_page * Z->oneshot_pages;
    Z->pages_per_block = p->pages_per_block > 0 ? p->pages_per_block : Z->oneshot_pages;
    Z->nr_zones = nr_zones;
    Z->zone_bytes = zone_size;
    Z->zone_cap_bytes = zone_capacity;
    Z->zone_units = zone_capacity / SSD_UNIT;
    Z->progs_per_zone = (Z->zone_units + Z->units_per_prog - 1) / Z->units_per_prog;
    Z->dies_per_zone = (int32_t)(Z->progs_per_zone < Z->n_dies ? Z->progs_per_zone : Z->n_dies);
    Z->stagger = p->zone_die_stagger != 0;
    Z->wp_units = (int64_t *)calloc((size_t)nr_zones, sizeof(int64_t));
    Z->prog_units = (int64_t *)calloc((size_t)nr_zones, sizeof(int64_t));
    Z->ready_ns = (int64_t *)calloc((size_t)nr_zones, sizeof(int64_t));
    Z->slice_first = (int64_t *)calloc((size_t)Z->dies_per_zone + 1, sizeof(int64_t));
    if (!Z->wp_units || !Z->prog_units || !Z->ready_ns || !Z->slice_first) {
        zns_free(Z);
        return NULL;
    }
    for (int32_t s = 0; s < Z->dies_per_zone; s++) /* a slice is whole blocks, the last maybe short */
        Z->slice_first[s + 1] = Z->slice_first[s] + (slice_pages(Z, s) + Z->pages_per_block - 1) / Z->pages_per_block;
    Z->blocks_per_zone = Z->slice_first[Z->dies_per_zone];
    Z->erases = (int64_t *)calloc((size_t)(nr_zones * Z->blocks_per_zone), sizeof(int64_t));
    if (!Z->erases) {
        zns_free(Z);
        return NULL;
    }
    return Z;
}

void zns_free(zns_ftl *Z)
{
    if (!Z)
        return;
    ssd_timing_free(&Z->T);
    free(Z->wp_units);
    free(Z->prog_units);
    free(Z->ready_ns);
    free(Z->slice_first);
    free(Z->erases);
    free(Z);
}

int zns_submit(zns_ftl *Z, int64_t n, const uint8_t *ops, const int64_t *offs,
               const int64_t *lens, int64_t qd, double *out)
{
    return ssd_submit_loop_inline(&Z->T, Z, zns_req, NULL, n, ops, offs, lens, qd, out);
}

/* Erase the zone's programmed blocks; returns the completion time (ns), advances now. */
int64_t zns_reset(zns_ftl *Z, int64_t z)
{
    ssd_timing *T = &Z->T;
    if (z < 0 || z >= Z->nr_zones)
        return -1;
    int64_t t = T->now + T->t_cmd_ns, end = t;
    if (Z->wp_units[z] > 0) {
        if (Z->wp_units[z] > Z->prog_units[z])
            ssd_wb_drop(T, Z->wp_units[z] - Z->prog_units[z]); /* buffered data that never reached NAND */
        int64_t npu = (Z->prog_units[z] + Z->units_per_prog - 1) / Z->units_per_prog;
        for (int32_t s = 0; s < Z->dies_per_zone && s < npu; s++) {
            int64_t pus_here = (npu - s + Z->dies_per_zone - 1) / Z->dies_per_zone;
            int64_t pages = pus_here * Z->oneshot_pages;
            /* the die's slice: blocks of pages_per_block pages, the last one (or a slice smaller than a
               block) scaled down; only the blocks holding programmed pages are erased */
            int64_t slice = slice_pages(Z, s);
            int64_t blocks = (pages + Z->pages_per_block - 1) / Z->pages_per_block;
            int die = zdie(Z, z, s);
            int64_t *wear = Z->erases + z * Z->blocks_per_zone + Z->slice_first[s];
            for (int64_t b = 0; b < blocks; b++) {
                int64_t bp = slice - b * Z->pages_per_block;
                int64_t e = ssd_nand_erase_pages(T, die, t, bp < Z->pages_per_block ? bp : Z->pages_per_block);
                wear[b]++;
                if (e > end)
                    end = e;
            }
        }
    }
    /* a drive's own reset cost (t_reset_*): the reset completes then, its erases run on */
    if (T->t_reset_ns > 0 || T->t_reset_written_ns > 0 || T->reset_ns_per_mib > 0) {
        int64_t lat = T->t_reset_ns;
        if (Z->wp_units[z] > 0) {
            double mib = (double)Z->wp_units[z] * SSD_UNIT / (1024.0 * 1024.0);
            lat += T->t_reset_written_ns + (int64_t)(pow(mib, T->reset_exponent) * T->reset_ns_per_mib + 0.5);
        }
        end = t + lat;
    }
    Z->wp_units[z] = Z->prog_units[z] = 0;
    if (end > T->now)
        T->now = end;
    return end;
}

/* Finish.  By default the zone's partial program unit is padded and programmed in the
   background (now does not move).  With finish_pads_zone, as drives do, the whole rest of a
   non-empty zone is programmed (padding, through the program path) and the finish completes
   when the last pad program does, plus t_finish; now advances to it.  Returns the completion. */
int64_t zns_finish(zns_ftl *Z, int64_t z)
{
    ssd_timing *T = &Z->T;
    if (z < 0 || z >= Z->nr_zones)
        return -1;
    if (!T->finish_pads_zone) {
        if (Z->wp_units[z] > Z->prog_units[z]) {
            int64_t units = Z->wp_units[z] - Z->prog_units[z];
            int64_t t = T->now > Z->ready_ns[z] ? T->now : Z->ready_ns[z];
            zns_program_pu(Z, z, Z->prog_units[z] / Z->units_per_prog, units, t);
            int64_t end = (Z->wp_units[z] + Z->units_per_prog - 1) / Z->units_per_prog * Z->units_per_prog;
            Z->prog_units[z] = end < Z->zone_units ? end : Z->zone_units;
        }
        return T->now;
    }
    int64_t t = T->now + T->t_cmd_ns, end = t;
    if (Z->wp_units[z] > 0) {
        int64_t u = Z->prog_units[z];
        if (Z->wp_units[z] > u) { /* the partial unit: the data held in the buffer, padded */
            int64_t units = Z->wp_units[z] - u;
            int64_t k = Z->zone_units - u < Z->units_per_prog ? Z->zone_units - u : Z->units_per_prog;
            int64_t t0 = t > Z->ready_ns[z] ? t : Z->ready_ns[z];
            int die = zdie(Z, z, u / Z->units_per_prog);
            end = ssd_nand_prog(T, die, ssd_write_path(T, t0, (k - units) * SSD_UNIT), k * SSD_UNIT);
            ssd_wb_program(T, die, end, units);
            T->cnt.pad_bytes += (k - units) * SSD_UNIT;
            T->cnt.media_write_bytes += (k - units) * SSD_UNIT;
            u += k;
        }
        for (; u < Z->zone_units; u += Z->units_per_prog) {
            int64_t k = Z->zone_units - u < Z->units_per_prog ? Z->zone_units - u : Z->units_per_prog;
            int64_t done = ssd_nand_prog(T, zdie(Z, z, u / Z->units_per_prog),
                                         ssd_write_path(T, t, k * SSD_UNIT), k * SSD_UNIT);
            T->cnt.pad_bytes += k * SSD_UNIT;
            T->cnt.media_write_bytes += k * SSD_UNIT;
            if (done > end)
                end = done;
        }
        Z->prog_units[z] = Z->zone_units;
        end += T->t_finish_ns;
    }
    if (end > T->now)
        T->now = end;
    return end;
}

ssd_timing *zns_timing(zns_ftl *Z) { return &Z->T; }
int32_t zns_dies_per_zone(zns_ftl *Z) { return Z->dies_per_zone; }
int64_t zns_zone_wp(zns_ftl *Z, int64_t z)
{
    return (z >= 0 && z < Z->nr_zones) ? Z->wp_units[z] * SSD_UNIT : -1;
}

int64_t zns_blocks_per_zone(zns_ftl *Z) { return Z->blocks_per_zone; }

void zns_erase_counts(zns_ftl *Z, int64_t *out)
{
    memcpy(out, Z->erases, (size_t)(Z->nr_zones * Z->blocks_per_zone) * sizeof(int64_t));
}
