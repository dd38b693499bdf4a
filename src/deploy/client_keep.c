/* A deployment client's state across rounds (client.h): a never-seen client's
 * from the plan's client_init; a round's new state (next/client/<leaf>) the
 * client's once that round has committed with its report added (a later task,
 * or done, says), so that a dropped or retried round leaves it as it was; and,
 * with a state directory, on disk after every change (client_state.h), so that
 * a client started again goes on from there. */
#include <string.h>

#include "deploy/client.h"
#include "deploy/client_state.h"

/* The client's state (client/ and next/client/ values) written to its file, when
 * it keeps one (client_state.h). */
fedc_status fedc__client_save_state(client *c) {
    if (!c->o->state_dir || !fedc_plan_client_init(c->plan)) return FEDC_OK;
    fedc_tensor_entry *t = fedc_calloc((size_t)c->nheld + 1, sizeof *t);
    if (!t) return fedc_error(FEDC_ENOMEM, "client: out of memory");
    int n = 0;
    for (int i = 0; i < c->nheld; i++)
        if (!strncmp(c->held[i].name, "client/", 7) || !strncmp(c->held[i].name, "next/client/", 12))
            t[n++] = (fedc_tensor_entry){c->held[i].name, c->held[i].type, c->held[i].data};
    const float *seen = fedc__plan_client_input(c->pc, "meta/seen"); /* 1 once a round's state was kept */
    fedc_status st = fedc__client_state_save(c->o->state_dir, c->id, fedc_plan_hash(c->plan),
                                             fedc__plan_settings_hash(c->plan), t, n, c->pending_round, seen && *seen > 0);
    fedc_free(t);
    return st;
}

/* The state from the client's file, if it has one, over client_init's: each
 * value of the file must be one client_init made, of the same type. */
fedc_status fedc__client_restore_state(client *c) {
    fedc__client_state k;
    if (!c->o->state_dir || !fedc_plan_client_init(c->plan)) return FEDC_OK;
    fedc_status st = fedc__client_state_load(c->o->state_dir, c->id, fedc_plan_hash(c->plan),
                                             fedc__plan_settings_hash(c->plan), &k);
    if (st || !k.file) return st;
    char path[4200], a[64], b[64];
    fedc__client_state_path(c->o->state_dir, c->id, path, sizeof path);
    for (int i = 0; !st && i < fedc_safetensors_count(k.file); i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(k.file, i);
        const char *leaf = strncmp(e.name, "next/", 5) ? e.name : e.name + 5;
        const held *init = fedc__client_find(c, leaf);
        if (!init) st = fedc_error(FEDC_EPARSE, "%s: \"%s\" is not in the plan's client state", path, leaf);
        else if (init->type.dtype != e.type.dtype || !fedc_type_same_shape(&init->type, &e.type))
            st = fedc_error(FEDC_EPARSE, "%s: \"%s\" is %s; the plan's client state has %s", path, e.name,
                            fedc_type_str(&e.type, a, sizeof a), fedc_type_str(&init->type, b, sizeof b));
        else st = fedc__client_hold(c, e.name, init->type, e.data);
    }
    if (!st) {
        c->pending_round = k.pending_round;
        if (k.seen) fedc__plan_client_seen(c->pc, true);
        fprintf(c->log, "fedc client %s: state from %s%s\n", c->id, path,
                k.pending_round >= 0 ? " (with a counted report of a round not yet known to have committed)" : "");
    }
    fedc_safetensors_destroy(k.file);
    return st;
}

/* The state of the last round whose report was counted, once that round is
 * over (a later task, or done: m): kept if the server added the report (m's
 * "added", the last round that added this client's, is that round), else let
 * go, as fedc train's client store keeps a client left out as it was. */
fedc_status fedc__client_settle_state(client *c, const fedc__msg *m) {
    int64_t added = -1;
    fedc_status st = c->pending_round < 0 ? FEDC_OK : fedc__msg_int(m, "added", -1, INT32_MAX, &added);
    bool keep = !st && c->pending_round >= 0 && added == c->pending_round;
    for (int i = 0; !st && keep && i < c->nheld; i++) {
        held h = c->held[i]; /* fedc__client_hold() may move the table */
        if (!strncmp(h.name, "next/", 5)) st = fedc__client_hold(c, h.name + 5, h.type, h.data);
    }
    int kept = 0;
    for (int i = 0; i < c->nheld; i++) { /* the new state is the state now, or never */
        if (strncmp(c->held[i].name, "next/", 5)) c->held[kept++] = c->held[i];
        else fedc__client_unhold(c, &c->held[i]);
    }
    c->nheld = kept;
    if (!st && keep) fedc__plan_client_seen(c->pc, true);
    if (!st && !keep)
        fprintf(c->log, "fedc client %s: round %lld: the report was not added: the client's state stays as it was\n", c->id,
                (long long)c->pending_round + 1);
    c->pending_round = -1;
    return st ? st : fedc__client_save_state(c);
}

/* A never-seen client's state, from the plan's client_init. */
fedc_status fedc__client_init_state(client *c) {
    const fedc_program *init = fedc_plan_client_init(c->plan);
    if (!init) return FEDC_OK;
    fedc_executor *ex = NULL;
    fedc_status st = fedc_executor_create(&ex, init, &(fedc_exec_options){.clients = 1});
    if (!st) st = fedc_executor_run(ex);
    for (int i = 0; !st && i < fedc_program_num_outputs(init); i++) {
        const void *y;
        fedc_type t;
        st = fedc_executor_output(ex, fedc_program_output_name(init, i), &y, &t);
        if (!st) st = fedc__client_hold(c, fedc_program_output_name(init, i), t, y);
    }
    fedc_executor_destroy(ex);
    return st;
}
