/* Each training client's domain, meta/domain (f32[]@clients; agnostic_fedavg's
 * mixture components), found once for the whole dataset, in this order:
 *
 *   --client-domains FILE   "client_id,domain" lines (a first line
 *                           "client_id,domain" and lines starting with '#' are
 *                           skipped); every training client must have one
 *   EMNIST writer ids       "f####_##" (LEAF, FedJAX) or "<16 hex>:f####_##"
 *                           (FedJAX's SQLite): FedJAX's emnist.domain_id, writers
 *                           2100-2599 are 0 (high school), the others 1 (census)
 *   otherwise               0 for every client, with a warning
 *
 * and, when the algorithm has a hyperparameter num_domains, checked to be in
 * [0, num_domains). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fl/train.h"

/* FedJAX's emnist.domain_id, or -1 if id is not an EMNIST writer id. */
static int emnist_domain(const char *id) {
    size_t n = strlen(id);
    if (n == 25 && id[16] == ':') id += 17, n = 8;
    if (n != 8 || id[0] != 'f' || id[5] != '_') return -1;
    for (int i = 1; i < 8; i++)
        if (i != 5 && !isdigit((unsigned char)id[i])) return -1;
    int writer = atoi(id + 1);
    return writer >= 2100 && writer <= 2599 ? 0 : 1;
}

typedef struct entry {
    char *id;
    long domain;
} entry;

static int by_id(const void *a, const void *b) { return strcmp(((const entry *)a)->id, ((const entry *)b)->id); }

static void free_entries(entry *e, size_t n) {
    for (size_t i = 0; i < n; i++) fedc_free(e[i].id);
    fedc_free(e);
}

/* One line "client_id,domain" into e (its id copied); line counts from 1. */
static fedc_status parse_line(const char *path, size_t line, char *text, entry *e) {
    const char *id;
    fedc_status st = fedc__parse_client_line(path, line, text, "domain", 1000000, "", &id, &e->domain);
    if (st) return st;
    e->id = fedc_malloc(strlen(id) + 1);
    if (!e->id) return fedc_error(FEDC_ENOMEM, "train: out of memory");
    strcpy(e->id, id);
    return FEDC_OK;
}

/* The lines of f (named path in messages), sorted by id. */
static fedc_status read_file(FILE *f, const char *path, entry **out, size_t *count) {
    entry *e = NULL;
    size_t n = 0, cap = 0, line = 0;
    char buf[4096];
    fedc_status st = FEDC_OK;
    while (!st && fgets(buf, sizeof buf, f)) {
        line++;
        size_t len = strlen(buf);
        if (len + 1 == sizeof buf && buf[len - 1] != '\n') {
            st = fedc_error(FEDC_EPARSE, "%s:%zu: line longer than %zu characters", path, line, sizeof buf - 2);
            break;
        }
        while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) buf[--len] = 0;
        if (!len || buf[0] == '#' || (line == 1 && !strcmp(buf, "client_id,domain"))) continue;
        if (n == cap) {
            entry *bigger = fedc_realloc(e, (cap = cap ? 2 * cap : 256) * sizeof *e);
            if (!bigger) {
                st = fedc_error(FEDC_ENOMEM, "train: out of memory");
                break;
            }
            e = bigger;
        }
        st = parse_line(path, line, buf, &e[n]);
        if (!st) n++;
    }
    if (!st && ferror(f)) st = fedc_error(FEDC_EIO, "--client-domains %s: cannot read", path);
    if (st) {
        free_entries(e, n);
        return st;
    }
    qsort(e, n, sizeof *e, by_id);
    *out = e, *count = n;
    return FEDC_OK;
}

/* Every client's domain from f's lines; a client without one is an error, or,
 * when !every, in domain -1 (the deployed client of another id says so). */
static fedc_status from_stream(const trainer *t, FILE *f, const char *path, bool every, float *domain) {
    entry *e = NULL;
    size_t n = 0;
    fedc_status st = read_file(f, path, &e, &n);
    for (int64_t i = 0; !st && i < fedc_dataset_num_clients(t->train); i++) {
        entry key = {.id = (char *)fedc_dataset_client_id(t->train, i)};
        const entry *hit = n ? bsearch(&key, e, n, sizeof *e, by_id) : NULL;
        if (!hit && every) st = fedc_error(FEDC_EINVAL, "--client-domains %s: no domain for client \"%s\"", path, key.id);
        else domain[i] = hit ? (float)hit->domain : -1;
    }
    free_entries(e, n);
    return st;
}

static fedc_status from_file(const trainer *t, float *domain) {
    const char *path = t->c->client_domains;
    FILE *f = fopen(path, "r");
    if (!f) return fedc_error(FEDC_EIO, "--client-domains %s: cannot open: %s", path, strerror(errno));
    fedc_status st = from_stream(t, f, path, true, domain);
    fclose(f);
    return st;
}

/* Whether every training client has an EMNIST writer id (then their domains). */
static bool from_emnist_ids(const trainer *t, float *domain) {
    for (int64_t i = 0; i < fedc_dataset_num_clients(t->train); i++) {
        int d = emnist_domain(fedc_dataset_client_id(t->train, i));
        if (d < 0) return false;
        domain[i] = (float)d;
    }
    return true;
}

/* The domains against the algorithm's num_domains, if it has one. */
static fedc_status check_range(const trainer *t, const float *domain) {
    const fedc_algorithm_def *def = fedc__algorithm_def(&t->alg);
    bool has = false;
    for (int i = 0; i < def->nhparams; i++) has |= !strcmp(def->hparams[i].name, "num_domains");
    if (!has) return FEDC_OK;
    double k = fedc_algorithm_hparam(&t->alg, "num_domains");
    for (int64_t i = 0; i < fedc_dataset_num_clients(t->train); i++)
        if (domain[i] >= k)
            return fedc_error(FEDC_EINVAL, "client \"%s\" is in domain %g, but %s has num_domains %g (--set "
                              "num_domains=N)", fedc_dataset_client_id(t->train, i), domain[i],
                              fedc_algorithm_name(&t->alg), k);
    return FEDC_OK;
}

static fedc_status allocate(trainer *t) {
    int64_t n = fedc_dataset_num_clients(t->train);
    t->client_domain = fedc_calloc((size_t)(n ? n : 1), sizeof *t->client_domain);
    t->meta_domain = fedc_calloc((size_t)(t->k > 0 ? t->k : 1), sizeof *t->meta_domain);
    return t->client_domain && t->meta_domain ? FEDC_OK : fedc_error(FEDC_ENOMEM, "train: out of memory");
}

fedc_status fedc__train_client_domains_text(trainer *t, const char *text, size_t size, const char *what) {
    fedc_status st = allocate(t);
    FILE *f = st ? NULL : fmemopen((void *)text, size ? size : 1, "r");
    if (!st && !f) st = fedc_error(FEDC_ENOMEM, "%s: cannot read it from memory", what);
    if (!st) st = from_stream(t, f, what, false, t->client_domain);
    if (f) fclose(f);
    return st ? st : check_range(t, t->client_domain);
}

fedc_status fedc__train_client_domains(trainer *t) {
    int64_t n = fedc_dataset_num_clients(t->train);
    fedc_status st = allocate(t);
    if (st) return st;
    if (t->c->client_domains) st = from_file(t, t->client_domain);
    else if (!from_emnist_ids(t, t->client_domain)) {
        memset(t->client_domain, 0, (size_t)n * sizeof *t->client_domain);
        if (fedc_mpi_rank() == 0)
            fprintf(stderr, "fedc train: warning: %s reads each client's domain, but the client ids are not EMNIST "
                    "writer ids and no --client-domains FILE was given: every client is in domain 0\n",
                    fedc_algorithm_name(&t->alg));
    }
    return st ? st : check_range(t, t->client_domain);
}
