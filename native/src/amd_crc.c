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

/* CRC combination: crc(A || B) = crc(A) * x^(8 |B|) + crc(B) in GF(2)[x] mod the polynomial, for CRCs with
 * the usual pre- and post-inversion. Polynomials are reflected: bit 31 is x^0. */
static uint32_t x_pow_2k[32]; /* x^(2^k) mod P, filled by crc_init */

static uint32_t gf_multiply(uint32_t a, uint32_t b)
{
    uint32_t product = 0;
    for (uint32_t bit = 1u << 31; bit != 0; bit >>= 1)
    {
        if (a & bit)
        {
            product ^= b;
        }
        b = (b & 1u) ? (b >> 1) ^ AMD_CRC_POLY : b >> 1;
    }
    return product;
}

/* x^(8 n) mod P: the factor that moves a CRC past n bytes. */
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
    x_pow_2k[0] = 1u << 30; /* x^1 */
    for (int k = 1; k < 32; k++)
    {
        x_pow_2k[k] = gf_multiply(x_pow_2k[k - 1], x_pow_2k[k - 1]);
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

static uint32_t shift_factor(size_t n)
{
    uint32_t factor = 1u << 31; /* x^0 */
    for (int k = 3; n != 0; n >>= 1, k++)
    {
        if (n & 1u)
        {
            factor = gf_multiply(x_pow_2k[k & 31], factor);
        }
    }
    return factor;
}

static uint32_t crc_combine(uint32_t crc_a, uint32_t crc_b, size_t length_b)
{
    return gf_multiply(shift_factor(length_b), crc_a) ^ crc_b;
}

#define AMD_CRC_SPLIT_MIN 3072 /* below this one chain is as fast as three and their combination */

#if defined(__x86_64__)
/* A long run as three chains over its thirds, stepped together, then combined: one chain waits out the crc32
 * instruction's latency each step, three overlap (about three times the bytes per cycle). c is pre-inverted. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw_split(uint32_t c, const uint8_t *p, size_t n)
{
    const size_t part = (n / 3) & ~(size_t)7;
    uint64_t c0 = c, c1 = 0xFFFFFFFFu, c2 = 0xFFFFFFFFu;
    const uint8_t *p1 = p + part, *p2 = p + 2 * part;
    for (size_t k = 0; k < part; k += 8)
    {
        uint64_t w0, w1, w2;
        memcpy(&w0, p + k, 8);
        memcpy(&w1, p1 + k, 8);
        memcpy(&w2, p2 + k, 8);
        c0 = __builtin_ia32_crc32di(c0, w0);
        c1 = __builtin_ia32_crc32di(c1, w1);
        c2 = __builtin_ia32_crc32di(c2, w2);
    }
    const uint32_t last = ~crc_hw_run((uint32_t)c2, p2 + part, n - 3 * part);
    const uint32_t first_two = crc_combine(~(uint32_t)c0, ~(uint32_t)c1, part);
    return ~crc_combine(first_two, last, n - 2 * part);
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
        return length >= AMD_CRC_SPLIT_MIN ? ~crc_hw_split(c, data, length) : ~crc_hw_run(c, data, length);
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

int32_t amd_check_checksums(
    const uint8_t *data, int64_t length, int64_t base, const uint8_t *entries, int32_t count)
{
    for (int32_t i = 0; i < count; i++)
    {
        const uint8_t *entry = entries + (size_t)i * AMD_CRC_ENTRY;
        int64_t position;
        int32_t entry_length;
        uint32_t expected;
        memcpy(&position, entry, 8);
        memcpy(&entry_length, entry + 8, 4);
        memcpy(&expected, entry + 12, 4);
        const int64_t offset = position - base;
        if (offset < 0 || entry_length <= 0 || offset + AMD_CRC_FRAME_HEADER > length)
        {
            return i;
        }
        uint16_t type;
        memcpy(&type, data + offset + AMD_CRC_TYPE_OFFSET, 2);
        const int64_t covered = type == AMD_CRC_TYPE_PAD ? AMD_CRC_FRAME_HEADER : entry_length;
        if (offset + covered > length || amd_crc32c(0, data + offset, (size_t)covered) != expected)
        {
            return i;
        }
    }
    return count;
}
