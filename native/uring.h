/* io_uring I/O engine for the Linux device backends: the zswap_host._uring extension, built on
 * liburing (Debian's liburing-dev), used by zswap_host/devices/io_engine.py.
 *
 * One engine = one ring. A batch is n requests over ONE caller buffer holding their data back to
 * back (request i's bytes start at the sum of lens[0..i-1]); at most qd requests are in flight; the
 * call returns when all n have completed, each with its own result. Nothing is copied: the kernel
 * moves data straight between the device and the caller's buffer (registered for the batch when
 * the ring allows it, so pages are pinned once per batch instead of once per request).
 *
 * Results: res[i] >= 0 bytes moved (reads and writes) or 0 (append done); res[i] < 0 is -errno;
 * for appends res[i] > 0 is the NVMe status (SCT << 8 | SC, with the DNR/More bits) the device
 * answered. done_ns[i] is CLOCK_MONOTONIC (what Python's time.perf_counter reads on Linux) in
 * nanoseconds when the completion was reaped. A call returns 0, or -errno when the ring itself
 * failed (then every request not completed has res[i] = that -errno; none is left in flight). */
#ifndef ZSWAP_URING_H
#define ZSWAP_URING_H
#include <stdint.h>
#include <stddef.h>

/* cffi:begin */
typedef struct ur_engine ur_engine;

/* counters since ur_open (monotonic; the Python side reports them in `engine_stats()`) */
typedef struct {
    uint64_t batches;                /* calls of ur_rw / ur_zone_append */
    uint64_t requests;               /* requests completed */
    uint64_t submit_calls;           /* io_uring_submit_and_wait calls (syscalls that submitted or waited) */
    uint64_t fixed_batches;          /* batches whose buffer was registered (READ_FIXED / WRITE_FIXED) */
    uint64_t max_in_flight;          /* most requests in flight at once */
    uint64_t appends;                /* zone appends completed */
    uint64_t max_appends_per_zone;   /* most appends in flight to one zone at once */
} ur_stats;

/* Open a ring of `depth` entries (1..4096). passthrough=1 makes 128-byte SQEs and 32-byte CQEs
 * (needed by NVMe passthrough, ur_zone_append). Registered buffers are used when the kernel
 * supports a sparse buffer table (Linux >= 5.19). Returns 0 or -errno (ENOSYS: no io_uring;
 * EPERM: io_uring disabled by kernel.io_uring_disabled or a seccomp policy). */
int ur_open(unsigned depth, int passthrough, ur_engine **out);
void ur_close(ur_engine *e);
void ur_get_stats(const ur_engine *e, ur_stats *out);
/* 1 when batches use registered buffers; ur_set_fixed(e, 0) turns them off (A/B measurements). */
int ur_fixed(const ur_engine *e);
void ur_set_fixed(ur_engine *e, int on);

/* Read (write=0) or write (write=1) n ranges: request i moves lens[i] bytes between the file
 * offset offs[i] of fd and the buffer. zone (may be NULL): a key per request; writes with the same
 * key are issued in order, one in flight at a time (the zoned-write rule mq-deadline enforces). */
int ur_rw(ur_engine *e, int fd, int write, uint8_t *buf, const int64_t *offs, const int64_t *lens,
          uint32_t n, uint32_t qd, const int64_t *zone, uint32_t nzones, int32_t *res, int64_t *done_ns);

/* NVMe Zone Append (opcode 0x7d) of n requests through IORING_OP_URING_CMD on the namespace's
 * generic char device (/dev/ngXnY, Linux >= 5.19): request i appends lens[i] bytes (whole logical
 * blocks of lba_size) from address addr[i] (dword aligned: NVMe DMA) to zone zone[i] (first LBA
 * zone[i] * zone_lbas). The units may lie anywhere in memory: a batch gathers them without a copy.
 * Several appends to one zone may be in flight. alba[i] gets the LBA the device wrote request i at
 * (when res[i] == 0). -EINVAL: a length not whole blocks, or a null address. */
int ur_zone_append(ur_engine *e, int ngfd, uint32_t nsid, uint32_t lba_size, uint64_t zone_lbas,
                   const uint64_t *addr, const int64_t *lens, const int64_t *zone, uint32_t nzones,
                   uint32_t n, uint32_t qd, int32_t *res, uint64_t *alba, int64_t *done_ns);

/* The store's usual batch of write units in one call (each Python step costs tens of microseconds
 * in a TCG guest): ur_zone_append of n <= UR_RUN_MAX requests cut back to back from two buffers
 * (seg0: seg0_bytes, then seg1: seg1_bytes; a buffer of 0 bytes is skipped; each holds whole
 * requests, each at most max_len bytes). Returns 1 when every append landed back to back in
 * request order from LBA expect_lba; 0 when they completed otherwise (res, alba as
 * ur_zone_append; a ring failure shows there too); -EINVAL (buffers not dword aligned or not
 * holding the requests exactly, a bad length or zone), -E2BIG (n too large) or -EOPNOTSUPP with
 * nothing sent. */
#define UR_RUN_MAX 64
int ur_append_run(ur_engine *e, int ngfd, uint32_t nsid, uint32_t lba_size, uint64_t zone_lbas,
                  const uint8_t *seg0, int64_t seg0_bytes, const uint8_t *seg1, int64_t seg1_bytes,
                  const int64_t *lens, int64_t max_len, const int64_t *zone, uint32_t nzones,
                  uint32_t n, uint32_t qd, uint64_t expect_lba, int32_t *res, uint64_t *alba);
/* cffi:end */
#endif
