/*
 * ocssd.c - Open-Channel SSD 2.0 on the shared timing model: the host addresses flash directly.
 *
 * Geometry: groups x parallel units (PUs) per group x chunks per PU x sectors (4 KiB) per chunk.
 * A group is a channel and a PU one die on it: ssd.c puts die d on channel d % channels, so PU p
 * of group g is die p * groups + g (groups = channels, PUs per group = dies per channel).  A chunk
 * is one erase block of its PU's die, a whole number of program units.  Requests address linear
 * sectors
 *     ppa = ((g * pus + p) * chunks + c) * sectors + s
 * as byte offsets ppa * 4096 (the issue loop's convention), so a chunk is one contiguous range.
 *
 * No mapping table, no device GC, no wear levelling: a sector is programmed where the host wrote
 * it.  Writes are acknowledged from the shared write buffer; a program unit is programmed on the
 * chunk's die when the writes fill it (a chunk holds whole units, so nothing is ever padded).
 * Reads of sectors still in the buffer cost no flash access.  Op OCSSD_OP_RESET (SSD_OP_TRIM's
 * code, 2) on a whole chunk is a chunk reset: one erase of the chunk's block on its die (t_erase
 * scaled from the preset's block to the chunk, as zns_ftl.c does), counted per chunk (wear).
 *
 * The chunk rules (states, ws_min, mw_cunits, offline chunks) are the device layer's
 * (zswap_host/devices/ocssd.py).  The model refuses only what would corrupt its own record of
 * what is programmed: a write away from the chunk's write pointer or past its end.
 */
#include "ssd.h"

#include <stdlib.h>
#include <string.h>

#define OCSSD_OP_RESET SSD_OP_TRIM

struct ocssd {
    ssd_timing T;
    int32_t groups, pus, chunks, sectors;   /* geometry: per device, group, PU, chunk */
    int32_t units_per_page;     /* 4 KiB sectors per flash page */
    int32_t units_per_prog;     /* 4 KiB sectors per program unit */
    int32_t chunk_pages;        /* flash pages per chunk (its erase block) */
    int64_t nr_chunks;
    int64_t total_bytes;
    int32_t *pu_die;            /* per PU (g * pus + p): its die */
    int64_t *wp;                /* per chunk: sectors written (data accepted) */
    int64_t *prog;              /* per chunk: sectors handed to NAND programs */
    int64_t *erases;            /* per chunk: resets since the model was built */
};

static inline int oc_die(const ocssd *O, int64_t c)
{
    return O->pu_die[c / O->chunks];
}

static int64_t oc_write(ocssd *O, int64_t c, int64_t s, int64_t n, int64_t t)
{
    ssd_timing *T = &O->T;
    if (s != O->wp[c] || s + n > O->sectors)
        return -1;
    t = ssd_wb_reserve(T, t, n);
    int64_t done = ssd_link_in(T, t, n * SSD_UNIT);
    int die = oc_die(O, c);
    int64_t upp = O->units_per_prog;
    /* program each unit this write completes; prog may sit inside a unit after ocssd_set_wp */
    for (int64_t u = (s / upp + 1) * upp; u <= s + n; u += upp) {
        int64_t lo = O->prog[c] > u - upp ? O->prog[c] : u - upp;
        int64_t end = ssd_nand_prog(T, die, done, upp * SSD_UNIT);
        ssd_wb_program(T, die, end, u - lo);
        O->prog[c] = u;
    }
    O->wp[c] = s + n;
    T->cnt.host_write_bytes += n * SSD_UNIT;
    T->cnt.media_write_bytes += n * SSD_UNIT;
    return done;
}

/* A read may cross chunks (and so dies): cut it at chunk ends, buffer/flash borders and pages. */
static int64_t oc_read(ocssd *O, int64_t s0, int64_t n, int64_t t)
{
    ssd_timing *T = &O->T;
    int64_t end = t, pos = s0, stop = s0 + n;
    while (pos < stop) {
        int64_t c = pos / O->sectors, s = pos % O->sectors;
        int64_t left = stop - pos < O->sectors - s ? stop - pos : O->sectors - s;
        int64_t cnt = left, ready = t;
        if (s >= O->wp[c]) {
            /* never written: zeroes, no flash */
        } else if (s >= O->prog[c]) {
            if (O->wp[c] - s < cnt)
                cnt = O->wp[c] - s; /* still in the write buffer */
            T->cnt.buffer_read_bytes += cnt * SSD_UNIT;
        } else {
            int64_t page_end = (s / O->units_per_page + 1) * O->units_per_page;
            if (page_end > O->prog[c])
                page_end = O->prog[c];
            if (page_end - s < cnt)
                cnt = page_end - s;
            ready = ssd_host_read(T, oc_die(O, c), t, cnt * SSD_UNIT);
        }
        int64_t le = ssd_link_out(T, ready, cnt * SSD_UNIT);
        if (le > end)
            end = le;
        pos += cnt;
    }
    T->cnt.host_read_bytes += n * SSD_UNIT;
    return end;
}

static int64_t oc_reset(ocssd *O, int64_t c, int64_t t)
{
    ssd_timing *T = &O->T;
    if (O->wp[c] > O->prog[c])
        ssd_wb_drop(T, O->wp[c] - O->prog[c]); /* buffered data that never reached NAND */
    int64_t done = ssd_nand_erase_pages(T, oc_die(O, c), t, O->chunk_pages);
    O->erases[c]++;
    O->wp[c] = O->prog[c] = 0;
    return done;
}

static int64_t oc_req(void *ftl, int op, int64_t off, int64_t len, int64_t t_issue)
{
    ocssd *O = (ocssd *)ftl;
    if (off < 0 || len <= 0 || (off % SSD_UNIT) || (len % SSD_UNIT) || off + len > O->total_bytes)
        return -1;
    int64_t s0 = off / SSD_UNIT, n = len / SSD_UNIT;
    int64_t c = s0 / O->sectors, s = s0 % O->sectors;
    int64_t t = t_issue + O->T.t_cmd_ns;
    switch (op) {
    case SSD_OP_WRITE:
        return oc_write(O, c, s, n, t);
    case SSD_OP_READ:
        return oc_read(O, s0, n, t + O->T.t_read_cmd_ns);
    case OCSSD_OP_RESET:
        return (s == 0 && n == O->sectors) ? oc_reset(O, c, t) : -1; /* exactly one chunk */
    default:
        return -1;
    }
}

ocssd *ocssd_new(const ssd_params *p, int32_t groups, int32_t pus_per_group, int32_t chunks_per_pu,
                 int32_t sectors_per_chunk)
{
    if (p->page_size < SSD_UNIT || p->page_size % SSD_UNIT || p->oneshot_pages < 1 || groups < 1 ||
        pus_per_group < 1 || chunks_per_pu < 1 || sectors_per_chunk < 1 ||
        groups != p->channels || pus_per_group != p->dies_per_channel)
        return NULL;
    int32_t upg = p->page_size / SSD_UNIT, upp = upg * p->oneshot_pages;
    if (sectors_per_chunk % upp)
        return NULL;
    ocssd *O = (ocssd *)calloc(1, sizeof(ocssd));
    if (!O)
        return NULL;
    if (ssd_timing_init(&O->T, p) < 0) {
        free(O);
        return NULL;
    }
    O->groups = groups;
    O->pus = pus_per_group;
    O->chunks = chunks_per_pu;
    O->sectors = sectors_per_chunk;
    O->units_per_page = upg;
    O->units_per_prog = upp;
    O->chunk_pages = sectors_per_chunk / upg;
    O->nr_chunks = (int64_t)groups * pus_per_group * chunks_per_pu;
    O->total_bytes = O->nr_chunks * sectors_per_chunk * SSD_UNIT;
    O->pu_die = (int32_t *)calloc((size_t)groups * pus_per_group, sizeof(int32_t));
    O->wp = (int64_t *)calloc((size_t)O->nr_chunks, sizeof(int64_t));
    O->prog = (int64_t *)calloc((size_t)O->nr_chunks, sizeof(int64_t));
    O->erases = (int64_t *)calloc((size_t)O->nr_chunks, sizeof(int64_t));
    if (!O->pu_die || !O->wp || !O->prog || !O->erases) {
        ocssd_free(O);
        return NULL;
    }
    for (int32_t g = 0; g < groups; g++)
        for (int32_t u = 0; u < pus_per_group; u++)
            O->pu_die[g * pus_per_group + u] = u * groups + g; /* on channel g */
    return O;
}

void ocssd_free(ocssd *O)
{
    if (!O)
        return;
    ssd_timing_free(&O->T);
    free(O->pu_die);
    free(O->wp);
    free(O->prog);
    free(O->erases);
    free(O);
}

int ocssd_submit(ocssd *O, int64_t n, const uint8_t *ops, const int64_t *offs, const int64_t *lens,
                 int64_t qd, double *out)
{
    return ssd_submit_loop_inline(&O->T, O, oc_req, NULL, n, ops, offs, lens, qd, out);
}

ssd_timing *ocssd_timing(ocssd *O) { return &O->T; }
int64_t ocssd_nr_chunks(ocssd *O) { return O->nr_chunks; }

int32_t ocssd_chunk_die(ocssd *O, int64_t chunk)
{
    return (chunk >= 0 && chunk < O->nr_chunks) ? oc_die(O, chunk) : -1;
}

int64_t ocssd_chunk_wp(ocssd *O, int64_t chunk)
{
    return (chunk >= 0 && chunk < O->nr_chunks) ? O->wp[chunk] : -1;
}

/* A reopened device: the chunk holds `sectors` sectors already on flash (the write cache is
   flushed at power-off).  Only for a chunk the model has not written. */
int ocssd_set_wp(ocssd *O, int64_t chunk, int64_t sectors)
{
    if (chunk < 0 || chunk >= O->nr_chunks || sectors < 0 || sectors > O->sectors ||
        O->wp[chunk] != O->prog[chunk])
        return -1;
    O->wp[chunk] = O->prog[chunk] = sectors;
    return 0;
}

void ocssd_erase_counts(ocssd *O, int64_t *out)
{
    memcpy(out, O->erases, (size_t)O->nr_chunks * sizeof(int64_t));
}
