/* A deployment client's reading of its server's answers (client.h): an
 * answer's type against the request it answers, and what the client takes
 * from it (a plan's files, a task's fields and broadcast values, a wait's
 * retry_ms, a done's rounds, an ack's counted) checked before the client acts
 * on any of it. The exchange (client.c, client_task.c, client_report.c) calls
 * these on each answer it receives; fuzz/fuzz_client_answer.c calls them on
 * bytes, so that the fuzzer reaches the checks the client makes. */
#include <string.h>

#include "deploy/client.h"

static fedc_status server_refused(const client *c, const fedc__msg *m) {
    return fedc_error(FEDC_EIO, "client %s: the server refused: %s", c->id, fedc__msg_field(m, "reason"));
}

fedc_status fedc__plan_of_message(const fedc__msg *m, const char *who, fedc_plan **out) {
    *out = NULL;
    int n = fedc_safetensors_count(m->body);
    fedc_plan_file *f = fedc_calloc((size_t)n + 1, sizeof *f);
    fedc_status st = f ? FEDC_OK : fedc_error(FEDC_ENOMEM, "%s: out of memory", who);
    for (int i = 0; !st && i < n; i++) {
        fedc_tensor_entry e = fedc_safetensors_tensor(m->body, i);
        if (strncmp(e.name, "file/", 5) || e.type.dtype != FEDC_U8 || e.type.rank != 1)
            st = fedc_error(FEDC_EPARSE, "%s: the plan message holds \"%s\", not a file/NAME of bytes", who, e.name);
        else f[i] = (fedc_plan_file){e.name + 5, e.data, (size_t)e.type.dims[0]};
    }
    if (!st) st = fedc_plan_from_files(f, n, "the server's plan", out);
    if (!st && strcmp(fedc_plan_hash(*out), fedc__msg_field(m, "hash"))) {
        st = fedc_error(FEDC_EPARSE, "%s: the plan hashes to %s, but the server said %s", who, fedc_plan_hash(*out),
                        fedc__msg_field(m, "hash"));
        fedc_plan_destroy(*out);
        *out = NULL;
    }
    fedc_free(f);
    return st;
}

/* Which program task m is of (its "program": the round, or the warm start, whose
 * round is FEDC__WARM_ROUND), as the client's form from now on. */
static fedc_status task_program(client *c, const fedc__msg *m, int64_t round) {
    const char *program = fedc__msg_field(m, "program");
    if (!program) program = ""; /* not a field the decoder requires: refused below */
    bool warm = !strcmp(program, "warm_start");
    if ((!warm && strcmp(program, "round")) || warm != (round == FEDC__WARM_ROUND))
        return fedc_error(FEDC_EPARSE, "client %s: a task of round %lld for program \"%.40s\" (a task is of the round, or "
                          "of the warm start in round -1)", c->id, (long long)round, program);
    if (warm && !fedc_plan_warm_form(c->plan))
        return fedc_error(FEDC_EPARSE, "client %s: a task of the warm start, but the plan has none", c->id);
    c->form = warm ? fedc_plan_warm_form(c->plan) : fedc_plan_form(c->plan);
    c->exchanges = fedc_deployment_form_exchanges(c->form);
    return FEDC_OK;
}

static fedc_status read_task(client *c, const fedc__msg *m, task *t) {
    fedc_status st = fedc__msg_int(m, "round", FEDC__WARM_ROUND, INT32_MAX, &t->round);
    if (!st) st = task_program(c, m, t->round);
    if (!st) st = fedc__msg_int(m, "exchange", 0, c->exchanges - 1, &t->e);
    if (!st) st = fedc__msg_int(m, "slot", 0, INT32_MAX, &t->slot);
    int64_t beat_ms; /* checked here, before any work: the heartbeats take it as it is (client_beat.c) */
    if (!st) st = fedc__msg_int(m, "heartbeat_ms", 1, 3600000, &beat_ms);
    if (!st && strcmp(fedc__msg_field(m, "hash"), fedc_plan_hash(c->plan)))
        st = fedc_error(FEDC_EPARSE, "client %s: a task of another plan", c->id);
    if (st) return st;
    snprintf(t->id.round, sizeof t->id.round, "%s", fedc__msg_field(m, "round"));
    snprintf(t->id.exchange, sizeof t->id.exchange, "%s", fedc__msg_field(m, "exchange"));
    snprintf(t->id.slot, sizeof t->id.slot, "%s", fedc__msg_field(m, "slot"));
    return FEDC_OK;
}

fedc_status fedc__client_task_broadcasts(client *c, const fedc__msg *m, const fedc_program *q, fedc__client_take take) {
    int want = 0;
    for (int i = 0; i < fedc_program_num_inputs(q); i++) {
        const char *name = fedc_program_input_name(q, i);
        if (strncmp(name, "broadcast/", 10) && strncmp(name, "async/", 6)) continue;
        want++;
        fedc_tensor_entry e;
        fedc_type t = fedc_value_type(q, fedc_program_input(q, i));
        char a[64], b[64];
        if (fedc_safetensors_find(m->body, name, &e))
            return fedc_error(FEDC_EPARSE, "client %s: the task has no \"%s\"", c->id, name);
        if (e.type.dtype != t.dtype || !fedc_type_same_shape(&e.type, &t))
            return fedc_error(FEDC_EPARSE, "client %s: the task's \"%s\" is %s; client_work takes %s", c->id, name,
                              fedc_type_str(&e.type, a, sizeof a), fedc_type_str(&t, b, sizeof b));
        int64_t bad = fedc__tensor_first_not_finite(&e);
        if (bad >= 0) /* a model the server would never send (it keeps none that diverged); nothing computed from it is sent */
            return fedc_error(FEDC_EPARSE, "client %s: the task's \"%s\" is not finite (element %lld)", c->id, name,
                              (long long)bad);
        fedc_status st = take ? take(c, name, t, e.data) : FEDC_OK;
        if (st) return st;
    }
    if (fedc_safetensors_count(m->body) != want)
        return fedc_error(FEDC_EPARSE, "client %s: the task holds %d tensors; client_work takes %d broadcast values", c->id,
                          fedc_safetensors_count(m->body), want);
    return FEDC_OK;
}

/* The answer to a check-in: a task (its fields), a wait (retry_ms), done (rounds), or a refusal. */
static fedc_status read_checkin_answer(client *c, const fedc__msg *m, fedc__client_answer *a) {
    switch (m->type) {
    case FEDC__MSG_DONE: return fedc__msg_int(m, "rounds", 0, INT32_MAX, &a->rounds);
    case FEDC__MSG_TASK: return read_task(c, m, &a->task);
    case FEDC__MSG_WAIT: return fedc__msg_int(m, "retry_ms", 0, 1 << 30, &a->ms);
    case FEDC__MSG_REJECT: return server_refused(c, m);
    default:
        return fedc_error(FEDC_EPARSE, "client %s: a check-in answered by a %s message", c->id, fedc__msg_name(m->type));
    }
}

fedc_status fedc__client_read_answer(client *c, fedc__client_request asked, const fedc__msg *m, fedc__client_answer *a) {
    *a = (fedc__client_answer){.ms = 200};
    char who[64];
    switch (asked) {
    case FEDC__ASKED_PLAN:
        if (m->type == FEDC__MSG_REJECT) return server_refused(c, m);
        if (m->type != FEDC__MSG_PLAN)
            return fedc_error(FEDC_EPARSE, "client %s: asked for the plan, got a %s message", c->id, fedc__msg_name(m->type));
        snprintf(who, sizeof who, "client %s", c->id);
        return fedc__plan_of_message(m, who, &a->plan);
    case FEDC__ASKED_CHECKIN: return read_checkin_answer(c, m, a);
    case FEDC__ASKED_READY: /* go; a wait (0 once a held ready's hold ends); or no report wanted (a refusal) */
        a->ms = 0;
        if (m->type == FEDC__MSG_WAIT) return fedc__msg_int(m, "retry_ms", 0, 1 << 30, &a->ms);
        if (m->type == FEDC__MSG_GO || m->type == FEDC__MSG_REJECT) return FEDC_OK;
        return fedc_error(FEDC_EPARSE, "client %s: a ready answered by a %s message", c->id, fedc__msg_name(m->type));
    case FEDC__ASKED_REPORT: /* counted (1, or 0 for a report already counted: either way the server's), or refused */
        if (m->type == FEDC__MSG_REJECT) return FEDC_OK;
        if (m->type != FEDC__MSG_ACK)
            return fedc_error(FEDC_EPARSE, "client %s: a report answered by a %s message", c->id, fedc__msg_name(m->type));
        return fedc__msg_int(m, "counted", 0, 1, &a->counted);
    }
    return fedc_error(FEDC_EINTERNAL, "client %s: an answer to request %d, which the client does not make", c->id, (int)asked);
}
