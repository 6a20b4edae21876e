/* CRC32C of recorded frames: see amd_crc.h. */
#include <string.h>
#include "amd_crc.h"

#define AMD_CRC_POLY 0x82F63B78u /* Castagnoli, reflected */
#define AMD_CRC_FRAME_HEADER 32
#define AMD_CRC_TYPE_OFFSET 6
#define AMD_CRC_TYPE_PAD 0
#define AMD_CRC_ENTRY 16

static uint32_t crc_table[8][256];
static int crc_ready = 0;
static int crc_hw = 0;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++)
    {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
        {
            c = (c >> 1) ^ (AMD_CRC_POLY & (0u - (c & 1u)));
        }
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
    {
        for (int t = 1; t < 8; t++)
        {
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
        }
    }
#if defined(__x86_64__)
    __builtin_cpu_init();
    crc_hw = __builtin_cpu_supports("sse4.2");
#endif
    __atomic_store_n(&crc_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t n)
{
    while (n >= 8)
    {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;
        c = crc_table[7][w & 0xFF] ^ crc_table[6][(w >> 8) & 0xFF] ^ crc_table[5][(w >> 16) & 0xFF] ^
            crc_table[4][(w >> 24) & 0xFF] ^ crc_table[3][(w >> 32) & 0xFF] ^ crc_table[2][(w >> 40) & 0xFF] ^
            crc_table[1][(w >> 48) & 0xFF] ^ crc_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
    {
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    }
    return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw_run(uint32_t c, const uint8_t *p, size_t n)
{
    uint64_t c64 = c;
    while (n >= 8)
    {
        uint64_t w;
        memcpy(&w, p, 8);
        c64 = __builtin_ia32_crc32di(c64, w);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c64;
    while (n--)
    {
        c = __builtin_ia32_crc32qi(c, *p++);
    }
    return c;
}
#endif

uint32_t amd_crc32c(uint32_t crc, const uint8_t *data, size_t length)
{
    if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
    {
        crc_init();
    }
    uint32_t c = ~crc;
#if defined(__x86_64__)
    if (crc_hw)
    {
        return ~crc_hw_run(c, data, length);
    }
#endif
    return ~crc_sw(c, data, length);
}

#define AMD_CRC_LANES 4 /* frames whose CRCs run interleaved: the crc32 instruction's latency is hidden */

typedef struct
{
    const uint8_t *p;
    size_t n;
    uint32_t c;
} crc_lane;

static void crc_lanes_sw(crc_lane *lanes, int count)
{
    for (int i = 0; i < count; i++)
    {
        lanes[i].c = ~crc_sw(~0u, lanes[i].p, lanes[i].n);
    }
}

#if defined(__x86_64__)
/* Up to AMD_CRC_LANES independent CRCs stepped together word by word while all have words left, then each
 * finished alone: one frame's CRC is a chain of dependent crc32 steps, several frames' chains overlap. */
__attribute__((target("sse4.2"))) static void crc_lanes_hw(crc_lane *lanes, int count)
{
    size_t common = lanes[0].n;
    for (int i = 1; i < count; i++)
    {
        common = lanes[i].n < common ? lanes[i].n : common;
    }
    common &= ~(size_t)7;
    uint64_t c[AMD_CRC_LANES] = {~0u, ~0u, ~0u, ~0u};
    if (count == AMD_CRC_LANES)
    {
        const uint8_t *p0 = lanes[0].p, *p1 = lanes[1].p, *p2 = lanes[2].p, *p3 = lanes[3].p;
        for (size_t k = 0; k < common; k += 8)
        {
            uint64_t w0, w1, w2, w3;
            memcpy(&w0, p0 + k, 8);
            memcpy(&w1, p1 + k, 8);
            memcpy(&w2, p2 + k, 8);
            memcpy(&w3, p3 + k, 8);
            c[0] = __builtin_ia32_crc32di(c[0], w0);
            c[1] = __builtin_ia32_crc32di(c[1], w1);
            c[2] = __builtin_ia32_crc32di(c[2], w2);
            c[3] = __builtin_ia32_crc32di(c[3], w3);
        }
    }
    else
    {
        common = 0;
    }
    for (int i = 0; i < count; i++)
    {
        lanes[i].c = ~crc_hw_run((uint32_t)c[i], lanes[i].p + common, lanes[i].n - common);
    }
}
#endif

static void crc_lanes(crc_lane *lanes, int count)
{
#if defined(__x86_64__)
    if (crc_hw)
    {
        crc_lanes_hw(lanes, count);
        return;
    }
#endif
    crc_lanes_sw(lanes, count);
}

int32_t amd_frame_checksums(
    const uint8_t *block, int32_t length, int64_t position, uint8_t *out, int32_t capacity)
{
    if (!__atomic_load_n(&crc_ready, __ATOMIC_ACQUIRE))
    {
        crc_init();
    }
    crc_lane lanes[AMD_CRC_LANES];
    int32_t lane_entry[AMD_CRC_LANES];
    int pending = 0;
    int32_t offset = 0;
    int32_t count = 0;
    for (;;)
    {
        int more = count < capacity && offset + AMD_CRC_FRAME_HEADER <= length;
        int32_t frame_length = 0;
        int32_t covered = 0;
        if (more)
        {
            uint16_t type;
            memcpy(&frame_length, block + offset, 4);
            memcpy(&type, block + offset + AMD_CRC_TYPE_OFFSET, 2);
            covered = type == AMD_CRC_TYPE_PAD ? AMD_CRC_FRAME_HEADER : frame_length;
            more = frame_length > 0 && offset + covered <= length;
        }
        if (more)
        {
            const int64_t frame_position = position + offset;
            uint8_t *entry = out + (size_t)count * AMD_CRC_ENTRY;
            memcpy(entry, &frame_position, 8);
            memcpy(entry + 8, &frame_length, 4);
            lanes[pending] = (crc_lane){block + offset, (size_t)covered, 0};
            lane_entry[pending++] = count++;
            offset += (frame_length + 31) & ~31;
        }
        if (pending == AMD_CRC_LANES || (!more && pending > 0))
        {
            crc_lanes(lanes, pending);
            for (int i = 0; i < pending; i++)
            {
                memcpy(out + (size_t)lane_entry[i] * AMD_CRC_ENTRY + 12, &lanes[i].c, 4);
            }
            pending = 0;
        }
        if (!more)
        {
            return count;
        }
    }
}
