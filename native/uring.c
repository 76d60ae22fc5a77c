/* io_uring I/O engine on liburing: see uring.h for the contract. */
#define _GNU_SOURCE
#include "uring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <liburing.h>
#include <linux/nvme_ioctl.h>

#define MAX_FIXED_BYTES (1ULL << 30)    /* the kernel's limit for one registered buffer */

struct ur_engine {
    struct io_uring ring;
    unsigned depth;
    int big;            /* SQE128 + CQE32: passthrough possible */
    int fixed_ok;       /* a one-slot sparse buffer table is registered */
    int fixed_on;       /* ... and batches use it */
    ur_stats st;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int ur_open(unsigned depth, int passthrough, ur_engine **out)
{
    if (depth < 1 || depth > 4096)
        return -EINVAL;
    ur_engine *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    unsigned flags = passthrough ? (IORING_SETUP_SQE128 | IORING_SETUP_CQE32) : 0;
    int r = io_uring_queue_init(depth, &e->ring, flags);
    if (r < 0) {
        free(e);
        return r;
    }
    e->depth = depth;
    e->big = !!passthrough;
    e->fixed_ok = e->fixed_on = io_uring_register_buffers_sparse(&e->ring, 1) == 0;
    *out = e;
    return 0;
}

void ur_close(ur_engine *e)
{
    if (!e)
        return;
    io_uring_queue_exit(&e->ring);
    free(e);
}

void ur_get_stats(const ur_engine *e, ur_stats *out) { *out = e->st; }
int ur_fixed(const ur_engine *e) { return e->fixed_ok && e->fixed_on; }
void ur_set_fixed(ur_engine *e, int on) { e->fixed_on = !!on; }

/* slot 0 of the buffer table <- [buf, buf + len) (len 0: empty the slot). 0 or -errno. */
static int set_slot(ur_engine *e, void *buf, size_t len)
{
    struct iovec iov = {.iov_base = len ? buf : NULL, .iov_len = len};
    __u64 tag = 0;
    int r = io_uring_register_buffers_update_tag(&e->ring, 0, &iov, &tag, 1);
    return r < 0 ? r : 0;
}

/* one request of a batch into an SQE */
typedef void (*prep_fn)(ur_engine *e, struct io_uring_sqe *sqe, uint32_t i, const void *ctx);

struct batch {
    uint32_t n, qd;
    const int64_t *zone;     /* key per request, or NULL */
    uint32_t nzones;
    int serial;              /* one in flight per key, in order */
    int count_appends;
    prep_fn prep;
    const void *ctx;
    int32_t *res;
    uint64_t *res64;         /* the big CQE's first extra word (passthrough result), or NULL */
    int64_t *done_ns;
};

/* Submit up to qd at a time, reap in bulk, until all n completed. Never returns with a request in
 * flight: the caller's buffer may be freed right after. */
static int run(ur_engine *e, const struct batch *b)
{
    uint32_t n = b->n, qd = b->qd < e->depth ? b->qd : e->depth;
    if (qd < 1)
        qd = 1;
    uint8_t *sub = calloc(n ? n : 1, 1);
    uint32_t *cnt = NULL, *blocked = NULL;
    if (b->zone) {
        cnt = calloc(b->nzones ? b->nzones : 1, sizeof *cnt);
        blocked = calloc(b->nzones ? b->nzones : 1, sizeof *blocked);
    }
    if (!sub || (b->zone && (!cnt || !blocked))) {
        free(sub), free(cnt), free(blocked);
        return -ENOMEM;
    }
    for (uint32_t i = 0; b->zone && i < n; i++)
        if (b->zone[i] < 0 || (uint64_t)b->zone[i] >= b->nzones) {
            free(sub), free(cnt), free(blocked);
            return -EINVAL;
        }
    uint32_t done = 0, inflight = 0, lo = 0, epoch = 0;
    int fatal = 0;
    while (done < n) {
        epoch++;
        for (uint32_t i = lo; !fatal && i < n && inflight < qd; i++) {
            if (sub[i])
                continue;
            if (b->serial && b->zone) {
                uint32_t k = (uint32_t)b->zone[i];
                if (cnt[k] > 0 || blocked[k] == epoch) {   /* keep each zone's writes in order */
                    blocked[k] = epoch;
                    continue;
                }
            }
            struct io_uring_sqe *sqe = io_uring_get_sqe(&e->ring);
            if (!sqe)
                break;
            b->prep(e, sqe, i, b->ctx);
            io_uring_sqe_set_data64(sqe, i);
            sub[i] = 1;
            inflight++;
            if (inflight > e->st.max_in_flight)
                e->st.max_in_flight = inflight;
            if (b->zone) {
                uint32_t k = (uint32_t)b->zone[i];
                if (++cnt[k] > e->st.max_appends_per_zone && b->count_appends)
                    e->st.max_appends_per_zone = cnt[k];
            }
        }
        while (lo < n && sub[lo])
            lo++;
        if (inflight == 0) {              /* a ring failure left requests unsubmitted */
            for (uint32_t i = 0; i < n; i++)
                if (!sub[i])
                    b->res[i] = fatal ? fatal : -EIO, b->done_ns[i] = now_ns();
            break;
        }
        if (!fatal) {
            int r = io_uring_submit_and_wait(&e->ring, 1);
            e->st.submit_calls++;
            if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
                fatal = r;                /* stop submitting; drain what is in flight */
        }
        if (fatal) {
            struct io_uring_cqe *c;
            int r = io_uring_wait_cqe(&e->ring, &c);
            if (r < 0 && r != -EINTR) {   /* the ring is unusable: nothing more can be reaped */
                for (uint32_t i = 0; i < n; i++)
                    if (b->res[i] == INT32_MIN)
                        b->res[i] = fatal, b->done_ns[i] = now_ns();
                break;
            }
        }
        unsigned head, seen = 0;
        struct io_uring_cqe *cqe;
        int64_t t = now_ns();
        io_uring_for_each_cqe(&e->ring, head, cqe) {
            uint32_t i = (uint32_t)cqe->user_data;
            b->res[i] = cqe->res;
            if (b->res64)
                b->res64[i] = cqe->big_cqe[0];
            b->done_ns[i] = t;
            if (b->zone)
                cnt[(uint32_t)b->zone[i]]--;
            seen++;
        }
        io_uring_cq_advance(&e->ring, seen);
        inflight -= seen;
        done += seen;
        e->st.requests += seen;
        if (b->count_appends)
            e->st.appends += seen;
        if (fatal && inflight == 0) {
            for (uint32_t i = 0; i < n; i++)
                if (!sub[i])
                    b->res[i] = fatal, b->done_ns[i] = t;
            break;
        }
    }
    e->st.batches++;
    free(sub), free(cnt), free(blocked);
    return fatal;
}

struct rw_ctx {
    int fd, write, fixed;
    uint8_t *buf;
    const int64_t *offs, *lens, *bufoff;
};

static void prep_rw(ur_engine *e, struct io_uring_sqe *sqe, uint32_t i, const void *vctx)
{
    const struct rw_ctx *c = vctx;
    (void)e;
    void *p = c->buf + c->bufoff[i];
    unsigned len = (unsigned)c->lens[i];
    if (c->fixed && c->write)
        io_uring_prep_write_fixed(sqe, c->fd, p, len, (__u64)c->offs[i], 0);
    else if (c->fixed)
        io_uring_prep_read_fixed(sqe, c->fd, p, len, (__u64)c->offs[i], 0);
    else if (c->write)
        io_uring_prep_write(sqe, c->fd, p, len, (__u64)c->offs[i]);
    else
        io_uring_prep_read(sqe, c->fd, p, len, (__u64)c->offs[i]);
}

/* prefix sums of lens (the requests' places in the buffer); NULL on overflow or a bad length */
static int64_t *buffer_offsets(const int64_t *lens, uint32_t n, uint64_t *total)
{
    int64_t *pos = malloc((n ? n : 1) * sizeof *pos);
    uint64_t s = 0;
    for (uint32_t i = 0; pos && i < n; i++) {
        if (lens[i] <= 0 || lens[i] > 0x7fffffff) {
            free(pos);
            return NULL;
        }
        pos[i] = (int64_t)s;
        s += (uint64_t)lens[i];
    }
    *total = s;
    return pos;
}

int ur_rw(ur_engine *e, int fd, int write, uint8_t *buf, const int64_t *offs, const int64_t *lens,
          uint32_t n, uint32_t qd, const int64_t *zone, uint32_t nzones, int32_t *res, int64_t *done_ns)
{
    uint64_t total = 0;
    int64_t *bufoff = buffer_offsets(lens, n, &total);
    if (!bufoff)
        return -EINVAL;
    struct rw_ctx c = {.fd = fd, .write = !!write, .buf = buf, .offs = offs, .lens = lens, .bufoff = bufoff};
    if (ur_fixed(e) && total && total <= MAX_FIXED_BYTES && set_slot(e, buf, total) == 0)
        c.fixed = 1;
    struct batch b = {.n = n, .qd = qd, .zone = zone, .nzones = nzones, .serial = write && zone != NULL,
                      .prep = prep_rw, .ctx = &c, .res = res, .done_ns = done_ns};
    for (uint32_t i = 0; i < n; i++)
        res[i] = INT32_MIN;
    int r = run(e, &b);
    if (c.fixed) {
        e->st.fixed_batches++;
        set_slot(e, NULL, 0);          /* unpin: the caller's buffer may go away */
    }
    free(bufoff);
    return r;
}

struct append_ctx {
    int fd;
    uint32_t nsid, lba_size;
    uint64_t zone_lbas;
    const uint64_t *addr;
    const int64_t *lens, *zone;
};

static void prep_append(ur_engine *e, struct io_uring_sqe *sqe, uint32_t i, const void *vctx)
{
    const struct append_ctx *c = vctx;
    (void)e;
    memset(sqe, 0, 2 * sizeof *sqe);              /* a 128-byte SQE: the command lives in its tail */
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = c->fd;
    sqe->cmd_op = NVME_URING_CMD_IO;
    struct nvme_uring_cmd *cmd = (struct nvme_uring_cmd *)sqe->cmd;
    uint64_t zslba = (uint64_t)c->zone[i] * c->zone_lbas;
    cmd->opcode = 0x7d;                            /* Zone Append */
    cmd->nsid = c->nsid;
    cmd->addr = c->addr[i];
    cmd->data_len = (uint32_t)c->lens[i];
    cmd->cdw10 = (uint32_t)(zslba & 0xffffffffu);
    cmd->cdw11 = (uint32_t)(zslba >> 32);
    cmd->cdw12 = (uint32_t)(c->lens[i] / c->lba_size) - 1;   /* NLB, 0's based */
}

int ur_zone_append(ur_engine *e, int ngfd, uint32_t nsid, uint32_t lba_size, uint64_t zone_lbas,
                   const uint64_t *addr, const int64_t *lens, const int64_t *zone, uint32_t nzones,
                   uint32_t n, uint32_t qd, int32_t *res, uint64_t *alba, int64_t *done_ns)
{
    if (!e->big)
        return -EOPNOTSUPP;
    if (!lba_size || !zone || !nzones)
        return -EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (lens[i] <= 0 || lens[i] % lba_size || lens[i] > UINT32_MAX || !addr[i])
            return -EINVAL;
    struct append_ctx c = {.fd = ngfd, .nsid = nsid, .lba_size = lba_size, .zone_lbas = zone_lbas,
                           .addr = addr, .lens = lens, .zone = zone};
    struct batch b = {.n = n, .qd = qd, .zone = zone, .nzones = nzones, .serial = 0, .count_appends = 1,
                      .prep = prep_append, .ctx = &c, .res = res, .res64 = alba, .done_ns = done_ns};
    for (uint32_t i = 0; i < n; i++)
        res[i] = INT32_MIN;
    return run(e, &b);
}

int ur_append_run(ur_engine *e, int ngfd, uint32_t nsid, uint32_t lba_size, uint64_t zone_lbas,
                  const uint8_t *seg0, int64_t seg0_bytes, const uint8_t *seg1, int64_t seg1_bytes,
                  const int64_t *lens, int64_t max_len, const int64_t *zone, uint32_t nzones,
                  uint32_t n, uint32_t qd, uint64_t expect_lba, int32_t *res, uint64_t *alba)
{
    if (n > UR_RUN_MAX)
        return -E2BIG;
    if (!n || !lba_size)
        return -EINVAL;
    uint64_t addr[UR_RUN_MAX];
    int64_t done_ns[UR_RUN_MAX];
    const uint8_t *seg[2] = {seg0, seg1};
    int64_t left[2] = {seg0_bytes, seg1_bytes};
    uint32_t k = 0;
    for (int s = 0; s < 2; s++) {            /* each buffer: whole requests back to back */
        if (left[s] < 0 || (left[s] && (!seg[s] || (uintptr_t)seg[s] % 4)))
            return -EINVAL;                  /* NVMe DMA needs dword alignment */
        uintptr_t pos = (uintptr_t)seg[s];
        while (left[s] > 0) {
            if (k == n || lens[k] <= 0 || lens[k] > max_len || lens[k] > left[s] || zone[k] < 0
                || (uint64_t)zone[k] >= nzones)
                return -EINVAL;
            addr[k] = pos;
            pos += (uintptr_t)lens[k];
            left[s] -= lens[k];
            k++;
        }
    }
    if (k != n)
        return -EINVAL;
    int r = ur_zone_append(e, ngfd, nsid, lba_size, zone_lbas, addr, lens, zone, nzones, n, qd, res, alba,
                           done_ns);
    if (r == -EINVAL || r == -EOPNOTSUPP)    /* refused before anything was sent */
        return r;                            /* (a ring failure shows in res: 0 below) */
    uint64_t expect = expect_lba;
    for (uint32_t i = 0; i < n; i++) {
        if (res[i] != 0 || alba[i] != expect)
            return 0;
        expect += (uint64_t)lens[i] / lba_size;
    }
    return 1;
}
