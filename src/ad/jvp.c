/* Forward mode by transposition. For a program p with outputs o and inputs w, the
 * vjp program computes g(w, ct) = sum_o ct_o^T J_o, linear in the cotangents. The
 * gradient, with respect to the cotangents, of <g(w, ct), t> is J t: the
 * Jacobian-vector product. So jvp = grad_ct <vjp(w, ct), t>, evaluated at ct = 0
 * (any value gives the same, by linearity), then the cotangents are replaced by
 * zeros so the result takes only p's inputs and the tangents. */
#include <string.h>

#include "ad/ad.h"

/* args [n inputs] and res [n outputs] of program v, on the heap: the programs of a
 * large model have hundreds of each. NULL, with the message set, when out of memory. */
static fedc_value *value_lists(const fedc_program *v, fedc_value **res) {
    int nin = fedc_program_num_inputs(v), nout = fedc_program_num_outputs(v);
    fedc_value *args = fedc__values(nin + nout);
    *res = args ? args + nin : NULL;
    return args;
}

/* h(inputs of v, tangents) = sum_w <grad_w, tangent_w>, output "fedc_dot", with
 * p's outputs passed through. The inner product over a @clients (@groups) w sums
 * over the clients (groups) too, so the dot is one server scalar whatever the placements. */
static fedc_status dot_program(const fedc_program *v, const fedc_program *p, const char *const *wrt, int nwrt,
                               fedc_program **out) {
    fedc_program *h;
    fedc_status st = fedc_program_create(&h);
    if (st) return st;
    int nin = fedc_program_num_inputs(v), nout = fedc_program_num_outputs(v);
    fedc_value *res, *args = value_lists(v, &res), dot = FEDC_NONE;
    if (!args) {
        fedc_program_destroy(h);
        return FEDC_ENOMEM;
    }
    for (int i = 0; i < nin; i++)
        args[i] = fedc_input(h, fedc_program_input_name(v, i), fedc_value_type(v, fedc_program_input(v, i)));
    st = fedc_program_inline(h, v, args, res);
    for (int i = 0; !st && i < nwrt; i++) {
        char name[256];
        snprintf(name, sizeof name, "tangent_%s", wrt[i]);
        fedc_value t = fedc_input(h, name, fedc_value_type(p, fedc_program_find_input(p, wrt[i])));
        fedc_value g = res[nout - nwrt + i];
        fedc_value term = fedc_reduce_sum(h, fedc_mul(h, g, t), NULL, -1, false);
        if (fedc_value_type(h, term).placement == FEDC_CLIENTS) term = fedc_sum(h, term); /* a server scalar */
        if (fedc_value_type(h, term).placement == FEDC_GROUPS) term = fedc_sum_up(h, term);
        dot = dot == FEDC_NONE ? term : fedc_add(h, dot, term);
        st = fedc_program_status(h);
    }
    for (int i = 0; !st && i < p->noutputs; i++) /* v's outputs start with p's */
        st = fedc_program_output(h, p->outputs[i].name, res[i]);
    if (!st) st = fedc_program_output(h, "fedc_dot", dot);
    fedc_free(args);
    if (st) fedc_program_destroy(h);
    else *out = h;
    return st;
}

/* The final program: p's inputs and the tangents, with the cotangents fixed at
 * zero; outputs p's outputs and "tangent_<o>". */
static fedc_status assemble(const fedc_program *p, const fedc_program *d, const char *const *wrt, int nwrt,
                            fedc_program **out) {
    fedc_program *j;
    fedc_status st = fedc_program_create(&j);
    if (st) return st;
    int nin = fedc_program_num_inputs(d), nout = fedc_program_num_outputs(d);
    fedc_value *res, *args = value_lists(d, &res);
    if (!args) {
        fedc_program_destroy(j);
        return FEDC_ENOMEM;
    }
    for (int i = 0; i < nin; i++) {
        const char *name = fedc_program_input_name(d, i);
        fedc_type t = fedc_value_type(d, fedc_program_input(d, i));
        bool is_ct = strncmp(name, "ct_", 3) == 0 && fedc_program_find_input(p, name) == FEDC_NONE;
        args[i] = is_ct ? fedc_full(j, t, 0.0) : fedc_input(j, name, t);
    }
    st = fedc_program_inline(j, d, args, res);
    /* d's outputs: "fedc_dot", the forward outputs of p (inlined through v), then
     * grad_ct_<o> for each float output o. */
    for (int i = 0; !st && i < nout; i++) {
        const char *name = fedc_program_output_name(d, i);
        char renamed[256];
        if (strncmp(name, "grad_ct_", 8) == 0) {
            snprintf(renamed, sizeof renamed, "tangent_%s", name + 8);
            st = fedc_program_output(j, renamed, res[i]);
        } else if (fedc_program_find_output(p, name) != FEDC_NONE) {
            st = fedc_program_output(j, name, res[i]);
        }
    }
    (void)nwrt;
    (void)wrt;
    fedc_free(args);
    if (!st) st = fedc_program_dce(j);
    if (st) fedc_program_destroy(j);
    else *out = j;
    return st;
}

fedc_status fedc_jvp(const fedc_program *p, const char *const *wrt, int nwrt, fedc_program **out) {
    *out = NULL;
    fedc_program *v = NULL, *h = NULL, *d = NULL;
    int ncts = 0;
    const char **cts = fedc_calloc((size_t)p->noutputs + 1, sizeof *cts);
    char (*names)[256] = fedc_calloc((size_t)p->noutputs + 1, sizeof *names);
    fedc_status st = cts && names ? fedc_vjp(p, wrt, nwrt, &v) : fedc_error(FEDC_ENOMEM, "jvp: out of memory");
    if (!st) st = dot_program(v, p, wrt, nwrt, &h);
    for (int i = 0; !st && i < p->noutputs; i++) {
        if (!fedc_dtype_is_float(p->nodes[p->outputs[i].value].type.dtype)) continue;
        snprintf(names[ncts], sizeof names[ncts], "ct_%s", p->outputs[i].name);
        cts[ncts] = names[ncts];
        ncts++;
    }
    if (!st) st = fedc_grad(h, "fedc_dot", cts, ncts, &d);
    fedc_free(cts);
    fedc_free(names);
    if (!st) st = assemble(p, d, wrt, nwrt, out);
    fedc_program_destroy(v);
    fedc_program_destroy(h);
    fedc_program_destroy(d);
    return st;
}
