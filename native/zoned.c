#define _GNU_SOURCE
#include "zoned.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/fs.h>
#include <linux/blkzoned.h>
#include <linux/nvme_ioctl.h>

int zd_report_zones(int fd, uint64_t sector, uint32_t n, uint64_t *start, uint64_t *len,
                    uint64_t *wp, uint64_t *cap, uint8_t *cond, uint8_t *type, uint32_t *flags)
{
    size_t sz = sizeof(struct blk_zone_report) + (size_t)n * sizeof(struct blk_zone);
    struct blk_zone_report *r = calloc(1, sz);
    if (!r)
        return -ENOMEM;
    r->sector = sector;
    r->nr_zones = n;
    if (ioctl(fd, BLKREPORTZONE, r) < 0) {
        int e = errno;
        free(r);
        return -e;
    }
    uint32_t got = r->nr_zones;
    for (uint32_t i = 0; i < got; i++) {
        struct blk_zone *z = &r->zones[i];
        start[i] = z->start;
        len[i] = z->len;
        wp[i] = z->wp;
        cap[i] = (r->flags & BLK_ZONE_REP_CAPACITY) ? z->capacity : z->len;
        cond[i] = z->cond;
        type[i] = z->type;
    }
    *flags = r->flags;
    free(r);
    return (int)got;
}

int zd_zone_mgmt(int fd, int op, uint64_t sector, uint64_t nr_sectors)
{
    static const unsigned long req[] = {BLKRESETZONE, BLKOPENZONE, BLKCLOSEZONE, BLKFINISHZONE};
    if (op < 0 || op > 3)
        return -EINVAL;
    struct blk_zone_range range = {.sector = sector, .nr_sectors = nr_sectors};
    return ioctl(fd, req[op], &range) < 0 ? -errno : 0;
}

int zd_nr_zones(int fd)
{
    __u32 n = 0;
    return ioctl(fd, BLKGETNRZONES, &n) < 0 ? -errno : (int)n;
}

int64_t zd_size_bytes(int fd)
{
    uint64_t n = 0;
    return ioctl(fd, BLKGETSIZE64, &n) < 0 ? -errno : (int64_t)n;
}

int zd_logical_block_size(int fd)
{
    int n = 0;
    return ioctl(fd, BLKSSZGET, &n) < 0 ? -errno : n;
}

int zd_nvme_nsid(int fd)
{
    int r = ioctl(fd, NVME_IOCTL_ID);
    return r < 0 ? -errno : r;
}

int zd_nvme_zone_append(int fd, uint32_t nsid, uint64_t zslba, const void *buf, uint32_t len,
                        uint32_t lba_size, uint64_t *alba)
{
    if (!lba_size || !len || len % lba_size)
        return -EINVAL;
    struct nvme_passthru_cmd64 cmd;
    memset(&cmd, 0, sizeof cmd);
    cmd.opcode = 0x7d;                      /* Zone Append */
    cmd.nsid = nsid;
    cmd.addr = (uint64_t)(uintptr_t)buf;
    cmd.data_len = len;
    cmd.cdw10 = (uint32_t)(zslba & 0xffffffffu);
    cmd.cdw11 = (uint32_t)(zslba >> 32);
    cmd.cdw12 = len / lba_size - 1;         /* NLB, 0's based */
    int r = ioctl(fd, NVME_IOCTL_IO64_CMD, &cmd);
    if (r < 0)
        return -errno;
    if (r > 0)
        return r;                           /* NVMe status (SCT/SC, maybe DNR/More bits) */
    *alba = cmd.result;
    return 0;
}

int64_t zd_pwrite(int fd, const void *buf, size_t len, int64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, off + (int64_t)done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            return -EIO;
        done += (size_t)n;
    }
    return (int64_t)done;
}

int64_t zd_pread(int fd, void *buf, size_t len, int64_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, off + (int64_t)done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (int64_t)done;
}
