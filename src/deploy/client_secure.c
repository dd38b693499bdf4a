/* A deployment client's hooks for secure rounds (client.h): the secure client
 * (client_secagg.c, secure.h) driven over this client's calls and values. In a
 * round without secure aggregation each does nothing and says go. */
#include "deploy/client.h"

/* The secure client's requests are this client's, its connection held meanwhile. */
static fedc_status secure_call(void *ctx, fedc__msg_type type, const fedc_metadata_entry *f, int nf,
                               const fedc_tensor_entry *t, int nt, fedc__msg *reply) {
    return fedc__client_call(ctx, type, f, nf, t, nt, reply);
}

/* A secure round's steps before the work (secure.h): *go when the client is to work. */
fedc_status fedc__client_secure_share(client *c, const fedc__msg *m, int e, bool *go) {
    c->sec.call = secure_call, c->sec.ctx = c, c->sec.log = c->log, c->sec.id = c->id;
    c->sec.token = c->token, c->sec.start = c->start, c->sec.max_seconds = c->o->max_seconds;
    return fedc__secure_client_share(&c->sec, m, fedc_deployment_form_phase(c->form, e, FEDC_PHASE_AGGREGATION), go);
}

/* A secure round's masked words, from what exchange e's aggregation reads: *go when
 * the client is to report. */
fedc_status fedc__client_secure_mask(client *c, int e, bool *go) {
    const fedc_program *agg = fedc_deployment_form_phase(c->form, e, FEDC_PHASE_AGGREGATION);
    int n = fedc_program_num_inputs(agg);
    void **in = fedc_calloc((size_t)n + 1, sizeof *in);
    if (!in) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    for (int i = 0; i < n; i++) {
        held *h = fedc__client_find(c, fedc_program_input_name(agg, i));
        in[i] = h ? h->data : NULL;
    }
    fedc_status st = fedc__secure_client_mask(&c->sec, agg, in, go);
    fedc_free(in);
    return st;
}
