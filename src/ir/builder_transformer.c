/* Builders of the transformer layers' ops (include/fedc/program.h): GELU, layer
 * normalisation, fused causal attention and their backward ops. The type rules
 * are in infer.c, the kernels in src/kernels/{ref,fast}_transformer.c. */
#include "ir/ir.h"

static fedc_value emit_eps(fedc_program *p, fedc__op op, const fedc_value *in, int nin, double eps) {
    fedc__attr a = fedc__attr_make_float(FEDC_ATTR_EPS, eps);
    return fedc__emit(p, op, in, nin, &a, 1, NULL);
}

static fedc_value emit_heads(fedc_program *p, fedc__op op, const fedc_value *in, int nin, int heads) {
    fedc__attr a = fedc__attr_make_int(FEDC_ATTR_HEADS, heads);
    return fedc__emit(p, op, in, nin, &a, 1, NULL);
}

fedc_value fedc_gelu(fedc_program *p, fedc_value x) { return fedc__emit(p, FEDC_OP_GELU, &x, 1, NULL, 0, NULL); }

fedc_value fedc_gelu_grad(fedc_program *p, fedc_value x, fedc_value dy) {
    return fedc__emit(p, FEDC_OP_GELU_GRAD, (fedc_value[]){x, dy}, 2, NULL, 0, NULL);
}

fedc_value fedc_layer_norm(fedc_program *p, fedc_value x, fedc_value gamma, fedc_value beta, double eps) {
    return emit_eps(p, FEDC_OP_LAYER_NORM, (fedc_value[]){x, gamma, beta}, 3, eps);
}

fedc_value fedc_layer_norm_grad(fedc_program *p, fedc_value x, fedc_value gamma, fedc_value dy, double eps) {
    return emit_eps(p, FEDC_OP_LAYER_NORM_GRAD, (fedc_value[]){x, gamma, dy}, 3, eps);
}

fedc_value fedc_layer_norm_param_grad(fedc_program *p, fedc_value x, fedc_value dy, double eps) {
    return emit_eps(p, FEDC_OP_LAYER_NORM_PARAM_GRAD, (fedc_value[]){x, dy}, 2, eps);
}

fedc_value fedc_causal_attention(fedc_program *p, fedc_value qkv, int heads) {
    return emit_heads(p, FEDC_OP_CAUSAL_ATTENTION, &qkv, 1, heads);
}

fedc_value fedc_causal_attention_grad(fedc_program *p, fedc_value qkv, fedc_value dy, int heads) {
    return emit_heads(p, FEDC_OP_CAUSAL_ATTENTION_GRAD, (fedc_value[]){qkv, dy}, 2, heads);
}
