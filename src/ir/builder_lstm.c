/* The builders of the recurrent ops (include/fedc/program.h): plain emits, the
 * type rules (src/ir/infer.c) check the shapes. */
#include "ir/ir.h"

fedc_value fedc_lstm(fedc_program *p, fedc_value xw, fedc_value wh) {
    fedc_value in[2] = {xw, wh};
    return fedc__emit(p, FEDC_OP_LSTM, in, 2, NULL, 0, NULL);
}

fedc_value fedc_lstm_grad(fedc_program *p, fedc_value trace, fedc_value dtrace, fedc_value wh) {
    fedc_value in[3] = {trace, dtrace, wh};
    return fedc__emit(p, FEDC_OP_LSTM_GRAD, in, 3, NULL, 0, NULL);
}

fedc_value fedc_lstm_tangent(fedc_program *p, fedc_value trace, fedc_value dxw, fedc_value wh) {
    fedc_value in[3] = {trace, dxw, wh};
    return fedc__emit(p, FEDC_OP_LSTM_TANGENT, in, 3, NULL, 0, NULL);
}
