/* Payloads of recorded frames gathered into one buffer (amd_gather.h). */
#include "amd_gather.h"

#include <string.h>

enum { AMD_GATHER_HEADER = 32 };

int64_t amd_gather_payloads(
    const uint8_t *base, int64_t size, const int64_t *offsets, const int64_t *lengths, int64_t count,
    uint8_t *out, int64_t capacity)
{
    int64_t total = 0;
    for (int64_t i = 0; i < count; i++)
    {
        const int64_t offset = offsets[i], length = lengths[i];
        if (offset < 0 || length < AMD_GATHER_HEADER || offset > size - length)
        {
            return -1;
        }
        total += length - AMD_GATHER_HEADER;
    }
    if (total > capacity)
    {
        return -1;
    }
    uint8_t *to = out;
    for (int64_t i = 0; i < count; i++)
    {
        const int64_t payload = lengths[i] - AMD_GATHER_HEADER;
        memcpy(to, base + offsets[i] + AMD_GATHER_HEADER, (size_t)payload);
        to += payload;
    }
    return total;
}
