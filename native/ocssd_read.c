/* ocssd_read.c - see ocssd_read.h */
#include "ocssd_read.h"

#define SECTOR 4096

int64_t ocr_plan(int64_t nreq, const int64_t *offsets, const int64_t *lengths, int64_t zs, int64_t width,
                 int64_t unit, int64_t sectors, int64_t mw_cunits, int64_t nr_zones, const int64_t *chunk,
                 const int64_t *dwp, const int64_t *hw, int64_t cap, int64_t *ppas, int64_t *pos, int64_t *req,
                 int64_t *hpos, int64_t *hzone, int64_t *hslot, int64_t *hsec, int64_t *stats)
{
    int64_t d = 0, h = 0, i = 0, runs = 0, reqs = 0;
    for (int64_t q = 0; q < nreq; q++) {
        int64_t n = lengths[q] / SECTOR;
        if (n < 1)
            return -2;
        i += n;
    }
    if (i > cap) {
        stats[3] = i;
        return -1;
    }
    i = 0;
    for (int64_t q = 0; q < nreq; q++) {
        int64_t first = offsets[q] / SECTOR, n = lengths[q] / SECTOR;
        int64_t z = first / zs, r = first - z * zs;
        for (int64_t j = 0; j < n; j++, i++, r++) {
            if (r == zs)                                /* on into the next zone */
                z++, r = 0;
            if (z >= nr_zones)
                return -2;
            if (r >= hw[z])
                continue;                               /* never written, or finish's zeros */
            int64_t k = r / unit, row = k / width, slot = k - row * width, sec = row * unit + (r - k * unit);
            int64_t c = chunk[z * width + slot], w = dwp[z * width + slot];
            if (c < 0)
                continue;
            if (w == sectors || sec < w - mw_cunits) {
                int64_t p = c * sectors + sec;
                /* the depth's runs: a new one where the request changes or the ppas stop running on */
                if (d == 0 || req[d - 1] != q)
                    reqs++, runs++;
                else if (p != ppas[d - 1] + 1)
                    runs++;
                ppas[d] = p;
                pos[d] = i;
                req[d++] = q;
            } else {                                    /* an open chunk's not-yet-readable tail */
                hpos[h] = i;
                hzone[h] = z;
                hslot[h] = slot;
                hsec[h++] = sec;
            }
        }
    }
    stats[0] = h;
    stats[1] = runs;
    stats[2] = reqs;
    stats[3] = i;
    return d;
}

void ocr_done(int64_t nreq, const int64_t *lengths, int64_t d, const int64_t *req, const double *done,
              double now, double *out, int64_t *tmp)
{
    for (int64_t q = 0; q < nreq; q++)
        tmp[q] = 0;
    for (int64_t i = 0; i < d; i++)
        tmp[req[i]]++;
    /* max over the request's sectors, as np.maximum.reduceat over them: `now` for each one not
       read from the device, done[] for the others (in sector order: the same max) */
    for (int64_t q = 0; q < nreq; q++)
        out[q] = tmp[q] < lengths[q] / SECTOR ? now : -1.0 / 0.0;
    for (int64_t i = 0; i < d; i++)
        if (out[req[i]] == out[req[i]] && !(done[i] <= out[req[i]]))     /* NaN wins, as in numpy */
            out[req[i]] = done[i];
}
