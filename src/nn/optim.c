/*
 * src/nn/optim.c — FedJAX's optimizers as functions that add one step to a
 * program (the contract is the "optimizers" section of include/fedc/nn.h).
 *
 * FedJAX (fedjax/core/optimizers.py) wraps optax: each optimizer is an optax
 * chain of a "scale_by_*" transformation and scale(-learning_rate), applied by
 * optax.apply_updates (params + updates). This file builds the same arithmetic
 * from ordinary ops, so a step runs, prints and differentiates like any other
 * program -- in the learning rate too, when it is passed as a value. Each update
 * function names the optax definition it follows; docs/optimizers.md has the
 * equations, defaults and sources.
 */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "fedc/nn.h"

/* ------------------------------------------------------------- settings -- */

static const char *const kind_names[FEDC_OPT_COUNT] = {"sgd", "momentum", "adam", "adagrad", "yogi", "rmsprop"};

static bool valid_kind(fedc_optimizer_kind kind) { return (int)kind >= 0 && kind < FEDC_OPT_COUNT; }

/* FedJAX's defaults where it wraps the optimizer (adagrad's eps is 1e-6 there,
 * 1e-7 in optax), optax's for yogi, which FedJAX does not wrap. "momentum" has no
 * default in either (sgd's momentum=None); 0.9 is the usual choice. */
fedc_optimizer fedc_optimizer_defaults(fedc_optimizer_kind kind, double learning_rate) {
    fedc_optimizer o = {.kind = kind, .learning_rate = learning_rate};
    switch (kind) {
    case FEDC_OPT_MOMENTUM: o.momentum = 0.9; break;
    case FEDC_OPT_ADAM: o.b1 = 0.9, o.b2 = 0.999, o.eps = 1e-8; break;
    case FEDC_OPT_ADAGRAD: o.eps = 1e-6, o.initial_accumulator = 0.1; break;
    case FEDC_OPT_YOGI: o.b1 = 0.9, o.b2 = 0.999, o.eps = 1e-3, o.initial_accumulator = 1e-6; break;
    /* rmsprop: decay (b2) 0.9, eps 1e-8, initial_scale (initial_accumulator) 0 */
    case FEDC_OPT_RMSPROP: o.b2 = 0.9, o.eps = 1e-8; break;
    default: break;
    }
    return o;
}

const char *fedc_optimizer_name(fedc_optimizer_kind kind) { return valid_kind(kind) ? kind_names[kind] : "unknown"; }

fedc_status fedc_optimizer_parse(const char *name, double learning_rate, fedc_optimizer *out) {
    if (!name || !out) return fedc_error(FEDC_EINVAL, "optimizer_parse: name and out must not be NULL");
    /* "nesterov" is momentum with Nesterov's look-ahead: optax.sgd(nesterov=True) */
    bool nesterov = strcmp(name, "nesterov") == 0;
    for (int k = 0; k < FEDC_OPT_COUNT; k++) {
        if (nesterov ? k == FEDC_OPT_MOMENTUM : strcmp(name, kind_names[k]) == 0) {
            *out = fedc_optimizer_defaults((fedc_optimizer_kind)k, learning_rate);
            out->nesterov = nesterov;
            return FEDC_OK;
        }
    }
    return fedc_error(FEDC_EINVAL,
                      "unknown optimizer \"%s\"; known: sgd, momentum, nesterov, adam, adagrad, yogi, rmsprop", name);
}

/* ---------------------------------------------------------------- state -- */

int fedc_optimizer_slots(const fedc_optimizer *o) {
    if (!o) return 0;
    switch (o->kind) {
    case FEDC_OPT_MOMENTUM: /* trace */
    case FEDC_OPT_ADAGRAD:  /* sum_of_squares */
    case FEDC_OPT_RMSPROP:  /* nu */
        return 1;
    case FEDC_OPT_ADAM: /* mu, nu */
    case FEDC_OPT_YOGI: return 2;
    default: return 0;
    }
}

/* Adam and Yogi divide by 1 - b^t, so they count steps (optax's `count`). */
bool fedc_optimizer_counts_steps(const fedc_optimizer *o) {
    return o && (o->kind == FEDC_OPT_ADAM || o->kind == FEDC_OPT_YOGI);
}

int fedc_optimizer_state_size(const fedc_optimizer *o, int n) {
    if (n < 0) return 0;
    return n * fedc_optimizer_slots(o) + (fedc_optimizer_counts_steps(o) ? 1 : 0);
}

/* optax's init_fn: scale_by_rss fills sum_of_squares with
 * initial_accumulator_value; scale_by_yogi fills both mu and nu with it;
 * scale_by_rms fills nu with initial_scale (kept in initial_accumulator).
 * Everything else, and the step count, starts at 0. */
double fedc_optimizer_state_init(const fedc_optimizer *o, int n, int k) {
    if (!o || k < 0 || k >= fedc_optimizer_state_size(o, n) || k >= n * fedc_optimizer_slots(o)) return 0;
    switch (o->kind) {
    case FEDC_OPT_ADAGRAD:
    case FEDC_OPT_YOGI:
    case FEDC_OPT_RMSPROP: return o->initial_accumulator;
    default: return 0;
    }
}

/* ------------------------------------------------------------ arguments -- */

static fedc_status check_value(const fedc_program *p, fedc_value v, const char *what, int i) {
    if (v < 0 || v >= fedc_program_size(p))
        return fedc_error(FEDC_EINVAL, "optimizer_step: %s[%d] is not a value of this program", what, i);
    return FEDC_OK;
}

/* v must have ref's dtype and shape (placements are left to the ops' rules). */
static fedc_status check_like(const fedc_program *p, fedc_value v, const char *what, int i, const fedc_type *ref,
                              int param) {
    fedc_status st = check_value(p, v, what, i);
    if (st) return st;
    fedc_type t = fedc_value_type(p, v);
    if (t.dtype == ref->dtype && fedc_type_same_shape(&t, ref)) return FEDC_OK;
    char a[64], b[64];
    fedc_status status = t.dtype != ref->dtype ? FEDC_ETYPE : FEDC_ESHAPE;
    return fedc_error(status, "optimizer_step: %s[%d] is %s, params[%d] is %s", what, i,
                      fedc_type_str(&t, a, sizeof a), param, fedc_type_str(ref, b, sizeof b));
}

/* The bias corrections divide by 1 - b^t, which is 0 when b = 1. */
static fedc_status check_settings(const fedc_optimizer *o) {
    if (!valid_kind(o->kind)) return fedc_error(FEDC_EINVAL, "optimizer_step: unknown optimizer kind %d", (int)o->kind);
    if (!(o->weight_decay >= 0 && isfinite(o->weight_decay)))
        return fedc_error(FEDC_EINVAL, "optimizer_step: weight decay %g must be finite and >= 0", o->weight_decay);
    if (!fedc_optimizer_counts_steps(o)) return FEDC_OK;
    if (!(o->b1 >= 0 && o->b1 < 1) || !(o->b2 >= 0 && o->b2 < 1))
        return fedc_error(FEDC_EINVAL, "optimizer_step: %s needs 0 <= b1, b2 < 1 (b1 = %g, b2 = %g)",
                          kind_names[o->kind], o->b1, o->b2);
    return FEDC_OK;
}

static fedc_status check_param(const fedc_optimizer *o, const fedc_program *p, int n, int i, const fedc_value *params,
                               const fedc_value *grads, const fedc_value *state) {
    fedc_status st = check_value(p, params[i], "params", i);
    if (st) return st;
    fedc_type t = fedc_value_type(p, params[i]);
    if (!fedc_dtype_is_float(t.dtype)) {
        char a[64];
        return fedc_error(FEDC_ETYPE, "optimizer_step: params[%d] is %s; parameters are f32 or f64", i,
                          fedc_type_str(&t, a, sizeof a));
    }
    st = check_like(p, grads[i], "grads", i, &t, i);
    for (int k = 0; !st && k < fedc_optimizer_slots(o); k++)
        st = check_like(p, state[k * n + i], "state", k * n + i, &t, i);
    return st;
}

static fedc_status check_lr(const fedc_program *p, fedc_value lr, int n, const fedc_value *params) {
    if (lr == FEDC_NONE) return FEDC_OK;
    fedc_status st = check_value(p, lr, "lr", 0);
    if (st) return st;
    fedc_type t = fedc_value_type(p, lr);
    char a[64], b[64];
    if (t.rank != 0 || !fedc_dtype_is_float(t.dtype))
        return fedc_error(FEDC_ETYPE, "optimizer_step: lr is %s; it must be a f32[] or f64[] scalar",
                          fedc_type_str(&t, a, sizeof a));
    for (int i = 0; i < n; i++) {
        fedc_type pt = fedc_value_type(p, params[i]);
        if (pt.dtype != t.dtype)
            return fedc_error(FEDC_ETYPE, "optimizer_step: lr is %s, params[%d] is %s", fedc_type_str(&t, a, sizeof a),
                              i, fedc_type_str(&pt, b, sizeof b));
    }
    return FEDC_OK;
}

static fedc_status check_count(const fedc_optimizer *o, const fedc_program *p, int n, const fedc_value *state) {
    if (!fedc_optimizer_counts_steps(o)) return FEDC_OK;
    int k = n * fedc_optimizer_slots(o);
    fedc_status st = check_value(p, state[k], "state", k);
    if (st) return st;
    fedc_type t = fedc_value_type(p, state[k]);
    if (t.dtype == FEDC_F32 && t.rank == 0) return FEDC_OK;
    char a[64];
    return fedc_error(FEDC_ETYPE, "optimizer_step: state[%d], the step count, is %s; it must be f32[]", k,
                      fedc_type_str(&t, a, sizeof a));
}

static fedc_status check_args(const fedc_optimizer *o, const fedc_program *p, fedc_value lr, int n,
                              const fedc_value *params, const fedc_value *grads, const fedc_value *state,
                              const fedc_value *new_params, const fedc_value *new_state) {
    if (!o || !p) return fedc_error(FEDC_EINVAL, "optimizer_step: the optimizer and program must not be NULL");
    fedc_status st = fedc_program_status(p);
    if (st) return st; /* an earlier builder call failed: pass its error on */
    if ((st = check_settings(o))) return st;
    if (n < 0) return fedc_error(FEDC_EINVAL, "optimizer_step: %d parameters", n);
    if (n > 0 && (!params || !grads || !new_params))
        return fedc_error(FEDC_EINVAL, "optimizer_step: params, grads and new_params must not be NULL");
    if (fedc_optimizer_state_size(o, n) > 0 && (!state || !new_state))
        return fedc_error(FEDC_EINVAL, "optimizer_step: %s keeps %d state tensors for %d parameters; state is NULL",
                          kind_names[o->kind], fedc_optimizer_state_size(o, n), n);
    for (int i = 0; !st && i < n; i++) st = check_param(o, p, n, i, params, grads, state);
    if (!st) st = check_count(o, p, n, state);
    if (!st) st = check_lr(p, lr, n, params);
    return st;
}

/* ----------------------------------------------------------------- steps -- */

typedef struct step {
    const fedc_optimizer *o;
    fedc_program *p;
    fedc_value lr;       /* the learning rate value, or FEDC_NONE for the constant */
    fedc_value count;    /* the new step count t (f32[]), if the optimizer counts */
    fedc_value bc[2][2]; /* 1 - b^t by dtype (f32, f64) and decay (b1, b2), made once */
} step;

static fedc_value K(step *s, fedc_value like, double v) { return fedc_scalar_like(s->p, like, v); }

/* optax.tree.update_moment: (1 - decay) * g + decay * m, an exponential moving
 * average (update_moment_per_elem_norm is the same of g**2). */
static fedc_value ema(step *s, fedc_value g, fedc_value m, double decay) {
    fedc_program *p = s->p;
    fedc_value new_part = fedc_mul(p, K(s, g, 1 - decay), g);
    return fedc_add(p, new_part, fedc_mul(p, K(s, m, decay), m));
}

/* jax.lax.rsqrt as 1 / sqrt(x). */
static fedc_value rsqrt(step *s, fedc_value x) {
    fedc_value one = K(s, x, 1);
    return fedc_div(s->p, one, fedc_sqrt(s->p, x));
}

/* optax.tree.bias_correction: moment / (1 - b^t). t is a value, and fedc_pow takes
 * a constant exponent, so b^t is exp(t * log b); it is made once per dtype, with t
 * cast from the f32 count. b = 0 needs no correction (0^t = 0 for t >= 1), and
 * log 0 would put infinities into the program. */
static fedc_value debias(step *s, fedc_value moment, int which) {
    double b = which ? s->o->b2 : s->o->b1;
    if (b == 0) return moment;
    fedc_dtype dt = fedc_value_type(s->p, moment).dtype;
    fedc_value *bc = &s->bc[dt == FEDC_F64][which];
    if (*bc == FEDC_NONE) {
        fedc_value t = dt == FEDC_F32 ? s->count : fedc_cast(s->p, s->count, dt);
        fedc_value bt = fedc_exp(s->p, fedc_mul(s->p, t, K(s, t, log(b))));
        *bc = fedc_sub(s->p, K(s, t, 1), bt);
    }
    return fedc_div(s->p, moment, *bc);
}

/* Adam's and Yogi's direction from the new moments: m_hat / (sqrt(v_hat + eps_root)
 * + eps), with FedJAX's eps_root = 0. */
static fedc_value adaptive_direction(step *s, fedc_value mu, fedc_value nu) {
    fedc_program *p = s->p;
    fedc_value m_hat = debias(s, mu, 0), v_hat = debias(s, nu, 1);
    fedc_value root = fedc_sqrt(p, v_hat);
    return fedc_div(p, m_hat, fedc_add(p, root, K(s, nu, s->o->eps)));
}

/* jnp.sign: -1, 0 or 1 (0 at 0, which Yogi's update relies on: a second moment
 * equal to g^2 stays put). */
static fedc_value sign(step *s, fedc_value x) {
    fedc_program *p = s->p;
    fedc_dtype dt = fedc_value_type(p, x).dtype;
    fedc_value zero = K(s, x, 0);
    fedc_value positive = fedc_cast(p, fedc_gt(p, x, zero), dt);
    return fedc_sub(p, positive, fedc_cast(p, fedc_lt(p, x, zero), dt));
}

/* An update function takes a parameter's gradient and state slots and returns the
 * direction u (new params = params - lr * u) and the new slots. */
typedef fedc_value (*update_fn)(step *s, fedc_value g, const fedc_value *in, fedc_value *out);

/* optax.sgd without momentum: identity, then scale(-lr). */
static fedc_value update_sgd(step *s, fedc_value g, const fedc_value *in, fedc_value *out) {
    (void)s, (void)in, (void)out;
    return g;
}

/* optax.trace: trace' = g + momentum * trace; u = trace', or with Nesterov
 * g + momentum * trace'. */
static fedc_value update_momentum(step *s, fedc_value g, const fedc_value *in, fedc_value *out) {
    fedc_program *p = s->p;
    double mu = s->o->momentum;
    out[0] = fedc_add(p, g, fedc_mul(p, K(s, in[0], mu), in[0]));
    return s->o->nesterov ? fedc_add(p, g, fedc_mul(p, K(s, out[0], mu), out[0])) : out[0];
}

/* optax.scale_by_adam: mu' = ema(g, b1), nu' = ema(g^2, b2), then the
 * bias-corrected direction. */
static fedc_value update_adam(step *s, fedc_value g, const fedc_value *in, fedc_value *out) {
    out[0] = ema(s, g, in[0], s->o->b1);
    out[1] = ema(s, fedc_square(s->p, g), in[1], s->o->b2);
    return adaptive_direction(s, out[0], out[1]);
}

/* optax.scale_by_rss: sum' = g^2 + sum; u = where(sum' > 0, rsqrt(sum' + eps), 0) * g. */
static fedc_value update_adagrad(step *s, fedc_value g, const fedc_value *in, fedc_value *out) {
    fedc_program *p = s->p;
    out[0] = fedc_add(p, fedc_square(p, g), in[0]);
    fedc_value zero = K(s, g, 0);
    fedc_value inv = rsqrt(s, fedc_add(p, out[0], K(s, g, s->o->eps)));
    return fedc_mul(p, fedc_select(p, fedc_gt(p, out[0], zero), inv, zero), g);
}

/* optax.scale_by_yogi: mu' = ema(g, b1); nu' = nu - (1 - b2) sign(nu - g^2) g^2;
 * then the bias-corrected direction, as Adam's. */
static fedc_value update_yogi(step *s, fedc_value g, const fedc_value *in, fedc_value *out) {
    fedc_program *p = s->p;
    out[0] = ema(s, g, in[0], s->o->b1);
    fedc_value g2 = fedc_square(p, g);
    fedc_value rate = K(s, g, 1 - s->o->b2);
    fedc_value scaled = fedc_mul(p, fedc_mul(p, rate, sign(s, fedc_sub(p, in[1], g2))), g2);
    out[1] = fedc_sub(p, in[1], scaled);
    return adaptive_direction(s, out[0], out[1]);
}

/* optax.scale_by_rms (eps inside the root, no bias correction): nu' = ema(g^2,
 * decay); u = rsqrt(nu' + eps) * g. */
static fedc_value update_rmsprop(step *s, fedc_value g, const fedc_value *in, fedc_value *out) {
    fedc_program *p = s->p;
    out[0] = ema(s, fedc_square(p, g), in[0], s->o->b2);
    return fedc_mul(p, rsqrt(s, fedc_add(p, out[0], K(s, g, s->o->eps))), g);
}

static const update_fn updates[FEDC_OPT_COUNT] = {update_sgd,     update_momentum, update_adam,
                                                  update_adagrad, update_yogi,     update_rmsprop};

/* optax.add_decayed_weights (u + wd * w; not built when wd = 0, so that the other
 * optimizers keep their bits), optax.scale(-lr), then optax.apply_updates:
 * w + (-lr * u), which is w - lr * u to the bit (negation is exact). */
static fedc_value apply(step *s, fedc_value w, fedc_value u) {
    fedc_value lr = s->lr != FEDC_NONE ? s->lr : K(s, w, s->o->learning_rate);
    if (s->o->weight_decay != 0) u = fedc_add(s->p, u, fedc_mul(s->p, K(s, w, s->o->weight_decay), w));
    return fedc_sub(s->p, w, fedc_mul(s->p, lr, u));
}

static void clear(int n, fedc_value *values) {
    for (int i = 0; values && i < n; i++) values[i] = FEDC_NONE;
}

fedc_status fedc_optimizer_step(const fedc_optimizer *o, fedc_program *p, fedc_value lr, int n,
                                const fedc_value *params, const fedc_value *grads, const fedc_value *state,
                                fedc_value *new_params, fedc_value *new_state) {
    int nstate = fedc_optimizer_state_size(o, n), slots = fedc_optimizer_slots(o);
    clear(n, new_params);
    clear(nstate, new_state);
    fedc_status st = check_args(o, p, lr, n, params, grads, state, new_params, new_state);
    if (st) return st;
    step s = {.o = o, .p = p, .lr = lr, .count = FEDC_NONE, .bc = {{FEDC_NONE, FEDC_NONE}, {FEDC_NONE, FEDC_NONE}}};
    if (fedc_optimizer_counts_steps(o)) {
        /* optax's numerics.safe_increment; an f32 count stops at 2^24, where t + 1 == t */
        fedc_value t = state[n * slots];
        s.count = fedc_add(p, t, K(&s, t, 1));
    }
    for (int i = 0; i < n; i++) {
        fedc_value in[2] = {FEDC_NONE, FEDC_NONE}, out[2] = {FEDC_NONE, FEDC_NONE};
        for (int k = 0; k < slots; k++) in[k] = state[k * n + i];
        new_params[i] = apply(&s, params[i], updates[o->kind](&s, grads[i], in, out));
        for (int k = 0; k < slots; k++) new_state[k * n + i] = out[k];
    }
    if (fedc_optimizer_counts_steps(o)) new_state[n * slots] = s.count;
    st = fedc_program_status(p);
    if (st) { /* out of memory while building: no half-made results */
        clear(n, new_params);
        clear(nstate, new_state);
    }
    return st;
}
