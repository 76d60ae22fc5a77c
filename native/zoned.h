/* Linux zoned block device and NVMe passthrough helpers: the zswap_host._zoned extension, used by
 * zswap_host/devices/blkzoned.py, direct_io.py, linux_zoned.py, linux_zone_append.py and linux_block.py.
 * Every function returns >= 0 on success and -errno on failure (nvme_* may also return a positive
 * NVMe status code: the command reached the device and it refused). Sizes are in 512-byte sectors
 * for the blkzoned calls (the kernel's unit) and bytes elsewhere. */
#ifndef ZSWAP_ZONED_H
#define ZSWAP_ZONED_H
#include <stdint.h>
#include <stddef.h>

/* Report up to n zones starting at the zone that holds `sector`. Arrays are filled per zone;
 * *flags gets the report flags (bit 0: capacity valid). Returns the number of zones reported. */
int zd_report_zones(int fd, uint64_t sector, uint32_t n, uint64_t *start, uint64_t *len,
                    uint64_t *wp, uint64_t *cap, uint8_t *cond, uint8_t *type, uint32_t *flags);
/* op: 0 reset, 1 open, 2 close, 3 finish (BLKRESETZONE/BLKOPENZONE/BLKCLOSEZONE/BLKFINISHZONE). */
int zd_zone_mgmt(int fd, int op, uint64_t sector, uint64_t nr_sectors);
int zd_nr_zones(int fd);                               /* BLKGETNRZONES */
int64_t zd_size_bytes(int fd);                         /* BLKGETSIZE64 */
int zd_logical_block_size(int fd);                     /* BLKSSZGET */
int zd_nvme_nsid(int fd);                              /* NVME_IOCTL_ID */
/* NVMe Zone Append (opcode 0x7d) of `len` bytes (whole logical blocks of `lba_size`) to the zone
 * whose first LBA is zslba; *alba receives the LBA the device wrote the data at. */
int zd_nvme_zone_append(int fd, uint32_t nsid, uint64_t zslba, const void *buf, uint32_t len,
                        uint32_t lba_size, uint64_t *alba);
/* pwrite/pread that loop over short transfers; return bytes done or -errno (first error). */
int64_t zd_pwrite(int fd, const void *buf, size_t len, int64_t off);
int64_t zd_pread(int fd, void *buf, size_t len, int64_t off);
#endif
