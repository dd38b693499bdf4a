/*
 * fedc train — federated training from the command line.
 *
 * Every flag is "--name VALUE" (or a bare "--name" for the yes/no ones); the
 * same names work as "name = value" lines of an INI config file (--config FILE,
 * cli/config.c; flags given after it win). One table below says, for each, what
 * it sets, which commands take it and its valid range, and every value goes
 * through the checked parsers of cli/fedc.c. `fedc train --help` lists them.
 *
 * fedc eval --checkpoint FILE --data PATH [--model NAME] [data options] evaluates a
 * checkpoint's model on every client of PATH.
 *
 * `mpirun -np N fedc train ...` runs one training job on N processes (docs/mpi.md):
 * fedc notices the launcher, and each rank trains its share of every cohort.
 */
#include <float.h>
#include <signal.h>
#include <stddef.h>
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
    "                            .sqlite, an IDX images file, CIFAR-10's cifar-10-batches-py\n"
    "                            directory or one of its batch files, or a directory of CSV or\n"
    "                            text files; or synthetic:zipf:CLIENTS:EXAMPLES[:WORDS[:S]], Zipfian\n"
    "                            word sequences standing in for Stack Overflow (WORDS 20, S 1); or\n"
    "                            synthetic:cifar10:CLIENTS:EXAMPLES, images of CIFAR-10's shape\n"
    "  --test-data PATH          the test split (default: none; for IDX the t10k file beside\n"
    "                            --data, for a CIFAR-10 directory its test_batch)\n"
    "  --holdout F               hold out the last F (in (0, 1)) of every client's examples as the\n"
    "                            test split, as LEAF splits Shakespeare (e.g. 0.1 with the per-role\n"
    "                            text files: each role's last lines are never trained on)\n"
    "  --format NAME             %s (default: detected)\n"
    "  --task NAME               %s (default: from the\n"
    "                            format: LEAF, TFF and FedJAX are emnist, IDX fashion, CIFAR-10\n"
    "                            cifar10, CSV heart, synthetic:zipf stackoverflow)\n"
    "  --vocab FILE              stackoverflow: the vocabulary, one word a line, most frequent first\n"
    "  --vocab-size N            stackoverflow: words of the vocabulary, 1 to 1048572 (default 10000)\n"
    "  --client-domains FILE     \"client_id,domain\" lines: each client's domain (agnostic_fedavg;\n"
    "                            default: EMNIST writer ids' groups, else 0)\n"
    "  --partition SPEC          split centralized data: iid|dirichlet:ALPHA|shards:K (default\n"
    "                            iid for IDX and CIFAR-10)\n"
    "  --num-clients N           clients to split centralized data into, 1 to 1048576 (default 100)\n"
    "model and algorithm\n"
    "  --model NAME              logistic|dense|cnn|heart|shakespeare_lstm|stackoverflow_lstm|\n"
    "                            transformer[:tiny|small|medium|base] (default cnn); text tasks cut\n"
    "                            or pad their sequences to the model's length (a transformer's\n"
    "                            context); onnx:FILE.onnx trains an ONNX model on an image or\n"
    "                            vector task from its initializers (docs/onnx.md)\n"
    "  --algorithm NAME          fedavg (the default), or another of `fedc train --algorithms`:\n"
    "                            fedsgd, fedprox, scaffold, apfl, mime, mimelite, agnostic_fedavg,\n"
    "                            hypcluster, fednova, feddyn, diloco, fedbuff, fedasync, hierfavg,\n"
    "                            hierfedopt, or one registered by the program\n"
    "                            (default fedavg; `fedc train --algorithms` lists them)\n"
    "  --set NAME=VALUE          one of the algorithm's hyperparameters; repeatable (`fedc train\n"
    "                            --algorithm NAME --help` lists them, with their ranges)\n"
    "  --prox-mu X               the same as --set mu=X (FedProx's mu)\n"
    "  --weighting HOW           how the server weights the clients: examples (trained on this\n"
    "                            round; the default), dataset (its size) or uniform\n"
    "  --rounds N                1 to 1000000 (default 100)\n"
    "  --clients-per-round N     1 to 1048576 (default 10)\n"
    "  --groups N                every training client in one of N groups, contiguous ranges of the\n"
    "                            data's clients, for an algorithm with a group level (hierfavg,\n"
    "                            hierfedopt; default: one group); each round's cohort is ordered by\n"
    "                            group\n"
    "  --groups dirichlet:N:ALPHA  N groups whose shares of the clients are Dirichlet(ALPHA),\n"
    "                            drawn from --seed\n"
    "  --groups-file FILE        \"client_id,group\" lines: each training client's group, 0 to N-1\n"
    "  --groups-per-round G      draw G of the groups a round, then up to --clients-per-group K\n"
    "  --clients-per-group K     of each one's clients (default: all; either replaces\n"
    "                            --clients-per-round)\n"
    "  --batch-size N            1 to 10000 (default 20)\n"
    "  --epochs N                local epochs per round, 1 to 10000 (default 1)\n"
    "  --steps N                 at most N local steps per round, 1 to 1000000 (default: the\n"
    "                            epochs' batches)\n"
    "  --client-opt NAME         sgd|momentum|nesterov|adam|adagrad|yogi|rmsprop (default sgd)\n"
    "  --client-lr X             above 0, finite in f32 (default 0.1)\n"
    "  --server-opt NAME         sgd|momentum|nesterov|adam|adagrad|yogi|rmsprop (default sgd;\n"
    "                            adam with fedavg is FedAdam, and so on; with hierfedopt each\n"
    "                            group's own, the server averaging the groups)\n"
    "  --server-lr X             above 0, finite in f32 (default 1; a rate that makes the model\n"
    "                            diverge stops the run, naming the round)\n"
    "  --server-eps X            the server optimizer's epsilon, above 0, at most 1 (default: the\n"
    "                            optimizer's)\n"
    "  --no-dropout              train without the model's dropout\n"
    "  --frozen-batchnorm        an onnx: model's BatchNormalization trains on its running\n"
    "                            statistics, which stay as they are (default: on the batch's, the\n"
    "                            running ones updated and averaged like parameters; docs/onnx.md)\n"
    "privacy and robustness (docs/privacy.md; fedavg, fedprox, fedsgd, fednova, scaffold, apfl, diloco)\n"
    "  --robust-zero B           zero each client update whose L2 norm exceeds B, or with a NaN/Inf\n"
    "  --dp-clip C               DP-FedAvg: clip each update to L2 norm C, sum unweighted, add noise,\n"
    "                            divide by --clients-per-round (TFF's DifferentiallyPrivateFactory)\n"
    "  --dp-noise Z              the noise multiplier: Gaussian noise of stddev Z x C on the sum\n"
    "                            (default 0); metrics.jsonl then reports epsilon so far\n"
    "  --dp-adaptive [SPEC]      adapt C to a quantile of the update norms (Andrew et al. 2021);\n"
    "                            SPEC: quantile=Q,lr=ETA,count-stddev=S (TFF's 0.5, 0.2, 0.05 x\n"
    "                            clients per round); --dp-clip then is the initial clip (default 0.1)\n"
    "  --dp-delta D              the delta of the reported epsilon, in (0, 1) (default 1 / clients)\n"
    "  --compress SPEC           uniform:BITS[,rotate]: each client quantizes its update to 2^BITS\n"
    "                            levels a tensor (BITS 1 to 24; FedJAX's uniform stochastic\n"
    "                            quantization), after a structured Walsh-Hadamard rotation with\n"
    "                            rotate; with --dp-clip, before the clip (default off)\n"
    "  --aggregator SPEC         a Byzantine-robust aggregate of the client updates in place of the\n"
    "                            weighted mean: median, trimmed_mean:beta=B, krum:f=F,\n"
    "                            multikrum:f=F,m=M, bulyan:f=F, geomed[:nu=V,iterations=R],\n"
    "                            cclip:tau=T[,iterations=L]; any takes memory=MB, the updates held\n"
    "                            in memory, the rest in a temporary file (docs/privacy.md; default\n"
    "                            mean, whose mean:memory=MB is that of ALIE's and IPM's store)\n"
    "  --attack SPEC             for evaluation: the --attackers FRAC of the clients (a seeded draw\n"
    "                            by client) send sign_flip, scale:s=S, gaussian:sigma=S, alie:z=Z\n"
    "                            or ipm:eps=E in place of their update, or label_flip: train on\n"
    "                            labels y -> C-1-y (docs/privacy.md)\n"
    "  --sampling HOW            fixed: exactly --clients-per-round clients a round (the default);\n"
    "                            poisson[:Q]: each client joins with probability Q (default:\n"
    "                            clients-per-round / clients), the sampling DP's accounting assumes\n"
    "  --rng NAME                whose draws pick the clients and shuffle their examples: counter\n"
    "                            (fedc's, keyed by (seed, round, client); the default) or fedjax\n"
    "                            (FedJAX's: NumPy's RandomState as UniformGetClientSampler(seed)\n"
    "                            samples round r+1 and ShuffleRepeatBatchHParams(seed=seed) shuffles,\n"
    "                            so the run sees FedJAX's clients and batches; --seed below 2^32,\n"
    "                            --sampling fixed, no per-group sampling, --clock or asynchronous\n"
    "                            algorithm)\n"
    "  --secure-sum BITS         secure sum's arithmetic: each client's weighted update (with --dp-clip\n"
    "                            its clipped one) clipped to [-B, B] elementwise, in BITS-bit fixed\n"
    "                            point (2 to 24), summed modulo 2^32, decoded (fedc/secure_sum.h)\n"
    "  --secure-bound B          the secure sum's bound B (default: a fixed --dp-clip's C)\n"
    "time (docs/training.md, \"Time\")\n"
    "  --clock SPEC              a virtual clock: items speed=S|lognormal:MU:SIGMA|trace:FILE\n"
    "                            (seconds per step), bandwidth=B|lognormal:MU:SIGMA|inf (bytes/s),\n"
    "                            availability=always|bernoulli:P|diurnal:PERIOD:ON|trace:FILE,\n"
    "                            comma-separated; metrics gain \"time\" (virtual seconds)\n"
    "  --round-deadline S        with --clock: clients that would report after S virtual seconds\n"
    "                            are dropped from the round (default 0: none)\n"
    "  --over-select F           with --clock: select ceil(K (1 + F)) clients, keep the first K\n"
    "                            to report (default 0)\n"
    "  --replay LOG              fedbuff, fedasync: the reports in LOG's order (a run's\n"
    "                            arrivals.jsonl) instead of the clock's\n"
    "run\n"
    "  --seed N                  0 to 2^64 - 1 (default 0)\n"
    "  --threads N               worker threads for the clients, 1 to 256 (default 2)\n"
    "  --eval-every N            evaluate every N rounds, 0 to 1000000 (default 10; and after the\n"
    "                            last; 0: only after the last)\n"
    "  --eval-batch-size N       1 to 10000 (default 100)\n"
    "  --eval-clients N          evaluate on N test clients sampled by (seed, round), 0 to 1048576\n"
    "                            (default 0: all)\n"
    "  --eval-unpacked           evaluate one test client per slot, as before test clients shared\n"
    "                            batches (slower; the same counts, the loss in the last bits)\n"
    "  --out DIR                 metrics.jsonl, metrics.csv, curves.svg, checkpoint.safetensors\n"
    "                            (default fedc-run)\n"
    "  --checkpoint-every N      rounds, 0 to 1000000 (default 0: no checkpoints)\n"
    "  --export-onnx OUT.onnx    with --model onnx:FILE: the trained parameters written into a copy\n"
    "                            of FILE and, by their PyTorch state_dict names, into\n"
    "                            OUT.safetensors (from the checkpoint after the last round, which\n"
    "                            it implies: --checkpoint-every defaults to --rounds)\n"
    "  --resume                  continue from DIR/checkpoint.safetensors: refused if a setting\n"
    "                            that changes the model differs (--rounds, --threads and the\n"
    "                            evaluation and checkpoint options may; docs/training.md)\n"
    "  --strict                  stop at a client whose data cannot be loaded or whose update is\n"
    "                            not finite (default: drop it from its round, with a warning)\n"
    "  --quiet                   no progress lines\n"
    "  --profile                 print the time spent in each kind of op at the end\n"
    "  --config FILE             read options from an INI file: name = value lines, names as above\n"
    "                            without the --; the flags (resume, quiet, ...) take yes/no,\n"
    "                            true/false, on/off or 1/0; # or ; starts a comment (docs/training.md)\n"
    "\n"
    "mpirun -np N fedc train ... runs one job on N processes or hosts: each rank trains its share\n"
    "of every round's clients on --threads threads, with the same results (docs/mpi.md).\n"
    "Exit status: 0 done, 1 the training failed (data missing or unfit for the task or model,\n"
    "a file that cannot be written), 2 bad usage (a bad option, value or config file).\n";

static const char eval_usage[] =
    "usage: fedc eval --checkpoint FILE --data PATH [--model NAME] [--task NAME] [--format NAME]\n"
    "                 [--partition SPEC --num-clients N] [--seed N] [--holdout F] [--vocab FILE]\n"
    "                 [--vocab-size N] [--eval-batch-size N] [--eval-clients N] [--eval-unpacked]\n"
    "                 [--threads N] [--config FILE]\n"
    "evaluates the model in FILE (a checkpoint.safetensors written by fedc train) on every client\n"
    "of PATH (with --holdout F, on the last F of each client's examples), and prints the loss,\n"
    "the accuracy and, when there are several test clients, the quantiles of the clients'\n"
    "accuracies. The options mean what they mean for fedc train (fedc train --help).\n"
    "Exit status: 0 done, 1 the evaluation failed, 2 bad usage.\n";

/* ------------------------------------------------------------- options -- */

typedef struct options {
    const char *cmd;   /* "fedc train" or "fedc eval" */
    unsigned command;  /* TRAIN or EVAL */
    fedc_train_config c;
    const char *client_opt, *server_opt, *algorithm, *weighting;
    const char *rng;         /* --rng counter|fedjax */
    const char *dp_adaptive; /* --dp-adaptive [SPEC] (SPEC "on" when none is given) */
    const char *sampling;    /* --sampling fixed|poisson[:Q] */
    const char *groups;      /* --groups N|dirichlet:N:ALPHA */
    const char *compress;    /* --compress uniform:BITS[,rotate]|off */
    const char *aggregator;  /* --aggregator mean|median|trimmed_mean:beta=B|krum:f=F|... */
    const char *attack;      /* --attack sign_flip|scale:s=S|gaussian:sigma=S|alie:z=Z|ipm:eps=E|label_flip|none */
    const char *sets[32];   /* --set NAME=VALUE, in order, applied once the algorithm is known */
    int nsets;
    double prox_mu;         /* --prox-mu: --set mu=X */
    const char *checkpoint; /* fedc eval */
    const char *export_onnx; /* fedc train --export-onnx OUT.onnx */
    double client_lr, server_lr, server_eps;
    bool no_dropout;
    const char *config;     /* the config file being read */
    char **texts;           /* the config files read, which values point into */
    int ntexts;
} options;

enum { TRAIN = 1, EVAL = 2, BOTH = 3 };
typedef enum { STR, I32, I64, U64, REAL, FORMAT, FLAG, SET, SPEC } kind; /* SPEC: a STR whose value may be left out */

/* A string option's check, when the name must be one the library knows. */
typedef bool (*name_check)(const char *cmd, const char *what, const char *v);

typedef struct option {
    const char *name;
    kind kind;
    unsigned commands; /* TRAIN, EVAL or BOTH */
    size_t at;         /* offsetof its field in `options` */
    uint64_t lo, hi;   /* I32, I64, U64 */
    cli_range range;   /* REAL */
    name_check check;  /* STR */
} option;

#define MILLION 1000000
#define MAX_CLIENTS (1 << 20)

static bool check_task(const char *cmd, const char *what, const char *v);
static bool check_partition(const char *cmd, const char *what, const char *v);
static bool check_model(const char *cmd, const char *what, const char *v);
static bool check_algorithm(const char *cmd, const char *what, const char *v);
static bool check_optimizer(const char *cmd, const char *what, const char *v);
static bool check_weighting(const char *cmd, const char *what, const char *v);
static bool check_compress(const char *cmd, const char *what, const char *v);
static bool check_aggregator(const char *cmd, const char *what, const char *v);
static bool check_clock(const char *cmd, const char *what, const char *v);
static bool check_rng(const char *cmd, const char *what, const char *v);

/* OPT(name, kind, commands, field), then the integers' [lo, hi] or the reals' range, or the check. */
#define OPT(n, k, cmds, field) .name = n, .kind = k, .commands = cmds, .at = offsetof(options, field)
#define INTS(low, high) .lo = low, .hi = high
static const option table[] = {
    {OPT("data", STR, BOTH, c.data)},
    {OPT("test-data", STR, TRAIN, c.test_data)},
    {OPT("holdout", REAL, BOTH, c.holdout), .range = {0, 1, true, true}},
    {OPT("format", FORMAT, BOTH, c.format)},
    {OPT("task", STR, BOTH, c.task), .check = check_task},
    {OPT("vocab", STR, BOTH, c.vocab)},
    {OPT("vocab-size", I64, BOTH, c.vocab_size), INTS(1, (1 << 20) - 4)}, /* ids: the words + 4 fit 2^20 */
    {OPT("client-domains", STR, TRAIN, c.client_domains)},
    {OPT("partition", STR, BOTH, c.partition), .check = check_partition},
    {OPT("num-clients", I64, BOTH, c.num_clients), INTS(1, MAX_CLIENTS)},
    {OPT("model", STR, BOTH, c.model), .check = check_model},
    {OPT("algorithm", STR, TRAIN, algorithm), .check = check_algorithm},
    {OPT("set", SET, TRAIN, sets)},
    {OPT("prox-mu", REAL, TRAIN, prox_mu), .range = {0, 1e6, false, false}},
    {OPT("weighting", STR, TRAIN, weighting), .check = check_weighting},
    {OPT("rounds", I32, TRAIN, c.rounds), INTS(1, MILLION)},
    {OPT("clients-per-round", I32, TRAIN, c.clients_per_round), INTS(1, MAX_CLIENTS)},
    {OPT("groups", STR, TRAIN, groups)},
    {OPT("groups-file", STR, TRAIN, c.groups_file)},
    {OPT("groups-per-round", I32, TRAIN, c.groups_per_round), INTS(1, MAX_CLIENTS)},
    {OPT("clients-per-group", I32, TRAIN, c.clients_per_group), INTS(1, MAX_CLIENTS)},
    {OPT("batch-size", I64, TRAIN, c.algorithm.batch_size), INTS(1, 10000)}, /* more is a typo, and memory */
    {OPT("epochs", I32, TRAIN, c.epochs), INTS(1, 10000)},
    {OPT("steps", I64, TRAIN, c.steps), INTS(1, MILLION)},
    {OPT("client-opt", STR, TRAIN, client_opt), .check = check_optimizer},
    {OPT("client-lr", REAL, TRAIN, client_lr), .range = {0, FLT_MAX, true, false}},
    {OPT("server-opt", STR, TRAIN, server_opt), .check = check_optimizer},
    {OPT("server-lr", REAL, TRAIN, server_lr), .range = {0, FLT_MAX, true, false}},
    {OPT("server-eps", REAL, TRAIN, server_eps), .range = {0, 1, true, false}},
    {OPT("no-dropout", FLAG, TRAIN, no_dropout)},
    {OPT("frozen-batchnorm", FLAG, TRAIN, c.frozen_batchnorm)},
    {OPT("robust-zero", REAL, TRAIN, c.algorithm.aggregation.zero_norm), .range = {0, FLT_MAX, true, false}},
    {OPT("dp-clip", REAL, TRAIN, c.algorithm.aggregation.clip), .range = {0, FLT_MAX, true, false}},
    {OPT("dp-noise", REAL, TRAIN, c.algorithm.aggregation.noise_multiplier), .range = {0, 1e6, false, false}},
    {OPT("dp-adaptive", SPEC, TRAIN, dp_adaptive)},
    {OPT("dp-delta", REAL, TRAIN, c.dp_delta), .range = {0, 1, true, true}},
    {OPT("sampling", STR, TRAIN, sampling)},
    {OPT("rng", STR, TRAIN, rng), .check = check_rng},
    {OPT("clock", STR, TRAIN, c.clock), .check = check_clock},
    {OPT("round-deadline", REAL, TRAIN, c.round_deadline), .range = {0, 1e15, false, false}},
    {OPT("over-select", REAL, TRAIN, c.over_select), .range = {0, 100, false, false}},
    {OPT("replay", STR, TRAIN, c.replay)},
    {OPT("compress", STR, TRAIN, compress), .check = check_compress},
    {OPT("aggregator", STR, TRAIN, aggregator), .check = check_aggregator},
    {OPT("attack", STR, TRAIN, attack)},
    {OPT("attackers", REAL, TRAIN, c.algorithm.aggregation.attack.fraction), .range = {0, 1, false, false}},
    {OPT("secure-sum", I32, TRAIN, c.algorithm.aggregation.secure_sum_bits), INTS(2, 24)},
    {OPT("secure-bound", REAL, TRAIN, c.algorithm.aggregation.secure_sum_bound), .range = {0, FLT_MAX, true, false}},
    {OPT("seed", U64, BOTH, c.seed), INTS(0, UINT64_MAX)},
    {OPT("threads", I32, BOTH, c.threads), INTS(1, CLI_MAX_THREADS)},
    {OPT("eval-every", I32, TRAIN, c.eval_every), INTS(0, MILLION)},
    {OPT("eval-batch-size", I64, BOTH, c.eval_batch_size), INTS(1, 10000)},
    {OPT("eval-clients", I64, BOTH, c.eval_clients), INTS(0, MAX_CLIENTS)},
    {OPT("eval-unpacked", FLAG, BOTH, c.eval_unpacked)},
    {OPT("out", STR, TRAIN, c.out_dir)},
    {OPT("checkpoint-every", I32, TRAIN, c.checkpoint_every), INTS(0, MILLION)},
    {OPT("resume", FLAG, TRAIN, c.resume)},
    {OPT("quiet", FLAG, TRAIN, c.quiet)},
    {OPT("strict", FLAG, TRAIN, c.strict)},
    {OPT("profile", FLAG, TRAIN, c.profile)},
    {OPT("checkpoint", STR, EVAL, checkpoint)},
    {OPT("export-onnx", STR, TRAIN, export_onnx)},
};
#undef OPT
#undef INTS

static int usage_error(const options *o, const char *fmt, const char *arg) {
    fprintf(stderr, "%s: ", o->cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (see %s --help)\n", o->cmd);
    return CLI_USAGE;
}

/* The option called `name` (of either command); NULL, having said so, if none. */
static const option *find(const options *o, const char *where, const char *shown, const char *name) {
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (!strcmp(table[i].name, name)) return &table[i];
    fprintf(stderr, "%s: %sunknown option '%s' (see %s --help)\n", o->cmd, where, shown, o->cmd);
    return NULL;
}

/* True if this command takes `opt`; else says so. */
static bool takes(const options *o, const option *opt, const char *shown) {
    if (opt->commands & o->command) return true;
    fprintf(stderr, "%s: %s is an option of %s, not of %s\n", o->cmd, shown,
            o->command == EVAL ? "fedc train" : "fedc eval", o->cmd);
    return false;
}

/* Sets option `opt` from the text `v`; `what` names it in messages. */
static bool set(options *o, const option *opt, const char *what, const char *v) {
    void *field = (char *)o + opt->at;
    uint64_t n;
    switch (opt->kind) {
    case SPEC:
    case STR:
        if (!cli_text(o->cmd, what, v) || (opt->check && !opt->check(o->cmd, what, v))) return false;
        *(const char **)field = v;
        return true;
    case I32:
    case I64:
    case U64:
        if (!cli_uint(o->cmd, what, v, opt->lo, opt->hi, &n)) return false;
        if (opt->kind == I32) *(int *)field = (int)n;
        else if (opt->kind == I64) *(int64_t *)field = (int64_t)n;
        else *(uint64_t *)field = n;
        return true;
    case REAL: return cli_real(o->cmd, what, v, opt->range, (double *)field);
    case FLAG: return cli_bool(o->cmd, what, v, (bool *)field);
    case SET: /* checked once the algorithm is known (finish) */
        if (!cli_text(o->cmd, what, v)) return false;
        if (o->nsets == (int)(sizeof o->sets / sizeof *o->sets)) {
            fprintf(stderr, "%s: %s: more than %d --set options\n", o->cmd, what, o->nsets);
            return false;
        }
        o->sets[o->nsets++] = v;
        return true;
    case FORMAT:
        if (!fedc_data_format_parse(v, (fedc_data_format *)field)) return true;
        fprintf(stderr, "%s: %s: %s\n", o->cmd, what, fedc_errmsg());
        return false;
    }
    return false;
}

/* ------------------------------------------------------ the name checks -- */

/* One of fedc_train_tasks()'s "a|b|c"; the message lists them as "a, b or c". */
static bool check_task(const char *cmd, const char *what, const char *v) {
    const char *tasks = fedc_train_tasks(), *last = strrchr(tasks, '|');
    char list[256] = "";
    for (const char *t = tasks; t; t = strchr(t, '|') ? strchr(t, '|') + 1 : NULL) {
        int n = (int)strcspn(t, "|");
        if (strlen(v) == (size_t)n && !strncmp(t, v, (size_t)n)) return true;
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%.*s", t == tasks ? "" : last && t == last + 1 ? " or " : ", ", n, t);
    }
    fprintf(stderr, "%s: %s needs %s, not '%s'\n", cmd, what, list, v);
    return false;
}

/* iid, dirichlet:ALPHA or shards:K, with ALPHA and K checked as numbers. */
static bool check_partition(const char *cmd, const char *what, const char *v) {
    char part[512];
    double alpha;
    uint64_t k;
    if (!strcmp(v, "iid")) return true;
    snprintf(part, sizeof part, "%s's ALPHA in dirichlet:ALPHA", what);
    if (!strncmp(v, "dirichlet:", 10)) return cli_real(cmd, part, v + 10, (cli_range){0, 1e6, true, false}, &alpha);
    snprintf(part, sizeof part, "%s's K in shards:K", what);
    if (!strncmp(v, "shards:", 7)) return cli_uint(cmd, part, v + 7, 1, MAX_CLIENTS, &k);
    fprintf(stderr, "%s: %s needs iid, dirichlet:ALPHA or shards:K, not '%s'\n", cmd, what, v);
    return false;
}

/* Creating a model only declares its parameters: a cheap check of the name. */
static bool check_model(const char *cmd, const char *what, const char *v) {
    fedc_model *m = NULL;
    if (fedc_model_create(&m, v, NULL) == FEDC_OK) {
        fedc_model_destroy(m);
        return true;
    }
    const char *why = fedc_errmsg();
    if (!strncmp(why, "model: ", 7)) why += 7; /* the flag says so already */
    fprintf(stderr, "%s: %s: %s\n", cmd, what, why);
    return false;
}

static bool check_algorithm(const char *cmd, const char *what, const char *v) {
    if (fedc_algorithm_find(v)) return true;
    fprintf(stderr, "%s: %s: %s\n", cmd, what, fedc_errmsg());
    return false;
}

/* --rng NAME: fedc_train_config's rng. */
static bool parse_rng(const char *v, fedc_rng_kind *out) {
    if (!strcmp(v, "counter")) *out = FEDC_RNG_COUNTER;
    else if (!strcmp(v, "fedjax")) *out = FEDC_RNG_FEDJAX;
    else return false;
    return true;
}

static bool check_rng(const char *cmd, const char *what, const char *v) {
    fedc_rng_kind k;
    if (parse_rng(v, &k)) return true;
    fprintf(stderr, "%s: %s needs counter or fedjax, not '%s'\n", cmd, what, v);
    return false;
}

static bool check_weighting(const char *cmd, const char *what, const char *v) {
    fedc_weighting w;
    if (!fedc_weighting_parse(v, &w)) return true;
    fprintf(stderr, "%s: %s: %s\n", cmd, what, fedc_errmsg());
    return false;
}

static bool check_compress(const char *cmd, const char *what, const char *v) {
    fedc_aggregation a = {0};
    if (!fedc_aggregation_parse_compress(v, &a)) return true;
    fprintf(stderr, "%s: %s: %s\n", cmd, what, fedc_errmsg());
    return false;
}

static bool check_clock(const char *cmd, const char *what, const char *v) {
    fedc_clock_spec s;
    if (!fedc_clock_parse(v, &s)) return true;
    fprintf(stderr, "%s: %s: %s\n", cmd, what, fedc_errmsg());
    return false;
}

static bool check_aggregator(const char *cmd, const char *what, const char *v) {
    fedc_robust r;
    if (!fedc_robust_parse(v, &r)) return true;
    fprintf(stderr, "%s: %s: %s\n", cmd, what, fedc_errmsg());
    return false;
}

static bool check_optimizer(const char *cmd, const char *what, const char *v) {
    fedc_optimizer opt;
    if (!fedc_optimizer_parse(v, 1, &opt)) return true;
    fprintf(stderr, "%s: %s: %s\n", cmd, what, fedc_errmsg());
    return false;
}

/* ------------------------------------------------ flags and config files -- */

/* The config file's lines: "FILE:LINE: name" in messages. */
static bool config_setting(void *user, const char *name, const char *value, int line) {
    options *o = user;
    char where[4200];
    snprintf(where, sizeof where, "%.4000s:%d: ", o->config, line);
    if (!strcmp(name, "config")) {
        fprintf(stderr, "%s: %sa config file cannot read another (give --config twice)\n", o->cmd, where);
        return false;
    }
    const option *opt = find(o, where, name, name);
    if (!opt) return false;
    if (!(opt->commands & o->command)) return true; /* one file can serve train and eval */
    char what[4400];
    snprintf(what, sizeof what, "%s%s", where, name);
    return set(o, opt, what, value);
}

static int read_config(options *o, const char *path) {
    char **texts = realloc(o->texts, (size_t)(o->ntexts + 1) * sizeof *texts);
    if (!texts) {
        fprintf(stderr, "%s: out of memory\n", o->cmd);
        return CLI_FAILED;
    }
    o->texts = texts;
    o->config = path;
    bool ok = cli_config_read(o->cmd, path, config_setting, o, &o->texts[o->ntexts]);
    o->ntexts++;
    return ok ? 0 : CLI_USAGE;
}

static int parse_args(options *o, int argc, char **argv) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) return usage_error(o, "unexpected argument '%s'", a);
        bool config = !strcmp(a, "--config");
        const option *opt = config ? NULL : find(o, "", a, a + 2);
        if (!config && (!opt || !takes(o, opt, a))) return CLI_USAGE;
        if (!config && opt->kind == FLAG) {
            *(bool *)((char *)o + opt->at) = true;
            continue;
        }
        if (!config && opt->kind == SPEC && (i + 1 >= argc || !strncmp(argv[i + 1], "--", 2))) {
            *(const char **)((char *)o + opt->at) = "on";
            continue;
        }
        if (i + 1 >= argc) return usage_error(o, "%s needs a value", a);
        const char *v = argv[++i];
        int rc = config ? (cli_text(o->cmd, a, v) ? read_config(o, v) : CLI_USAGE) : set(o, opt, a, v) ? 0 : CLI_USAGE;
        if (rc) return rc;
    }
    return 0;
}

/* --robust-zero, --dp-clip, --dp-noise, --dp-adaptive and --compress together (the expected
 * clients of DP-FedAvg are --clients-per-round: the fixed-size sampler's). */
static int finish_aggregation(options *o) {
    fedc_aggregation *a = &o->c.algorithm.aggregation;
    const char *s = o->sampling;
    if (s && !strncmp(s, "poisson:", 8)) {
        o->c.poisson = true;
        if (!cli_real(o->cmd, "--sampling poisson:Q's rate Q", s + 8, (cli_range){0, 1, true, false}, &o->c.sampling_rate))
            return CLI_USAGE;
    } else if (s && (o->c.poisson = !strcmp(s, "poisson"), !o->c.poisson && strcmp(s, "fixed"))) {
        return usage_error(o, "--sampling needs fixed, poisson or poisson:Q, not '%s'", s);
    }
    if (o->dp_adaptive && fedc_aggregation_parse_adaptive(o->dp_adaptive, a))
        return usage_error(o, "--dp-adaptive: %s", fedc_errmsg());
    if (o->compress && fedc_aggregation_parse_compress(o->compress, a))
        return usage_error(o, "--compress: %s", fedc_errmsg());
    if (o->aggregator && fedc_robust_parse(o->aggregator, &a->robust))
        return usage_error(o, "--aggregator: %s", fedc_errmsg());
    if (o->attack && fedc_attack_parse(o->attack, &a->attack)) return usage_error(o, "--attack: %s", fedc_errmsg());
    if ((a->attack.kind != FEDC_ATTACK_NONE) != (a->attack.fraction > 0))
        return usage_error(o, "%s", "--attack and --attackers FRAC (> 0) go together: the attack, and the fraction of "
                           "the clients that make it");
    if (!o->c.poisson && fedc_robust_check(&a->robust, o->c.clients_per_round)) /* a fixed cohort: check it now */
        return usage_error(o, "--aggregator: %s", fedc_errmsg());
    if (a->noise_multiplier > 0 && a->clip == 0)
        return usage_error(o, "%s", "--dp-noise needs --dp-clip C or --dp-adaptive (the noise's stddev is Z x C)");
    if (o->c.dp_delta > 0 && a->noise_multiplier == 0)
        return usage_error(o, "%s", "--dp-delta is the delta of the epsilon that --dp-noise spends: give --dp-noise");
    fedc_aggregation check = *a; /* Poisson at a given rate: the expected cohort needs the data's size */
    if (check.clip > 0) check.expected_clients = o->c.poisson && o->c.sampling_rate > 0 ? 0 : o->c.clients_per_round;
    if (fedc_aggregation_check(&check)) return usage_error(o, "%s", fedc_errmsg());
    return 0;
}

/* --groups N or dirichlet:N:ALPHA. */
static int finish_groups(options *o) {
    const char *v = o->groups;
    uint64_t n;
    if (!v) return 0;
    if (strncmp(v, "dirichlet:", 10)) {
        if (!cli_uint(o->cmd, "--groups", v, 1, MAX_CLIENTS, &n)) return CLI_USAGE;
        o->c.groups = (int)n;
        return 0;
    }
    const char *colon = strchr(v + 10, ':');
    char count[32];
    if (!colon || colon - (v + 10) >= (ptrdiff_t)sizeof count)
        return usage_error(o, "--groups needs N or dirichlet:N:ALPHA, not '%s'", v);
    snprintf(count, sizeof count, "%.*s", (int)(colon - (v + 10)), v + 10);
    if (!cli_uint(o->cmd, "--groups dirichlet:N:ALPHA's N", count, 1, MAX_CLIENTS, &n) ||
        !cli_real(o->cmd, "--groups dirichlet:N:ALPHA's ALPHA", colon + 1, (cli_range){0, 1e6, true, false},
                  &o->c.groups_alpha))
        return CLI_USAGE;
    o->c.groups = (int)n;
    return 0;
}

/* What depends on several options, once all are in. */
static int finish(options *o) {
    fedc_train_config *c = &o->c;
    if (o->command == EVAL && (!c->data || !o->checkpoint))
        return usage_error(o, "%s", "--checkpoint FILE and --data PATH are required");
    if (!c->data) return usage_error(o, "%s", "--data PATH is required");
    if (c->test_data && c->holdout > 0)
        return usage_error(o, "%s", "--holdout and --test-data both give the test split: use one");
    c->algorithm.dropout = !o->no_dropout;
    if (o->command == EVAL) return 0;
    if (o->export_onnx && (!c->model || strncmp(c->model, "onnx:", 5)))
        return usage_error(o, "--export-onnx %s writes an ONNX model's trained parameters: it needs --model onnx:FILE",
                           o->export_onnx);
    if (o->export_onnx && c->checkpoint_every == 0) c->checkpoint_every = c->rounds; /* the last round's */
    if (!(c->algorithm.def = fedc_algorithm_find(o->algorithm))) return usage_error(o, "%s", fedc_errmsg());
    if (fedc_optimizer_parse(o->client_opt, o->client_lr, &c->algorithm.client_opt) ||
        fedc_optimizer_parse(o->server_opt, o->server_lr, &c->algorithm.server_opt))
        return usage_error(o, "%s", fedc_errmsg());
    if (o->server_eps > 0) c->algorithm.server_opt.eps = o->server_eps;
    if (c->algorithm.def->one_pass) c->epochs = 1;
    if (o->rng) parse_rng(o->rng, &c->rng); /* checked as it was read */
    if (o->weighting && fedc_weighting_parse(o->weighting, &c->algorithm.weighting))
        return usage_error(o, "%s", fedc_errmsg());
    if (o->prox_mu >= 0 && fedc_algorithm_set(&c->algorithm, "mu", o->prox_mu))
        return usage_error(o, "--prox-mu: %s", fedc_errmsg());
    for (int i = 0; i < o->nsets; i++)
        if (fedc_algorithm_set_text(&c->algorithm, o->sets[i])) return usage_error(o, "--set: %s", fedc_errmsg());
    int rc = finish_groups(o);
    return rc ? rc : finish_aggregation(o);
}

/* The defaults, then the command line; 0, or the exit status of a bad one. */
static int parse(options *o, unsigned command, const char *cmd, int argc, char **argv) {
    memset(o, 0, sizeof *o);
    o->cmd = cmd ? cmd : command == EVAL ? "fedc eval" : "fedc train";
    o->command = command;
    fedc_train_defaults(&o->c);
    o->prox_mu = -1; /* not given */
    o->client_opt = "sgd", o->server_opt = "sgd", o->algorithm = "fedavg";
    o->client_lr = 0.1, o->server_lr = 1;
    int rc = parse_args(o, argc, argv);
    return rc ? rc : finish(o);
}

static void release(options *o) {
    for (int i = 0; i < o->ntexts; i++) free(o->texts[i]);
    free(o->texts);
}

/* ------------------------------------------------------------ commands -- */

int fedc_cli_eval(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        fputs(eval_usage, stdout);
        return CLI_OK;
    }
    options o;
    int rc = parse(&o, EVAL, NULL, argc, argv);
    if (!rc) {
        fedc_train_result r;
        o.c.quiet = true;
        fedc_status st = fedc_evaluate_checkpoint(&o.c, o.checkpoint, &r);
        if (st) {
            fprintf(stderr, "fedc eval: %s\n", fedc_errmsg());
            rc = CLI_FAILED;
        } else {
            printf("%s on %s: loss %.4f, accuracy %.2f%%", o.checkpoint, o.c.data, r.test_loss, 100 * r.test_accuracy);
            if (r.clients_evaluated > 1)
                printf(" (%lld clients: p10 %.1f%%, median %.1f%%, p90 %.1f%%)", (long long)r.clients_evaluated,
                       100 * r.accuracy_quantiles[0], 100 * r.accuracy_quantiles[1], 100 * r.accuracy_quantiles[2]);
            printf("\n");
        }
    }
    release(&o);
    return rc;
}

int cli_with_train_options(const char *cmd, int argc, char **argv, int (*run)(const fedc_train_config *c, void *user),
                           void *user) {
    options o;
    int rc = parse(&o, TRAIN, cmd, argc, argv);
    if (!rc && o.export_onnx) rc = usage_error(&o, "%s", "--export-onnx is an option of fedc train");
    if (!rc) rc = run(&o.c, user);
    release(&o);
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
    return fedc_mpi_built() ? CLI_FAILED : CLI_USAGE;
}

int fedc_cli_train(int argc, char **argv) {
    if (cli_wants_help(argc, argv)) {
        for (int i = 0; i + 1 < argc; i++) /* --algorithm NAME --help: its hyperparameters */
            if (!strcmp(argv[i], "--algorithm")) {
                const fedc_algorithm_def *def = fedc_algorithm_find(argv[i + 1]);
                if (!def) return usage_error(&(options){.cmd = "fedc train"}, "%s", fedc_errmsg());
                fedc_algorithm_print_hparams(def, stdout);
                return CLI_OK;
            }
        /* the readers' and the tasks' names, from src/data/open.c's and src/fl/task.c's tables */
        printf(train_usage, fedc_data_formats(), fedc_train_tasks());
        return CLI_OK;
    }
    if (argc > 0 && !strcmp(argv[0], "--algorithms")) {
        if (argc > 1) return usage_error(&(options){.cmd = "fedc train"}, "%s", "--algorithms takes no other options");
        for (int i = 0; i < fedc_algorithm_count(); i++)
            printf("%-16s %s\n", fedc_algorithm_at(i)->name, fedc_algorithm_at(i)->summary);
        return CLI_OK;
    }
    options o;
    int rc = parse(&o, TRAIN, NULL, argc, argv);
    if (!rc) rc = join_mpi();
    /* past the file-size limit (ulimit -f) a write fails (EFBIG) and is reported,
     * instead of the signal killing the run with a file half written */
    signal(SIGXFSZ, SIG_IGN);
    if (!rc) {
        fedc_train_result r;
        fedc_status st = fedc_train(&o.c, &r);
        if (st) { /* every rank says it: they all stopped for the same reason */
            fprintf(stderr, "fedc train: %s\n", fedc_errmsg());
            rc = CLI_FAILED;
        } else if (fedc_mpi_rank() == 0 && r.already_complete) {
            printf("%s: the run is already complete (%d rounds; --rounds N with more extends it); its last metrics: "
                   "train loss %.4f, test loss %.4f, test accuracy %.2f%%\n", o.c.out_dir, o.c.rounds, r.train_loss,
                   r.test_loss, 100 * r.test_accuracy);
            if (o.export_onnx) rc = cli_export_onnx(o.c.model + 5, o.c.out_dir, o.export_onnx);
        } else if (fedc_mpi_rank() == 0) {
            printf("done: %d rounds in %.1f s (%.0f examples/s); final train loss %.4f, test loss %.4f, test "
                   "accuracy %.2f%%\nmetrics: %s/metrics.jsonl, %s/metrics.csv; curves: %s/curves.svg\n",
                   r.rounds_run, r.seconds, r.examples_per_s, r.train_loss, r.test_loss, 100 * r.test_accuracy,
                   o.c.out_dir, o.c.out_dir, o.c.out_dir);
            if (o.c.checkpoint_every > 0) printf("checkpoint: %s/checkpoint.safetensors\n", o.c.out_dir);
            if (o.export_onnx) rc = cli_export_onnx(o.c.model + 5, o.c.out_dir, o.export_onnx);
            if (r.dropped > 0) /* the clock's late and over-selected clients are many and expected: not warned of */
                printf("dropped: %lld clients over the run (%s)\n", (long long)r.dropped,
                       o.c.clock ? "late or over-selected under --clock, or named by a warning" : "the warnings name them");
        }
    }
    release(&o);
    fedc_mpi_finalize();
    return rc;
}
