/* spelling.h — what a target spells of the algorithms written once for both
 * (internal). The fused LSTM (lstm.c) is written in operations on [B, w] rows
 * and a counted loop; the map and the fold (control.c) in the steps of a loop
 * over a fold's sequences. mlir_lstm.c and mlir_fold.c spell them in linalg,
 * tensor and scf, stablehlo_lstm.c and stablehlo_fold.c in StableHLO; each
 * target's scope lowering hands its table to every node (lower.h). */
#ifndef FEDC_EXPORT_SPELLING_H
#define FEDC_EXPORT_SPELLING_H

#include "export/lower.h"

/* ------------------------------------------------------------ the lstm -- */

/* One fused LSTM node being lowered: its sizes (a sequence [T, B, w], the
 * hidden width H) and, while its loop is written, the loop's names. */
typedef struct fedc__lstm {
    const lower *l;
    int64_t T, B, H;
    int c; /* 1 with the clients axis (dim 0) */
    fedc_dtype dt;
    char result[24]; /* the loop's name */
    int id;          /* stablehlo: the loop's block arguments are %w<id>_<i> */
    char zero[24];   /* stablehlo: the i32 0 of the loop body, for start indices */
} fedc__lstm;

/* The elementwise operations of the cell and its derivatives. */
typedef enum fedc__lstm_op {
    FEDC__LSTM_ADD,
    FEDC__LSTM_SUB,
    FEDC__LSTM_MUL,
    FEDC__LSTM_DIV,
    FEDC__LSTM_NEG,
    FEDC__LSTM_EXP,
    FEDC__LSTM_TANH,
} fedc__lstm_op;

/* Every name written is an SSA name into out (of 24), which is returned; types
 * are tensor types (of 160). A row is [c?, B, w], a sequence [c?, T, B, w]. */
typedef struct fedc__lstm_spelling {
    /* A splat of value, of tensor type `type`. */
    const char *(*splat)(fedc__lstm *s, double value, const char *type, char *out);
    /* op(a, b) (b NULL for one operand) on [B, w] rows. */
    const char *(*ew)(fedc__lstm *s, fedc__lstm_op op, const char *a, const char *b, int64_t w, char *out);
    /* plus + x @ wh (x [B, H], or with transposed [B, 4H] @ wh^T); plus NULL: 0. */
    const char *(*times_wh)(fedc__lstm *s, const char *x, fedc_value wh, bool transposed, const char *plus, char *out);
    /* Row t of sequence x (of type x_type), and sequence acc with row t replaced by r. */
    const char *(*row_at)(fedc__lstm *s, const char *x, const char *x_type, const char *t, int64_t w, char *out);
    const char *(*row_into)(fedc__lstm *s, const char *r, const char *acc, const char *acc_type, const char *t, int64_t w,
                            char *out);
    /* Columns [off, off + w) of row r (of width rw); n rows (widths w[i]) side by side. */
    const char *(*cols)(fedc__lstm *s, const char *r, int64_t rw, int64_t off, int64_t w, char *out);
    const char *(*concat)(fedc__lstm *s, int n, char parts[][24], const int64_t *w, char *out);
    /* Row t - 1's c (columns H..2H of trace [T, B, 6H]), zeros at t = 0. */
    const char *(*previous_c)(fedc__lstm *s, const char *trace, const char *trace_type, const char *t, char *out);
    /* The loop over the T steps (from T - 1 down when `down`), carrying n values
     * from inits (of types): their names in the body into iter, the step into t
     * (of 24). loop_end yields the n values; loop_result names its result k. */
    void (*loop_begin)(fedc__lstm *s, int n, const char *const *inits, const char *const *types, char iter[][24], char *t,
                       bool down);
    void (*loop_end)(fedc__lstm *s, int n, char values[][24], const char *const *types);
    void (*loop_result)(const fedc__lstm *s, int k, char *name, size_t size);
} fedc__lstm_spelling;

/* ------------------------------------------------------------ the fold -- */

/* One fold node being lowered (control.c): each step reads row `row` of every
 * sequence (t, or length - 1 - t when reversed; per client inside a map), runs
 * the body, and keeps the new carries and writes row `row` of the stacked
 * outputs only while t < length (`flag`). */
typedef struct fedc__fold_spelling fedc__fold_spelling;
typedef struct fedc__fold_loop {
    const fedc__fold_spelling *spell; /* the target's */
    const fedc_program *body;
    int k, m, y;  /* carries, sequences, stacked outputs */
    int c;        /* 1 when per client (inside a map): rows and flags are [clients] */
    int64_t steps;
    bool reverse;
    char len[40];                     /* the lengths' name */
    char len_type[64], flag_type[64]; /* tensor<i32> or tensor<Nxi32>, and i1 */
    char result[24];                  /* the loop's name */
    int id;                           /* stablehlo: the loop's block arguments are %w<id>_<i> */
    char t[24], ti[24];               /* the step (mlir: as an index, and as an i32) */
    char row[24], flag[24];           /* this step's row and "still running" */
    /* Sharded MLIR: the steps written out one after another (no loop). */
    bool unrolled;
    int64_t step;      /* the step being written */
    char (*last)[24];  /* the last step's carries and outputs */
    bool *needed;      /* the body outputs a wanted result needs, now or at a later step */
    bool *wanted;      /* the fold's results that its scope needs (the last step's outputs) */
    bool *body_live;   /* the body's values this step's outputs need */
    const char **types;    /* in a loop: the carried values' types, */
    char (*type_buf)[160]; /* whose text this holds */
} fedc__fold_loop;

static inline const fedc_type *fedc__fold_body_type(const fedc__fold_loop *f, fedc_value v) { return &f->body->nodes[v].type; }

struct fedc__fold_spelling {
    /* The loop over the steps carrying n values from inits (of types): the
     * carries, then the stacked outputs. Names f->result, f->t (and f->ti) and
     * the carried values inside the body, iter. */
    void (*loop_begin)(const lower *l, fedc__fold_loop *f, int n, const char *const *inits, const char *const *types,
                       char (*iter)[24]);
    /* Zeros of stacked output j, into out (unrolled: the first step's). */
    void (*zeros)(const lower *l, const fedc__fold_loop *f, int j, char *out);
    /* f->flag and f->row, those asked for, from the step and the lengths. */
    void (*row_and_flag)(const lower *l, fedc__fold_loop *f, bool flag, bool row);
    /* This step's row of sequence i, into out (of 40). */
    void (*read_row)(const lower *l, const fedc__fold_loop *f, int i, char *out);
    /* Carry i's next value (value while running, else old), and stacked output
     * j with this step's row replaced by value while running. */
    void (*keep)(const lower *l, const fedc__fold_loop *f, int i, const char *value, const char *old, char *out);
    void (*write)(const lower *l, const fedc__fold_loop *f, int j, const char *value, const char *old, char *out);
    /* The loop's yield of the n values next, and its end. */
    void (*loop_end)(const lower *l, const fedc__fold_loop *f, int n, char (*next)[24], const char *const *types);
    /* The name of the loop's result k. */
    void (*result)(const fedc__fold_loop *f, int k, char *name, size_t size);
};

/* ---------------------------------------------------------- the target -- */

struct fedc__spelling {
    fedc_status (*lower_scope)(fedc__mlir *m, fedc__mlir_scope *s);
    const fedc__lstm_spelling *lstm;
    const fedc__fold_spelling *fold;
};

extern const fedc__lstm_spelling fedc__mlir_lstm_spelling, fedc__shlo_lstm_spelling;
extern const fedc__fold_spelling fedc__mlir_fold_spelling, fedc__shlo_fold_spelling;
extern const fedc__spelling fedc__mlir_spelling, fedc__shlo_spelling;

#endif
