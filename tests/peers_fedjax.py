"""peers_fedjax.py: fedc's models and algorithms against FedJAX's own, on the same
parameters and batches (docs/algorithms.md, docs/models.md):

- models: FedJAX's EMNIST logistic, dense and CNN and its Shakespeare and Stack
  Overflow LSTMs (fedjax.models.*), initialised by FedJAX (Haiku), their
  parameters renamed to fedc's by fedc.models.Model.from_haiku; logits and the
  gradient of the training loss (fedjax.model_grad) against fedc's model (the
  `--model` of the same name) and fedc.grad;
- algorithms: FedJAX's fed_avg (5 server and 2 client optimizers), fed_prox, mime,
  mime_lite, agnostic_fed_avg and hyp_cluster, 3 rounds from the same parameters
  on the batches FedJAX draws, against the library's fedavg, fedprox, mime,
  mimelite, agnostic_fedavg and hypcluster rounds (fedc.round_programs) on those
  batches.

- data (tests/peers_fedjax_data.py): FedJAX's SQLite files, batching and client
  sampler against fedc's, and a whole run: 10 rounds of FedAvg on the EMNIST CNN,
  FedJAX's loop against `fedc train --rng fedjax`.

`peers_fedjax.py [SEED] [models|algorithms|data]`. Run by tests/peers.sh under .peers/fedjax (fedjax 0.0.17 on jax 0.4.30), fedc's
Python package loaded in the same process.
"""
import os
import sys
import tempfile
from importlib.metadata import version

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# LLVM's optimisations would cost more time than the test's few runs save
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

# FedJAX 0.0.17's language models read jnp.NINF (their logits masks, for metrics only),
# which JAX 0.4.30 no longer has.
if not hasattr(jnp, "NINF"):
    jnp.NINF = -jnp.inf
import fedjax  # noqa: E402
from fedjax.core import client_datasets  # noqa: E402

import fedc  # noqa: E402
import peers_fedjax_data  # noqa: E402

MASK = client_datasets.EXAMPLE_MASK_KEY
RTOL = 1e-5


def relative_error(got, want):
    """max |got - want| over max |want|: the error relative to the array's scale. (An
    element's own relative error would measure rounding, not semantics: a logit is a
    sum of 784 to 9,216 products that cancel, which two correct f32 dot products round
    differently.)"""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return np.inf
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1e-30)
    return float(np.max(np.abs(got - want), initial=0.0)) / scale


def leaves(tree, prefix=""):
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from leaves(tree[k], prefix + k + "/")
    else:
        yield prefix[:-1], tree


# The language models' sequences: 8 tokens, not 80 or 20 (XLA compiles Haiku's unrolled
# LSTM and its gradient step by step: 80 steps take minutes); the sizes are FedJAX's.
LENGTH = 8

# (fedc model, its options, FedJAX's constructor, its arguments, vocabulary tokens)
MODELS = [
    ("logistic", {}, fedjax.models.emnist.create_logistic_model, {}, None),
    ("dense", {}, fedjax.models.emnist.create_dense_model, {}, None),
    ("cnn", {}, fedjax.models.emnist.create_conv_model, {}, None),
    # Shakespeare: characters 1..86 (0 is PAD, 87..89 BOS, EOS, OOV)
    ("shakespeare_lstm", {"sequence_length": LENGTH}, fedjax.models.shakespeare.create_lstm_model,
     {}, (1, 87)),
    # Stack Overflow: words 3..10002 (0 PAD, 1 BOS, 2 EOS, 10003 OOV); FedJAX's training
    # loss sums each sequence's tokens and scales by 1/expected_length: with every
    # token real and expected_length the length (LENGTH), that is fedc's mean over tokens.
    ("stackoverflow_lstm", {"sequence_length": LENGTH}, fedjax.models.stackoverflow.create_lstm_model,
     {"expected_length": float(LENGTH)}, (3, 10003)),
    ("stackoverflow_lstm", {"sequence_length": LENGTH, "tied_embeddings": True},
     fedjax.models.stackoverflow.create_lstm_model,
     {"expected_length": float(LENGTH), "share_input_output_embeddings": True}, (3, 10003)),
]


def model_batch(m, tokens, batch, rng):
    """A batch of fedc's input type for m, its last example padding (mask 0)."""
    spec = m.input_spec(batch)
    if tokens is None:
        x = rng.uniform(0, 1, spec.shape).astype(np.float32)
        y = rng.integers(0, m.num_classes, m.label_spec(batch).shape).astype(np.int32)
    else:
        x = rng.integers(*tokens, spec.shape).astype(np.int32)
        y = rng.integers(*tokens, m.label_spec(batch).shape).astype(np.int32)
    mask = np.ones(batch, np.float32)
    mask[-1] = 0
    return x, y, mask


def check_models(seed):
    """[(name, what, relative error)] of every model's logits and gradient."""
    rng = np.random.default_rng(seed)
    out = []
    for name, opts, create, fj_args, tokens in MODELS:
        label = name + (" (tied)" if opts.get("tied_embeddings") else "")
        fj = create(**fj_args)
        m = fedc.models.Model(name, **opts)
        hk_params = fj.init(jax.random.PRNGKey(seed))
        params = {k: {j: np.asarray(a) for j, a in v.items()} for k, v in m.from_haiku(hk_params).items()}
        back = m.to_haiku(params)
        same = jax.tree_util.tree_structure(back) == jax.tree_util.tree_structure(hk_params)
        out.append((label, "to_haiku(from_haiku(FedJAX's init)) is FedJAX's init",
                    0.0 if same else np.inf))
        x, y, mask = model_batch(m, tokens, 4, rng)
        batch = {"x": x, "y": y, MASK: mask}
        # FedJAX: eval-mode logits; the gradient of its training loss, by model_grad
        # (the masked mean of its per-example train_loss). The CNN trains with dropout
        # (Haiku's stream, not fedc's): its gradient is taken in eval mode, as fedc's is
        # without a dropout key.
        want_logits = fj.apply_for_eval(hk_params, batch)
        if name == "cnn":
            def loss(p):
                per = fj.train_loss(batch, fj.apply_for_eval(p, batch))
                return jnp.vdot(per, batch[MASK]) / jnp.sum(batch[MASK])
            want_grad = jax.grad(loss)(hk_params)
        else:
            want_grad = fedjax.model_grad(fj)(hk_params, batch, jax.random.PRNGKey(0))
        want_grad = m.from_haiku(want_grad)
        logits = fedc.program(lambda p, x, y, mask: m.apply(p, x, y, mask)["logits"])
        got_logits = logits(params, x, y, mask)
        logits.close()
        got_grad = fedc.grad(lambda p, x, y, mask: m.apply(p, x, y, mask)["loss"])(params, x, y, mask)
        out.append((label, "logits %s" % (got_logits.shape,), relative_error(got_logits, want_logits)))
        want = dict(leaves(want_grad))
        for path, g in leaves(got_grad):
            out.append((label, "gradient %s %s" % (path, g.shape), relative_error(g, want[path])))
        m.close()
    return out


# ---- algorithms: 3 rounds from the same parameters on the same batches ----

BATCH, ROUNDS, RTOL_ROUNDS = 4, 3, 1e-4
# (FedJAX's algorithm, server optimizer, the clients' examples: 3, 1 and 2 batches)
ALGORITHMS = [(("fed_avg", "sgd"), (9, 4, 6)), (("fed_avg", "adam"), (9, 4, 6)),
              (("fed_avg", "adagrad"), (9, 4, 6)), (("fed_avg", "yogi"), (9, 4, 6)),
              (("fed_avg", "rmsprop"), (9, 4, 6)),
              # (FedJAX's algorithm, server optimizer, client optimizer)
              (("fed_avg", "sgd", "momentum"), (9, 4, 6)), (("fed_avg", "adam", "momentum"), (9, 4, 6)),
              (("fed_prox", "sgd"), (9, 4, 6)),
              # Mime's full gradient is over the training batches in fedc, over each
              # example once in FedJAX (docs/algorithms.md): the same when the batch
              # size divides the clients' sizes
              (("mime", None), (12, 4, 8)), (("mime_lite", None), (12, 4, 8)),
              (("agnostic_fed_avg", None), (12, 4, 8)), (("hyp_cluster", None), (12, 4, 8))]
DOMAINS = (0, 1, 0)  # the clients' domains (agnostic_fed_avg)


def fedjax_algorithm(kind, fj, hparams):
    """(FedJAX's algorithm, fedc's round_programs options) for one configuration."""
    opt = fedjax.optimizers
    # FedJAX's optimizers at their defaults and fedc's of the same names (docs/optimizers.md)
    # Adam's eps 1e-3 (Reddi et al.'s tau), not 1e-8: at 1e-8 a coordinate whose mean delta
    # cancels to about 0 steps by about +-lr on the sign of its rounding, on either side
    server = {"sgd": (opt.sgd(1.0), 1.0), "adam": (opt.adam(0.01, eps=1e-3), 0.01),
              "adagrad": (opt.adagrad(0.1), 0.1), "yogi": (opt.yogi(0.01), 0.01),
              "rmsprop": (opt.rmsprop(0.01), 0.01)}
    client_lr = 0.1
    name, server_opt = kind[:2]
    client = dict(client_opt="sgd", client_lr=client_lr)
    if name == "fed_avg":
        client_opt = kind[2] if len(kind) > 2 else "sgd"
        clients = {"sgd": (opt.sgd(client_lr), client_lr),
                   "momentum": (opt.sgd(client_lr, momentum=0.9), client_lr)}
        alg = fedjax.algorithms.fed_avg.federated_averaging(
            fedjax.model_grad(fj), clients[client_opt][0], server[server_opt][0], hparams)
        return alg, dict(algorithm="fedavg", client_opt=client_opt, client_lr=clients[client_opt][1],
                         server_opt=server_opt, server_lr=server[server_opt][1],
                         **({"server_eps": 1e-3} if server_opt == "adam" else {}))
    if name == "fed_prox":
        mu = 0.5
        alg = fedjax.algorithms.fed_prox.fed_prox(
            fedjax.model_per_example_loss(fj), opt.sgd(client_lr), server[server_opt][0], hparams, mu)
        return alg, dict(client, algorithm="fedprox", server_opt=server_opt,
                         server_lr=server[server_opt][1], set={"mu": mu})
    # Mime and MimeLite: the base optimizer (momentum 0.9 here) is fedc's client
    # optimizer; the full gradient's batches are padded_batch's, each example once
    grads = fedjax.PaddedBatchHParams(batch_size=BATCH)
    base = dict(client_opt="momentum", client_lr=client_lr)
    if name == "mime":
        alg = fedjax.algorithms.mime.mime(fedjax.model_per_example_loss(fj), opt.sgd(client_lr, momentum=0.9),
                                          hparams, grads, 0.5)
        return alg, dict(base, algorithm="mime", set={"server_learning_rate": 0.5})
    if name == "mime_lite":
        alg = fedjax.algorithms.mime_lite.mime_lite(
            fedjax.model_per_example_loss(fj), opt.sgd(client_lr, momentum=0.9), hparams, grads, 0.5,
            client_delta_clip_norm=0.5)
        return alg, dict(base, algorithm="mimelite",
                         set={"server_learning_rate": 0.5, "client_delta_clip_norm": 0.5})
    if name == "agnostic_fed_avg":
        # two domains, a client's examples all of its domain (fedc's meta/domain); the
        # domain sums over padded_batch's batches in FedJAX, over the training batches
        # in fedc: the same when the batch size divides the clients' sizes
        alg = fedjax.algorithms.agnostic_fed_avg.agnostic_federated_averaging(
            fedjax.model_per_example_loss(fj), opt.sgd(client_lr), opt.sgd(1.0), hparams,
            fedjax.PaddedBatchHParams(batch_size=BATCH), init_domain_weights=jnp.array([0.5, 0.5]),
            domain_learning_rate=0.1)
        return alg, dict(client, algorithm="agnostic_fedavg",
                         set={"num_domains": 2, "domain_learning_rate": 0.1})
    if name == "hyp_cluster":
        # two clusters; FedJAX's maximization step over padded_batch's batches, fedc's
        # over the training batches: the same examples here
        alg = fedjax.algorithms.hyp_cluster.hyp_cluster(
            fedjax.model_per_example_loss(fj), opt.sgd(client_lr), opt.sgd(1.0),
            fedjax.PaddedBatchHParams(batch_size=BATCH), hparams)
        return alg, dict(client, algorithm="hypcluster", set={"num_clusters": 2, "kmeans_init": 0})
    raise ValueError(name)


def client_data(seed, m, sizes):
    """FedJAX's ClientDatasets of random EMNIST-shaped examples, one per client."""
    rng = np.random.default_rng(seed)
    out = []
    for i, n in enumerate(sizes):
        x, y, _ = model_batch(m, None, n, rng)
        domain = np.full(n, DOMAINS[i], np.int32)
        out.append((b"client%d" % i, fedjax.ClientDataset({"x": x, "y": y, "domain_id": domain}),
                    jax.random.PRNGKey(100 + i)))
    return out


def stacked(clients, hparams, m):
    """The batches FedJAX's algorithms draw (shuffle_repeat_batch with these hparams:
    a fixed seed, so the same each round; a short last batch is filled from the next
    epoch's shuffle) as fedc's round inputs: x, y, mask [clients, steps, batch, ...],
    steps (each client's batches), key, meta/num_examples (its dataset's size)."""
    batches = [list(cds.shuffle_repeat_batch(hparams)) for _, cds, _ in clients]
    steps = max(len(b) for b in batches)
    n = len(clients)
    x = np.zeros((n, steps) + m.input_spec(BATCH).shape, np.float32)
    y = np.zeros((n, steps, BATCH), np.int32)
    mask = np.zeros((n, steps, BATCH), np.float32)
    for c, bs in enumerate(batches):
        for s, b in enumerate(bs):
            k = len(b["y"])
            x[c, s, :k], y[c, s, :k], mask[c, s, :k] = b["x"], b["y"], 1
    return steps, {"x": x, "y": y, "mask": mask, "steps": np.array([len(b) for b in batches], np.int32),
                   "key": np.zeros((n, 4), np.int32),
                   "meta/num_examples": np.array([len(cds) for _, cds, _ in clients], np.float32),
                   "meta/domain": np.array(DOMAINS[:n], np.float32)}


def check_algorithms(seed):
    """[(algorithm, what, relative error)] of the parameters after ROUNDS rounds."""
    fj = fedjax.models.emnist.create_logistic_model()
    m = fedc.models.Model("logistic")
    hk_params = fj.init(jax.random.PRNGKey(seed))
    hparams = fedjax.ShuffleRepeatBatchHParams(batch_size=BATCH, num_epochs=1, seed=seed)
    out = []
    for kind, sizes in ALGORITHMS:
        clients = client_data(seed, m, sizes)
        steps, data = stacked(clients, hparams, m)
        alg, options = fedjax_algorithm(kind, fj, hparams)
        # HypCluster starts from given clusters: FedJAX's init of this seed and the next
        clusters = [hk_params, fj.init(jax.random.PRNGKey(seed + 1))]
        hyp = kind[0] == "hyp_cluster"
        state = alg.init(clusters if hyp else hk_params)
        for _ in range(ROUNDS):
            state, _ = alg.apply(state, clients)
        want = {"": m.from_haiku(state.params)} if not hyp else \
            {"": m.from_haiku(state.cluster_params[0]), "clusters/1/": m.from_haiku(state.cluster_params[1])}
        # FedJAX weights a client by its dataset's size (len), not by the examples it
        # trained on (shuffle_repeat_batch fills a last batch from the next epoch):
        # fedc's --weighting dataset
        progs = fedc.round_programs(m, steps, batch_size=BATCH, weighting="dataset", **options)
        inputs = [k for k, _ in progs["round"].inputs]
        server = progs["server_init"].run({"params/%s" % path: np.asarray(a) for path, a in
                                           leaves(m.from_haiku(hk_params))}, clients=len(clients))
        server = {k: v for k, v in server.items() if k.startswith("server/")}
        if hyp:  # server_init's cluster 1 is its own draw: FedJAX's instead
            server.update({"server/clusters/1/params/" + path: np.asarray(a)
                           for path, a in leaves(m.from_haiku(clusters[1]))})
        for _ in range(ROUNDS):
            res = progs["round"].run(dict(server, **{k: data[k] for k in inputs if k in data}))
            server = {k: res[k] for k in server}
        for prog in progs.values():
            if prog is not None:
                prog.close()
        label = kind[0] + (" (server %s)" % kind[1] if kind[1] else "") + \
            (" (client %s)" % kind[2] if len(kind) > 2 else "")
        for prefix, tree in want.items():
            for path, w in leaves(tree):
                got = server["server/%sparams/%s" % (prefix, path)]
                out.append((label, "%sparams %s after %d rounds" % (prefix, path, ROUNDS),
                            relative_error(got, w)))
        if hasattr(state, "domain_weights"):  # AgnosticFedAvg's lambda
            out.append((label, "domain weights after %d rounds" % ROUNDS,
                        relative_error(server["server/domain_weights"], state.domain_weights)))
    m.close()
    return out


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    only = sys.argv[2] if len(sys.argv) > 2 else None  # "models", "algorithms" or "data", by hand
    print("peers_fedjax: fedjax %s on jax %s, fedc %s; seed %d"
          % (version("fedjax"), jax.__version__, fedc.library_path, seed))
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        checks = {"models": lambda: [r + (RTOL,) for r in check_models(seed)],
                  "algorithms": lambda: [r + (RTOL_ROUNDS,) for r in check_algorithms(seed)],
                  "data": lambda: (peers_fedjax_data.check_samplers(seed) + peers_fedjax_data.check_batching(seed, tmp)
                                   + peers_fedjax_data.check_whole_run(seed, tmp, relative_error, leaves))}
        for name, check in checks.items():
            if only and name != only:
                continue
            for what, detail, err, tol in check():
                ok = err <= tol
                failed += not ok
                print("%-4s %-38s %-48s error %.3g (tolerance %g)"
                      % ("ok" if ok else "FAIL", what, detail, err, tol))
    print("peers_fedjax: %d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
