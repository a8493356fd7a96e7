/* fuzz.h - fuzz targets: built for libFuzzer with clang (make fuzz), and
 * replayed over their corpus by replay.c in make check */
#ifndef CGPOOL_FUZZ_H
#define CGPOOL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
