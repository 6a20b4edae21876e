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

int32_t amd_frame_checksums(
    const uint8_t *block, int32_t length, int64_t position, uint8_t *out, int32_t capacity)
{
    int32_t offset = 0;
    int32_t count = 0;
    while (count < capacity && offset + AMD_CRC_FRAME_HEADER <= length)
    {
        int32_t frame_length;
        uint16_t type;
        memcpy(&frame_length, block + offset, 4);
        memcpy(&type, block + offset + AMD_CRC_TYPE_OFFSET, 2);
        if (frame_length <= 0)
        {
            break;
        }
        const int32_t covered = type == AMD_CRC_TYPE_PAD ? AMD_CRC_FRAME_HEADER : frame_length;
        if (offset + covered > length)
        {
            break;
        }
        const int64_t frame_position = position + offset;
        const uint32_t crc = amd_crc32c(0, block + offset, (size_t)covered);
        uint8_t *entry = out + (size_t)count * AMD_CRC_ENTRY;
        memcpy(entry, &frame_position, 8);
        memcpy(entry + 8, &frame_length, 4);
        memcpy(entry + 12, &crc, 4);
        ++count;
        offset += (frame_length + 31) & ~31;
    }
    return count;
}
