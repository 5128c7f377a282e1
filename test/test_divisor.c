/* The kernels' division by a divisor the host makes (kernels/common/divisor.h)
 * against the division operator: every divisor up to 256 (block_m's range,
 * and every CTA group size), every numerator below 2^20, the last 2^16
 * below 2^31, the multiples and their neighbours across the whole range,
 * and large divisors up to the 2^30 the header allows. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "common/divisor.h"

enum { kMaxSmallDivisor = 256 };

static void check_range(alphamoe_divisor v, uint32_t d, uint32_t from, uint32_t to) {
    for (uint32_t n = from; n < to; ++n) {
        const uint32_t got = alphamoe_divide(n, v);
        if (got != n / d) fail_msg("%u / %u: got %u, expected %u", n, d, got, n / d);
    }
}

static void small_numerators(void **state) {
    (void)state;
    for (uint32_t d = 1; d <= kMaxSmallDivisor; ++d) check_range(alphamoe_divisor_of(d), d, 0, UINT32_C(1) << 20);
}

static void numerators_below_2_31(void **state) {
    (void)state;
    const uint32_t top = UINT32_C(1) << 31;
    for (uint32_t d = 1; d <= kMaxSmallDivisor; ++d) check_range(alphamoe_divisor_of(d), d, top - (1u << 16), top);
}

static void multiples_and_neighbours(void **state) {
    (void)state;
    for (uint32_t d = 1; d <= kMaxSmallDivisor; ++d) {
        const alphamoe_divisor v = alphamoe_divisor_of(d);
        /* Every 997th multiple (a prime stride, so the quotients' low bits vary). */
        for (uint64_t q = 1; q * d < (UINT64_C(1) << 31); q += 997) {
            const uint32_t n = (uint32_t)(q * d);
            check_range(v, d, n - 1, n + 1 < (UINT32_C(1) << 31) ? n + 2 : n + 1);
        }
    }
}

static void large_divisors(void **state) {
    (void)state;
    const uint32_t top = UINT32_C(1) << 31;
    /* Each power of two up to 2^30, its neighbours, and a few odd ones. */
    uint32_t divisors[3 * 31 + 3];
    int count = 0;
    for (uint32_t l = 1; l <= 30; ++l) {
        divisors[count++] = (UINT32_C(1) << l) - 1;
        divisors[count++] = UINT32_C(1) << l;
        divisors[count++] = (UINT32_C(1) << l) + 1;
    }
    divisors[count++] = 1000003u;
    divisors[count++] = 715827883u;
    divisors[count++] = (UINT32_C(1) << 30) - 3u;
    for (int i = 0; i < count; ++i) {
        const uint32_t d = divisors[i];
        if (d == 0 || d > (UINT32_C(1) << 30)) continue;
        const alphamoe_divisor v = alphamoe_divisor_of(d);
        check_range(v, d, 0, 4096);
        check_range(v, d, top - 4096, top);
        for (uint64_t q = 1; q * d < top; q = q * 3 + 1) {
            const uint32_t n = (uint32_t)(q * d);
            check_range(v, d, n - 1, n + 1 < top ? n + 2 : n + 1);
        }
    }
}

static void powers_of_two_are_shifts(void **state) {
    (void)state;
    for (uint32_t l = 0; l <= 8; ++l) {
        const alphamoe_divisor v = alphamoe_divisor_of(UINT32_C(1) << l);
        assert_int_equal(v.magic, UINT32_C(1) << 31);
        assert_int_equal(v.shift, l);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_numerators),
        cmocka_unit_test(numerators_below_2_31),
        cmocka_unit_test(multiples_and_neighbours),
        cmocka_unit_test(large_divisors),
        cmocka_unit_test(powers_of_two_are_shifts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
