/*
 * ssd_groups.c - serial groups of requests in one call.
 *
 * A faulting thread's page faults: each fault's requests are one queue, and the next fault is
 * issued only when the previous one's last request has completed.  Charging them as one call
 * per group from Python cost more than the model itself, so the loop is here.  It only chains
 * the FTLs' public submit functions, so it is exactly a sequence of conv_submit(_h) /
 * zns_submit / ocssd_submit calls (each starts at the model's clock, which the previous one
 * advanced to its last completion).  FDP handles, if any, are sliced per group like the requests.
 * The timing model's Python face (ssdsim/model.py) makes every call through these, a plain
 * queue as one group, so each model's grouped submit has the same signature.
 */
#include "ssd.h"

typedef int (*submit_fn)(void *h, int64_t n, const uint8_t *ops, const int64_t *offs,
                         const int64_t *lens, const uint16_t *handles, int64_t qd, double *out);

static int conv_fn(void *h, int64_t n, const uint8_t *ops, const int64_t *offs,
                   const int64_t *lens, const uint16_t *handles, int64_t qd, double *out)
{
    return conv_submit_h((conv_ftl *)h, n, ops, offs, lens, handles, qd, out);
}

static int zns_fn(void *h, int64_t n, const uint8_t *ops, const int64_t *offs,
                  const int64_t *lens, const uint16_t *handles, int64_t qd, double *out)
{
    (void)handles; /* zoned: placement is the zone */
    return zns_submit((zns_ftl *)h, n, ops, offs, lens, qd, out);
}

static int ocssd_fn(void *h, int64_t n, const uint8_t *ops, const int64_t *offs,
                    const int64_t *lens, const uint16_t *handles, int64_t qd, double *out)
{
    (void)handles; /* open-channel: placement is the address */
    return ocssd_submit((ocssd *)h, n, ops, offs, lens, qd, out);
}

static int submit_groups(submit_fn fn, void *h, int64_t ngroups, const int64_t *group_n,
                         const int64_t *group_qd, const uint8_t *ops, const int64_t *offs,
                         const int64_t *lens, const uint16_t *handles, double *out)
{
    int64_t o = 0;
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t n = group_n[g];
        if (n > 0) {
            int rc = fn(h, n, ops + o, offs + o, lens + o, handles ? handles + o : NULL, group_qd[g],
                        out + o);
            if (rc < 0) {
                int64_t i = o + (-(int64_t)rc - 1);  /* index in the whole array */
                return (int)(-(i + 1) > -2147483647 ? -(i + 1) : -2147483647);
            }
        }
        o += n;
    }
    return 0;
}

int conv_submit_groups_h(conv_ftl *F, int64_t ngroups, const int64_t *group_n, const int64_t *group_qd,
                         const uint8_t *ops, const int64_t *offs, const int64_t *lens,
                         const uint16_t *handles, double *out)
{
    return submit_groups(conv_fn, F, ngroups, group_n, group_qd, ops, offs, lens, handles, out);
}

int zns_submit_groups(zns_ftl *Z, int64_t ngroups, const int64_t *group_n, const int64_t *group_qd,
                      const uint8_t *ops, const int64_t *offs, const int64_t *lens, const uint16_t *handles,
                      double *out)
{
    (void)handles;
    return submit_groups(zns_fn, Z, ngroups, group_n, group_qd, ops, offs, lens, NULL, out);
}

int ocssd_submit_groups(ocssd *O, int64_t ngroups, const int64_t *group_n, const int64_t *group_qd,
                        const uint8_t *ops, const int64_t *offs, const int64_t *lens, const uint16_t *handles,
                        double *out)
{
    (void)handles;
    return submit_groups(ocssd_fn, O, ngroups, group_n, group_qd, ops, offs, lens, NULL, out);
}
