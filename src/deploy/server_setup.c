/* The deployment server's set-up and tear-down (server.h): the plan read and
 * checked against the options, the server state bound to its run, the clients'
 * token, a checkpoint resumed, and each exchange's values (a task's, and a
 * report's). */
#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "deploy/groups.h"
#include "deploy/held.h"
#include "fedc/secure_sum.h"

/* The broadcast values of exchange e (a task's tensors: one client's copy,
 * the server value itself) and the values a report holds. */
fedc_status fedc__server_exchange_io(server *s, int e) {
    const fedc_program *work = fedc_deployment_form_phase(s->form, e, FEDC_PHASE_CLIENT_WORK);
    const fedc_program *agg = fedc_deployment_form_phase(s->form, e, FEDC_PHASE_AGGREGATION);
    if (fedc_program_num_inputs(work) > 4096 || fedc_program_num_inputs(agg) > 4096)
        return fedc_error(FEDC_EUNSUPPORTED, "server: exchange %d passes more than 4096 values", e);
    s->ntask = fedc__deployment_run_broadcasts(s->run, e, s->task, 4096);
    for (int i = 0; i < fedc_program_num_inputs(work); i++) {
        const char *name = fedc_program_input_name(work, i);
        bool found = strncmp(name, "broadcast/", 10) != 0;
        for (int j = 0; j < s->ntask && !found; j++) found = !strcmp(s->task[j].name, name);
        if (!found) return fedc_error(FEDC_EINTERNAL, "server: exchange %d broadcasts no \"%s\"", e, name);
    }
    size_t bytes[4096], align[4096];
    s->nup = fedc_program_num_inputs(agg);
    for (int i = 0; i < s->nup; i++) {
        upload *u = &s->up[i];
        u->name = fedc_program_input_name(agg, i);
        u->local = fedc_value_type(agg, fedc_program_input(agg, i));
        u->local.placement = FEDC_LOCAL;
        bytes[i] = u->bytes = fedc_type_bytes(&u->local);
        align[i] = fedc_dtype_size(u->local.dtype);
    }
    return fedc__collect_begin(s->collect, e, s->nup, bytes, align);
}

static fedc_status plan_int(const server *s, const char *key, int64_t *out) {
    const char *v = fedc_plan_setting(s->plan, key);
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : -1;
    if (!v || *end || x < 1) return fedc_error(FEDC_EPARSE, "%s: setting %s is missing or not a positive number", s->o->plan, key);
    *out = x;
    return FEDC_OK;
}

/* A token of 32 hex digits, the first line of out_dir/token, as make_token wrote it. */
static bool read_token(server *s, const char *path) {
    FILE *f = fopen(path, "r");
    char line[64] = "";
    bool ok = f && fgets(line, sizeof line, f) && strlen(line) == 33 && line[32] == '\n' &&
              strspn(line, "0123456789abcdef") == 32;
    if (f) fclose(f);
    if (ok) snprintf(s->token, sizeof s->token, "%.32s", line);
    return ok;
}

/* The token: given, the one out_dir/token holds (a restarted server keeps its
 * clients), or 32 random hex digits written there (0600); with per-client
 * credentials, none, and their key read instead. */
static fedc_status make_token(server *s) {
    if (s->o->credentials_key) {
        if (s->o->token)
            return fedc_error(FEDC_EINVAL, "server: a token or per-client credentials (a credentials key), not both");
        s->credentials = true;
        fedc_status st = fedc__credential_key_load(s->o->credentials_key, false, s->credential_key);
        if (!st)
            fprintf(s->log, "%s: per-client credentials, derived from the key in %s\n", s->name, s->o->credentials_key);
        return st;
    }
    if (s->o->token) {
        if (!s->o->token[0] || strlen(s->o->token) >= sizeof s->token || strpbrk(s->o->token, "\"\\\n"))
            return fedc_error(FEDC_EINVAL, "server: the token must be 1 to 159 bytes without quotes, backslashes or newlines");
        snprintf(s->token, sizeof s->token, "%s", s->o->token);
        return FEDC_OK;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/token", s->o->out_dir);
    if (read_token(s, path)) {
        fprintf(s->log, "%s: clients' token in %s (kept)\n", s->name, path);
        return FEDC_OK;
    }
    unsigned char r[16];
    FILE *f = fopen("/dev/urandom", "rb");
    bool ok = f && fread(r, 1, sizeof r, f) == sizeof r;
    if (f) fclose(f);
    if (!ok) return fedc_error(FEDC_EIO, "server: cannot read /dev/urandom for a token");
    for (int i = 0; i < 16; i++) snprintf(s->token + 2 * i, 3, "%02x", r[i]);
    mode_t old = umask(077);
    f = fopen(path, "w");
    umask(old);
    ok = f && fprintf(f, "%s\n", s->token) > 0;
    if (f && fclose(f) != 0) ok = false;
    if (!ok) return fedc_error(FEDC_EIO, "%s: cannot write the token", path);
    fprintf(s->log, "%s: clients' token in %s\n", s->name, path);
    return FEDC_OK;
}

/* A checkpoint keeps the model by its parameters' names, as fedc train's does
 * (fedc eval reads either), and the rest of the state as server/<leaf>. */
const char *fedc__server_saved_name(const char *name) {
    return !strncmp(name, "server/params/", 14) ? name + 14 : name;
}

fedc_status fedc__server_resume(server *s, int *first) {
    char path[4200];
    snprintf(path, sizeof path, "%s/checkpoint.safetensors", s->o->out_dir);
    struct stat sb;
    *first = 0;
    if (stat(path, &sb) != 0) return FEDC_OK;
    fedc_safetensors *c = NULL;
    fedc_status st = fedc_safetensors_read(path, &c);
    const char *hash = st ? NULL : fedc_safetensors_metadata(c, "plan_hash");
    const char *next = st ? NULL : fedc_safetensors_metadata(c, "next_round");
    if (!st && (!hash || strcmp(hash, fedc_plan_hash(s->plan)) || !next))
        st = fedc_error(FEDC_EINVAL, "%s is not a checkpoint of this plan (%s): move it away to start afresh", path,
                        fedc_plan_hash(s->plan));
    const char *settings = st ? NULL : fedc_safetensors_metadata(c, "plan_settings"); /* absent before 2026-12-06 */
    if (settings && strcmp(settings, fedc__plan_settings_hash(s->plan)))
        st = fedc_error(FEDC_EINVAL, "%s is a checkpoint of this plan's programs under other settings (seed, population, "
                        "batch size, ...: the plan was built again differently): move it away to start afresh", path);
    for (int i = 0; !st && i < s->ntensors; i++) {
        fedc_tensor_entry want = fedc_plan_tensor(s->plan, i), e;
        st = fedc_safetensors_find(c, fedc__server_saved_name(want.name), &e);
        if (!st && fedc_type_bytes(&e.type) != fedc_type_bytes(&want.type))
            st = fedc_error(FEDC_EPARSE, "%s: tensor \"%s\" has the wrong size", path, e.name);
        if (!st) memcpy(s->state[i], e.data, fedc_type_bytes(&want.type));
    }
    const char *added = st ? NULL : fedc_safetensors_metadata(c, "added_rounds");
    if (!st && added) st = fedc__added_parse(added, s->added_round, s->population, atoi(next));
    if (!st && !added && fedc_plan_client_init(s->plan) && atoi(next) > 0)
        st = fedc_error(FEDC_EPARSE, "%s: no added_rounds (which round added each client's report), which a plan whose "
                        "clients keep state needs", path);
    if (st && added) {
        char why[600];
        snprintf(why, sizeof why, "%s", fedc_errmsg());
        st = fedc_error(st, "%s: %s", path, why);
    }
    if (!st) *first = atoi(next);
    s->resumed = !st;
    if (!st) fprintf(s->log, "%s: resumed from %s at round %d\n", s->name, path, *first + 1);
    fedc_safetensors_destroy(c);
    return st;
}

/* A plan built with --secure-sum BITS sums the words of the reports a round
 * adds modulo 2^32: more than fedc_secure_sum_max_clients(BITS) could wrap. */
static fedc_status secure_sum_fits(const server *s) {
    int64_t bits = 0;
    fedc_status st = fedc_plan_setting(s->plan, "secure_sum_bits") ? plan_int(s, "secure_sum_bits", &bits) : FEDC_OK;
    if (!st && bits && s->commit > fedc_secure_sum_max_clients((int)bits))
        st = fedc_error(FEDC_EINVAL, "server: the plan's --secure-sum %d sums at most %lld clients without wrapping "
                        "modulo 2^32, but a round adds %d; build the plan with fewer bits", (int)bits,
                        (long long)fedc_secure_sum_max_clients((int)bits), s->commit);
    return st;
}

/* The slots a round selects: ceil(over_select x K), at most the population. */
static fedc_status selection(server *s) {
    const fedc_server_options *o = s->o;
    int64_t k = o->async_buffer > 0 ? o->async_buffer : o->clients_per_round; /* async: a step's K reports */
    if (k < 1 || (k > s->population && o->async_buffer <= 0))
        return fedc_error(FEDC_EINVAL, "server: %lld clients per round, but the plan's population is %lld clients",
                          (long long)k, (long long)s->population);
    if (!(o->over_select >= 1 && o->over_select <= 100))
        return fedc_error(FEDC_EINVAL, "server: over-selection %g is not between 1 and 100", o->over_select);
    double selected = ceil(o->over_select * (double)k - 1e-9);
    s->commit = (int)k;
    s->k = selected > (double)s->population ? (int)s->population : (int)selected;
    if (o->min_reports > s->commit)
        return fedc_error(FEDC_EINVAL, "server: --min-reports %d is above the %d clients a round adds", o->min_reports, s->commit);
    return secure_sum_fits(s);
}

fedc_status fedc__server_setup(server *s) {
    const fedc_server_options *o = s->o;
    fedc_status st = fedc_plan_read(o->plan, &s->plan);
    if (st) return st;
    s->form = fedc_plan_form(s->plan);
    const char *seed = fedc_plan_setting(s->plan, "seed");
    if (!seed) return fedc_error(FEDC_EPARSE, "%s: no seed setting", o->plan);
    s->seed = strtoull(seed, NULL, 10);
    if ((st = plan_int(s, "population", &s->population))) return st;
    if ((st = selection(s))) return st;
    size_t k = (size_t)s->k, pop = (size_t)s->population;
    s->population_f = (float)s->population;
    s->ntensors = fedc_plan_num_tensors(s->plan);
    s->state = fedc_calloc((size_t)s->ntensors + 1, sizeof *s->state);
    s->sampled = fedc_calloc(k, sizeof *s->sampled);
    s->next = fedc_calloc(k, sizeof *s->next);
    s->left_out = fedc_calloc(k, 1);
    s->sent = fedc_calloc(k, 1);
    s->granted = fedc_calloc(k, 1);
    s->slot_of = fedc_malloc(pop * sizeof *s->slot_of);
    s->next_round = fedc_calloc(pop, 1);
    s->heard = fedc_calloc(pop, sizeof *s->heard);
    s->taken_round = fedc_malloc(pop * sizeof *s->taken_round + 1);
    s->taken_exchange = fedc_calloc(pop, sizeof *s->taken_exchange);
    s->added_round = fedc_malloc(pop * sizeof *s->added_round + 1);
    s->task = fedc_calloc(4096, sizeof *s->task);
    s->up = fedc_calloc(4096, sizeof *s->up);
    s->maxheld = o->max_held;
    s->held = fedc_calloc((size_t)s->maxheld + 1, sizeof *s->held);
    if (!s->state || !s->sampled || !s->next || !s->left_out || !s->sent || !s->granted || !s->slot_of || !s->next_round || !s->heard || !s->taken_round ||
        !s->taken_exchange || !s->added_round || !s->task || !s->up || !s->held)
        return fedc_error(FEDC_ENOMEM, "server: out of memory");
    for (size_t i = 0; i < pop; i++) s->slot_of[i] = s->added_round[i] = -1, s->taken_round[i] = INT32_MIN;
    st = fedc__deployment_run_create_server(&s->run, s->form, &(fedc_exec_options){.clients = s->k, .threads = o->threads});
    for (int i = 0; !st && i < s->ntensors; i++) {
        fedc_tensor_entry e = fedc_plan_tensor(s->plan, i);
        size_t n = fedc_type_bytes(&e.type);
        if (!(s->state[i] = fedc_malloc(n ? n : 1))) return fedc_error(FEDC_ENOMEM, "server: out of memory");
        memcpy(s->state[i], e.data, n);
        st = fedc_deployment_run_bind(s->run, e.name, s->state[i]);
    }
    if (!st && fedc_program_find_input(fedc_plan_round(s->plan), "meta/population") != FEDC_NONE)
        st = fedc_deployment_run_bind(s->run, "meta/population", &s->population_f);
    if (!st) st = fedc_make_dirs(o->out_dir);
    char spill[4200];
    snprintf(spill, sizeof spill, "%s/reports.spill", o->out_dir);
    if (!st) st = fedc__collect_create(&s->collect, s->run, s->k, s->commit, o->reorder_window, spill);
    if (!st) st = make_token(s);
    if (!st) st = fedc__warm_check(s->plan, o);
    if (!st && o->secure_agg && !o->groups) /* with groups, each aggregator runs its group's (groups.h) */
        st = fedc__secure_create(&s->sec, s->form, &(fedc__secure_setup){o->secure_threshold, o->secure_neighbours, s->k,
                                 s->commit, o->heartbeat_timeout, s->log, s->name, "round"});
    if (!st && o->groups) st = fedc__groups_create(s);
    return st;
}

void fedc__server_teardown(server *s) {
    sodium_memzero(s->credential_key, sizeof s->credential_key);
    fedc__net_close(&s->net);
    for (int i = 0; s->state && i < s->ntensors; i++) fedc_free(s->state[i]);
    fedc_free(s->state), fedc_free(s->sampled), fedc_free(s->task), fedc_free(s->up), fedc_free(s->held);
    fedc_free(s->slot_of), fedc_free(s->next_round), fedc_free(s->heard), fedc_free(s->next), fedc_free(s->left_out), fedc_free(s->sent), fedc_free(s->granted);
    fedc_free(s->taken_round), fedc_free(s->taken_exchange), fedc_free(s->added_round);
    fedc__collect_destroy(s->collect);
    fedc__async_destroy(s->async);
    fedc__secure_destroy(s->sec);
    fedc__groups_destroy(s->groups);
    fedc_deployment_run_destroy(s->run);
    fedc_plan_destroy(s->plan);
    if (s->metrics) fclose(s->metrics);
}
