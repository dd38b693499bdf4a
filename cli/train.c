/*
 * fedc train — federated training from the command line.
 *
 * Every flag is "--name VALUE"; the same names work as "name = value" lines of an
 * INI config file (--config FILE, read with inih; flags given after it win).
 * `fedc train --help` lists them with their defaults.
 *
 * fedc eval --checkpoint FILE --data PATH [--model NAME] [data options] evaluates a
 * checkpoint's model on every client of PATH.
 *
 * `mpirun -np N fedc train ...` runs one training job on N processes (docs/mpi.md):
 * fedc notices the launcher, and each rank trains its share of every cohort.
 */
#include <ini.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fedc/fedc.h"

static const char train_usage[] =
    "usage: fedc train --data PATH [options]\n"
    "\n"
    "data\n"
    "  --data PATH               a dataset: LEAF .json[.gz] file or directory, TFF .h5, FedJAX\n"
    "                            .sqlite, an IDX images file, or a directory of CSV or text files;\n"
    "                            or synthetic:zipf:CLIENTS:EXAMPLES[:WORDS[:S]], Zipfian word\n"
    "                            sequences standing in for Stack Overflow (WORDS 20, S 1)\n"
    "  --test-data PATH          the test split (default: none; for IDX the t10k file beside\n"
    "                            --data)\n"
    "  --holdout F               hold out the last F (in (0, 1)) of every client's examples as the\n"
    "                            test split, as LEAF splits Shakespeare (e.g. 0.1 with the per-role\n"
    "                            text files: each role's last lines are never trained on)\n"
    "  --format NAME             leaf|tff|fedjax|idx|csv|text (default: detected)\n"
    "  --task NAME               emnist|fashion|heart|shakespeare|stackoverflow|none (default: from the\n"
    "                            format: LEAF, TFF and FedJAX are emnist, IDX fashion, CSV heart,\n"
    "                            synthetic stackoverflow)\n"
    "  --vocab FILE              stackoverflow: the vocabulary, one word a line, most frequent first\n"
    "  --vocab-size N            stackoverflow: words of the vocabulary (default 10000)\n"
    "  --partition SPEC          split centralized data: iid|dirichlet:ALPHA|shards:K (default\n"
    "                            iid for IDX)\n"
    "  --num-clients N           clients to split centralized data into (default 100)\n"
    "model and algorithm\n"
    "  --model NAME              logistic|dense|cnn|heart|shakespeare_lstm|stackoverflow_lstm|\n"
    "                            transformer[:tiny|small|medium|base] (default cnn); text tasks cut\n"
    "                            or pad their sequences to the model's length (a transformer's\n"
    "                            context)\n"
    "  --algorithm NAME          fedsgd|fedavg|fedprox, or one registered by the program\n"
    "                            (default fedavg; `fedc train --algorithms` lists them)\n"
    "  --prox-mu X               FedProx's mu (default 0.01)\n"
    "  --rounds N                (default 100)\n"
    "  --clients-per-round N     (default 10)\n"
    "  --batch-size N            (default 20)\n"
    "  --epochs N                local epochs per round (default 1)\n"
    "  --steps N                 at most N local steps per round (default: the epochs' batches)\n"
    "  --client-opt NAME         sgd|momentum|nesterov|adam|adagrad|yogi|rmsprop (default sgd)\n"
    "  --client-lr X             (default 0.1)\n"
    "  --server-opt NAME         sgd|momentum|nesterov|adam|adagrad|yogi|rmsprop (default sgd;\n"
    "                            adam with fedavg is FedAdam, and so on)\n"
    "  --server-lr X             (default 1)\n"
    "  --server-eps X            the server optimizer's epsilon (default: the optimizer's)\n"
    "  --no-dropout              train without the model's dropout\n"
    "run\n"
    "  --seed N                  (default 0)\n"
    "  --threads N               worker threads for the clients (default 2)\n"
    "  --eval-every N            evaluate every N rounds (default 10; and after the last)\n"
    "  --eval-batch-size N       (default 100)\n"
    "  --eval-clients N          evaluate on N test clients sampled by (seed, round) (default 0:\n"
    "                            all)\n"
    "  --out DIR                 metrics.jsonl, metrics.csv, curves.svg, checkpoint.safetensors\n"
    "                            (default fedc-run)\n"
    "  --checkpoint-every N      rounds (default 0: no checkpoints)\n"
    "  --resume                  continue from DIR/checkpoint.safetensors: refused if a setting\n"
    "                            that changes the model differs (--rounds, --threads and the\n"
    "                            evaluation and checkpoint options may; docs/training.md)\n"
    "  --strict                  stop at a client whose data cannot be loaded or whose update is\n"
    "                            not finite (default: drop it from its round, with a warning)\n"
    "  --quiet                   no progress lines\n"
    "  --profile                 print the time spent in each kind of op at the end\n"
    "  --config FILE             read options from an INI file (name = value, names as above)\n"
    "\n"
    "mpirun -np N fedc train ... runs one job on N processes or hosts: each rank trains its share\n"
    "of every round's clients on --threads threads, with the same results (docs/mpi.md).\n";

typedef struct options {
    fedc_train_config c;
    const char *client_opt, *server_opt;
    double client_lr, server_lr, server_eps;
    const char *algorithm;
    const char *checkpoint; /* fedc eval */
    char *owned[64]; /* strings copied from a config file */
    int nowned;
} options;

static int usage_error(const char *fmt, const char *arg) {
    fprintf(stderr, "fedc train: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(see fedc train --help)\n");
    return 2;
}

static int parse_int(const char *name, const char *v, long long lo, long long *out) {
    char *end;
    long long x = strtoll(v, &end, 10);
    if (!*v || *end || x < lo) {
        fprintf(stderr, "fedc train: --%s needs an integer >= %lld, got '%s'\n", name, lo, v);
        return 2;
    }
    *out = x;
    return 0;
}

static int parse_double(const char *name, const char *v, double *out) {
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !(x == x)) {
        fprintf(stderr, "fedc train: --%s needs a number, got '%s'\n", name, v);
        return 2;
    }
    *out = x;
    return 0;
}

/* Applies one option; 0, or 2 for a bad name or value. */
static int set(options *o, const char *name, const char *v) {
    fedc_train_config *c = &o->c;
    long long i = 0;
    int rc = 0;
    if (!strcmp(name, "data")) c->data = v;
    else if (!strcmp(name, "test-data")) c->test_data = v;
    else if (!strcmp(name, "holdout")) rc = parse_double(name, v, &c->holdout);
    else if (!strcmp(name, "format")) rc = fedc_data_format_parse(v, &c->format) ? usage_error("%s", fedc_errmsg()) : 0;
    else if (!strcmp(name, "task")) c->task = v;
    else if (!strcmp(name, "vocab")) c->vocab = v;
    else if (!strcmp(name, "vocab-size")) rc = parse_int(name, v, 1, &i), c->vocab_size = i;
    else if (!strcmp(name, "partition")) c->partition = v;
    else if (!strcmp(name, "num-clients")) rc = parse_int(name, v, 1, &i), c->num_clients = i;
    else if (!strcmp(name, "model")) c->model = v;
    else if (!strcmp(name, "algorithm")) o->algorithm = v;
    else if (!strcmp(name, "prox-mu")) rc = parse_double(name, v, &c->algorithm.prox_mu);
    else if (!strcmp(name, "rounds")) rc = parse_int(name, v, 1, &i), c->rounds = (int)i;
    else if (!strcmp(name, "clients-per-round")) rc = parse_int(name, v, 1, &i), c->clients_per_round = (int)i;
    else if (!strcmp(name, "batch-size")) rc = parse_int(name, v, 1, &i), c->algorithm.batch_size = i;
    else if (!strcmp(name, "epochs")) rc = parse_int(name, v, 1, &i), c->epochs = (int)i;
    else if (!strcmp(name, "steps")) rc = parse_int(name, v, 1, &i), c->steps = i;
    else if (!strcmp(name, "client-opt")) o->client_opt = v;
    else if (!strcmp(name, "client-lr")) rc = parse_double(name, v, &o->client_lr);
    else if (!strcmp(name, "server-opt")) o->server_opt = v;
    else if (!strcmp(name, "server-lr")) rc = parse_double(name, v, &o->server_lr);
    else if (!strcmp(name, "server-eps")) rc = parse_double(name, v, &o->server_eps);
    else if (!strcmp(name, "seed")) rc = parse_int(name, v, 0, &i), c->seed = (uint64_t)i;
    else if (!strcmp(name, "threads")) rc = parse_int(name, v, 1, &i), c->threads = (int)i;
    else if (!strcmp(name, "eval-every")) rc = parse_int(name, v, 0, &i), c->eval_every = (int)i;
    else if (!strcmp(name, "eval-batch-size")) rc = parse_int(name, v, 1, &i), c->eval_batch_size = i;
    else if (!strcmp(name, "eval-clients")) rc = parse_int(name, v, 0, &i), c->eval_clients = i;
    else if (!strcmp(name, "checkpoint")) o->checkpoint = v;
    else if (!strcmp(name, "out")) c->out_dir = v;
    else if (!strcmp(name, "checkpoint-every")) rc = parse_int(name, v, 0, &i), c->checkpoint_every = (int)i;
    else return usage_error("unknown option '--%s'", name);
    return rc;
}

/* inih's callback: keys of any section are options; values are copied. */
static int config_line(void *user, const char *section, const char *name, const char *value) {
    (void)section;
    options *o = user;
    if (o->nowned == 64) return 0;
    char *copy = strdup(value);
    if (!copy) return 0;
    o->owned[o->nowned++] = copy;
    if (!strcmp(name, "resume")) o->c.resume = !strcmp(value, "true") || !strcmp(value, "1");
    else if (!strcmp(name, "quiet")) o->c.quiet = !strcmp(value, "true") || !strcmp(value, "1");
    else if (!strcmp(name, "no-dropout")) o->c.algorithm.dropout = !(!strcmp(value, "true") || !strcmp(value, "1"));
    else if (set(o, name, copy)) return 0;
    return 1;
}

static int read_config(options *o, const char *path) {
    int line = ini_parse(path, config_line, o);
    if (line < 0) {
        fprintf(stderr, "fedc train: cannot read the config file %s\n", path);
        return 2;
    }
    if (line > 0) {
        fprintf(stderr, "fedc train: %s: line %d: bad option or value\n", path, line);
        return 2;
    }
    return 0;
}

static int parse_args(options *o, int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int rc = 0;
        if (strncmp(a, "--", 2) != 0) return usage_error("unexpected argument '%s'", a);
        a += 2;
        if (!strcmp(a, "resume")) o->c.resume = true;
        else if (!strcmp(a, "quiet")) o->c.quiet = true;
        else if (!strcmp(a, "profile")) o->c.profile = true;
        else if (!strcmp(a, "strict")) o->c.strict = true;
        else if (!strcmp(a, "no-dropout")) o->c.algorithm.dropout = false;
        else if (i + 1 >= argc) return usage_error("--%s needs a value", a);
        else if (!strcmp(a, "config")) rc = read_config(o, argv[++i]);
        else rc = set(o, a, argv[++i]);
        if (rc) return rc;
    }
    return 0;
}

/* Optimizers and algorithm from their names, once all options are in. */
static int finish(options *o) {
    fedc_train_config *c = &o->c;
    if (!c->data) return usage_error("%s", "--data PATH is required");
    if (!(c->algorithm.def = fedc_algorithm_find(o->algorithm))) return usage_error("%s", fedc_errmsg());
    if (fedc_optimizer_parse(o->client_opt, o->client_lr, &c->algorithm.client_opt)) return usage_error("%s", fedc_errmsg());
    if (fedc_optimizer_parse(o->server_opt, o->server_lr, &c->algorithm.server_opt)) return usage_error("%s", fedc_errmsg());
    if (o->server_eps > 0) c->algorithm.server_opt.eps = o->server_eps;
    if (c->algorithm.def->one_pass) c->epochs = 1;
    return 0;
}

static void defaults(options *o) {
    memset(o, 0, sizeof *o);
    fedc_train_defaults(&o->c);
    o->c.algorithm.prox_mu = 0.01;
    o->client_opt = "sgd", o->server_opt = "sgd", o->algorithm = "fedavg";
    o->client_lr = 0.1, o->server_lr = 1;
}

static const char eval_usage[] =
    "usage: fedc eval --checkpoint FILE --data PATH [--model NAME] [--task NAME] [--format NAME]\n"
    "                 [--partition SPEC --num-clients N] [--eval-batch-size N] [--threads N]\n"
    "evaluates the model in FILE (a checkpoint.safetensors written by fedc train) on every client\n"
    "of PATH, and prints the loss, accuracy and the clients' accuracy quantiles\n";

int fedc_cli_eval(int argc, char **argv) {
    if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(eval_usage, stdout);
        return 0;
    }
    options o;
    defaults(&o);
    int rc = parse_args(&o, argc, argv);
    if (!rc && (!o.c.data || !o.checkpoint)) rc = usage_error("%s", "--checkpoint FILE and --data PATH are required");
    if (!rc) {
        fedc_train_result r;
        o.c.quiet = true;
        fedc_status st = fedc_evaluate_checkpoint(&o.c, o.checkpoint, &r);
        if (st) {
            fprintf(stderr, "fedc eval: %s\n", fedc_errmsg());
            rc = st == FEDC_ENOMEM || st == FEDC_EINTERNAL ? 1 : 2;
        } else {
            printf("%s on %s: loss %.4f, accuracy %.2f%% (clients: p10 %.1f%%, median %.1f%%, p90 %.1f%%)\n",
                   o.checkpoint, o.c.data, r.test_loss, 100 * r.test_accuracy, 100 * r.accuracy_quantiles[0],
                   100 * r.accuracy_quantiles[1], 100 * r.accuracy_quantiles[2]);
        }
    }
    for (int i = 0; i < o.nowned; i++) free(o.owned[i]);
    return rc;
}

/* The number of processes an MPI launcher started (mpirun sets these), or 0. */
static int launched_ranks(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    for (int i = 0; i < 3; i++)
        if (getenv(vars[i])) return atoi(getenv(vars[i]));
    return 0;
}

/* Joins the MPI job when started by a launcher; 0, or the exit status. */
static int join_mpi(void) {
    int ranks = launched_ranks();
    if (ranks == 0 || (ranks == 1 && !fedc_mpi_built())) return 0;
    if (fedc_mpi_init() == FEDC_OK) return 0;
    fprintf(stderr, "fedc train: started as one of %d MPI processes, but %s\n", ranks, fedc_errmsg());
    return fedc_mpi_built() ? 1 : 2;
}

int fedc_cli_train(int argc, char **argv) {
    if (argc > 0 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h"))) {
        fputs(train_usage, stdout);
        return 0;
    }
    if (argc > 0 && !strcmp(argv[0], "--algorithms")) {
        for (int i = 0; i < fedc_algorithm_count(); i++)
            printf("%-10s %s\n", fedc_algorithm_at(i)->name, fedc_algorithm_at(i)->summary);
        return 0;
    }
    options o;
    defaults(&o);
    int rc = parse_args(&o, argc, argv);
    if (!rc) rc = finish(&o);
    if (!rc) rc = join_mpi();
    /* past the file-size limit (ulimit -f) a write fails (EFBIG) and is reported,
     * instead of the signal killing the run with a file half written */
    signal(SIGXFSZ, SIG_IGN);
    if (!rc) {
        fedc_train_result r;
        fedc_status st = fedc_train(&o.c, &r);
        if (st) { /* every rank says it: they all stopped for the same reason */
            fprintf(stderr, "fedc train: %s\n", fedc_errmsg());
            rc = st == FEDC_EINVAL || st == FEDC_ENOTFOUND || st == FEDC_EIO || st == FEDC_ETYPE ? 2 : 1;
        } else if (fedc_mpi_rank() == 0 && r.already_complete) {
            printf("%s: the run is already complete (%d rounds; --rounds N with more extends it); its last metrics: "
                   "train loss %.4f, test loss %.4f, test accuracy %.2f%%\n", o.c.out_dir, o.c.rounds, r.train_loss,
                   r.test_loss, 100 * r.test_accuracy);
        } else if (fedc_mpi_rank() == 0) {
            printf("done: %d rounds in %.1f s (%.0f examples/s); final train loss %.4f, test loss %.4f, test "
                   "accuracy %.2f%%\nmetrics: %s/metrics.jsonl, %s/metrics.csv; curves: %s/curves.svg\n",
                   r.rounds_run, r.seconds, r.examples_per_s, r.train_loss, r.test_loss, 100 * r.test_accuracy,
                   o.c.out_dir, o.c.out_dir, o.c.out_dir);
            if (o.c.checkpoint_every > 0) printf("checkpoint: %s/checkpoint.safetensors\n", o.c.out_dir);
            if (r.dropped > 0) printf("dropped: %lld clients over the run (the warnings name them)\n", (long long)r.dropped);
        }
    }
    for (int i = 0; i < o.nowned; i++) free(o.owned[i]);
    fedc_mpi_finalize();
    return rc;
}
