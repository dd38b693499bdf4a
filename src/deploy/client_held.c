/* The values a deployment client holds by name during a round (client.h): the
 * broadcast values of its task (the process's shared copy), what its phases
 * computed, and its state. Between tasks it holds only its state. */
#include <string.h>

#include "deploy/client.h"

held *fedc__client_find(client *c, const char *name) {
    for (int i = 0; i < c->nheld; i++)
        if (!strcmp(c->held[i].name, name)) return &c->held[i];
    return NULL;
}

void fedc__client_unhold(client *c, held *h) {
    if (h->shared) fedc__shared_release(c->shared, h->shared);
    else fedc_free(h->data);
    h->data = NULL, h->shared = NULL, h->bytes = 0;
}

/* The entry of `name`, made if missing. */
static held *held_entry(client *c, const char *name) {
    held *h = fedc__client_find(c, name);
    if (!h) {
        if (c->nheld == c->cap) {
            int cap = c->cap ? 2 * c->cap : 16;
            held *t = fedc_realloc(c->held, (size_t)cap * sizeof *t);
            if (!t) return NULL;
            c->held = t, c->cap = cap;
        }
        h = &c->held[c->nheld++];
        memset(h, 0, sizeof *h);
        snprintf(h->name, sizeof h->name, "%s", name);
    }
    return h;
}

/* Keeps a copy of `data` as `name` (replacing an older one). */
fedc_status fedc__client_hold(client *c, const char *name, fedc_type type, const void *data) {
    held *h = held_entry(c, name);
    size_t bytes = fedc_type_bytes(&type);
    if (!h) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    if (h->shared) fedc__client_unhold(c, h);
    if (h->bytes != bytes || !h->data) {
        fedc_free(h->data);
        if (!(h->data = fedc_malloc(bytes ? bytes : 1))) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    }
    memcpy(h->data, data, bytes);
    h->type = type, h->bytes = bytes;
    return FEDC_OK;
}

/* Holds a broadcast value as `name`: the process's copy of it, shared. */
fedc_status fedc__client_hold_shared(client *c, const char *name, fedc_type type, const void *data) {
    held *h = held_entry(c, name);
    if (!h) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    fedc__client_unhold(c, h);
    fedc__shared_value *v;
    fedc_status st = fedc__shared_take(c->shared, name, data, fedc_type_bytes(&type), &v);
    if (st) return st;
    h->shared = v, h->data = (void *)fedc__shared_data(v), h->type = type, h->bytes = fedc_type_bytes(&type);
    return FEDC_OK;
}

/* After exchange e's report (sent or not wanted): the values no later phase of
 * the round reads are let go (the broadcast, the report), so that a client
 * between tasks holds only its state; the batches' buffers too. */
void fedc__client_forget(client *c, int e) {
    const fedc_deployment_form *f = c->form;
    int kept = 0;
    for (int i = 0; i < c->nheld; i++) {
        held *h = &c->held[i];
        bool keep = !strncmp(h->name, "client/", 7) || !strncmp(h->name, "next/", 5);
        for (int x = e + 1; !keep && x < c->exchanges; x++)
            keep = fedc_program_find_input(fedc_deployment_form_phase(f, x, FEDC_PHASE_CLIENT_WORK), h->name) != FEDC_NONE ||
                   fedc_program_find_input(fedc_deployment_form_phase(f, x, FEDC_PHASE_AGGREGATION), h->name) != FEDC_NONE;
        if (keep) c->held[kept++] = *h;
        else fedc__client_unhold(c, h);
    }
    c->nheld = kept;
    if (e == c->exchanges - 1) fedc__plan_client_release(c->pc);
}

void fedc__client_unhold_all(client *c) {
    for (int i = 0; i < c->nheld; i++) fedc__client_unhold(c, &c->held[i]);
    fedc_free(c->held);
    c->held = NULL, c->nheld = c->cap = 0;
}
