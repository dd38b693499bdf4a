/* The wire decoder (src/deploy/wire.h), what a server runs on every message a
 * client sends, and the per-client credential check (credential.h) every
 * request then passes: its token as the credential of the id it claims. The
 * input is the frame. */
#include "fuzz.h"

#include "deploy/credential.h"
#include "deploy/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fedc__msg m;
    if (fedc__wire_decode(data, size, (size_t)1 << 20, &m) != FEDC_OK) return 0;
    static const char *const keys[] = {"token", "client", "round", "exchange", "slot", "hash", "reason", "plan_hash"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *v = fedc__msg_field(&m, keys[i]);
        int64_t x;
        if (v) fuzz_sink += (unsigned)v[0];
        if (fedc__msg_int(&m, keys[i], -5, 5, &x) == FEDC_OK) fuzz_sink += (unsigned)x;
    }
    static const unsigned char key[FEDC__CREDENTIAL_KEY_BYTES] = {7};
    int64_t id;
    if (fedc__msg_int(&m, "client", 0, INT64_MAX, &id) == FEDC_OK)
        fuzz_sink += fedc__credential_verify(key, id, fedc__msg_field(&m, "token"));
    for (int i = 0; i < fedc_safetensors_count(m.body); i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(m.body, i);
        for (size_t k = 0; k < fedc_type_bytes(&e.type); k++) fuzz_sink += ((const unsigned char *)e.data)[k];
    }
    fedc__msg_free(&m);
    return 0;
}
