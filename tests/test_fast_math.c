/* Tests for fast_math.h's exp: the IEEE answers at the infinities and NaN (which
 * once converted NaN to int, undefined behaviour), and the same bits as before
 * that fix for every finite input, in and out of the clamped range. */
#include "harness.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/fast_math.h"
#include "kernels/kernels.h"

/* The exp before the fix, verbatim but for its name: the reference for finite x. */
static float old_expf(float x) {
    x = x < -87.3f ? -87.3f : x;
    x = x > 88.3f ? 88.3f : x;
    float z = x * 1.44269504088896341f + 126.5f;
    int32_t n = (int32_t)z - 126;
    float fn = (float)n;
    float r = x - fn * 0.693359375f + fn * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = (n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_exp_special(void) {
    CHECK(fedc__fast_expf(-INFINITY) == 0.0f && !signbit(fedc__fast_expf(-INFINITY)));
    CHECK(isinf(fedc__fast_expf(INFINITY)) && fedc__fast_expf(INFINITY) > 0);
    CHECK(isnan(fedc__fast_expf(NAN)));
    CHECK(isnan(fedc__fast_expf(-NAN)));
    CHECK(fedc__fast_tanhf(INFINITY) == 1.0f && fedc__fast_tanhf(-INFINITY) == -1.0f);
    CHECK(isnan(fedc__fast_tanhf(NAN)));
    /* The largest finite floats still clamp, as before: a normal float. */
    CHECK(bits_of(fedc__fast_expf(FLT_MAX)) == bits_of(old_expf(88.3f)));
    CHECK(bits_of(fedc__fast_expf(-FLT_MAX)) == bits_of(old_expf(-87.3f)));
    CHECK(fedc__fast_expf(-FLT_MAX) > 0.0f);
}

/* One float bit pattern in 4093 (a prime, so every exponent and many mantissas
 * are hit), both signs: the same bits as the old exp for every finite one. */
static void test_exp_finite_bits_unchanged(void) {
    int64_t checked = 0, differ = 0;
    for (uint64_t u = 0; u <= UINT32_MAX; u += 4093) {
        uint32_t b = (uint32_t)u;
        float x;
        memcpy(&x, &b, sizeof x);
        if (!isfinite(x)) continue;
        checked++;
        if (bits_of(fedc__fast_expf(x)) != bits_of(old_expf(x)) && differ++ == 0)
            fedc_test_fail(__FILE__, __LINE__, "exp(%.9g): 0x%08x, before 0x%08x", x, bits_of(fedc__fast_expf(x)),
                           bits_of(old_expf(x)));
    }
    CHECK_EQ_INT(differ, 0);
    CHECK(checked > 1000000);
}

/* Through kernels that use it (the vectorised loops): a -inf logit has
 * probability 0 exactly (the old exp gave e^-87.3), and a NaN logit makes the
 * row's loss NaN. */
static void test_softmax_xent_infinite_logits(void) {
    const fedc__kernels *k = &fedc__kernels_fast;
    float logits[2 * 20], loss[2], scale[2] = {1, 1}, dlogits[2 * 20];
    int32_t labels[2] = {0, 1};
    for (int i = 0; i < 40; i++) logits[i] = (float)(i % 20) * 0.1f;
    logits[1] = -INFINITY; /* row 0, class 1 */
    logits[20 + 5] = NAN;  /* row 1 */
    CHECK_OK(k->softmax_xent(FEDC_F32, 2, 20, logits, labels, NULL, loss));
    CHECK(isfinite(loss[0]) && loss[0] > 0);
    CHECK(isnan(loss[1]));
    CHECK_OK(k->softmax_xent_grad(FEDC_F32, 2, 20, logits, labels, scale, dlogits));
    CHECK(dlogits[1] == 0.0f);
    CHECK(dlogits[0] < 0 && dlogits[2] > 0);
}

int main(int argc, char **argv) {
    static const fedc_test tests[] = {
        {"exp_special", test_exp_special},
        {"exp_finite_bits_unchanged", test_exp_finite_bits_unchanged},
        {"softmax_xent_infinite_logits", test_softmax_xent_infinite_logits},
    };
    return fedc_test_main(argc, argv, tests, FEDC_COUNT_OF(tests));
}
