/*
 * fedc/tasks.h — the preprocessing of the standard federated tasks, as FedJAX
 * defines it (github.com/google/fedjax, fedjax/datasets/{emnist,shakespeare,
 * stackoverflow,cifar100}.py), plus the cross-silo heart-disease task.
 *
 * Every task has a plain function that reads a client and builds a new one (the
 * input is left alone), and a hook of type fedc_client_fn that replaces a client
 * as a dataset loads it:
 *
 *     fedc_dataset_open(&ds, "../shared/data/femnist-leaf/train", FEDC_FORMAT_AUTO);
 *     fedc_dataset_set_preprocess(ds, fedc_emnist_hook, NULL);
 *     fedc_dataset_client(ds, 0, &c);   // "x" f32[n,28,28,1] = 1 - pixels, "y" i32[n]
 *
 * The output clients hold only the features the task's model reads (and FedJAX's
 * domain_id where asked for); every other feature is dropped, as FedJAX does.
 * Errors name the client and, for a bad value, the example index.
 *
 * Note: a hook may change a client's number of examples (Shakespeare's snippets
 * become sequences), so after such a hook fedc_dataset_client_examples() still
 * says what the source holds, not what the loaded client holds.
 */
#ifndef FEDC_TASKS_H
#define FEDC_TASKS_H

#include "fedc/data.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A 32-bit key for a client id (FNV-1a), for keying random streams by client
 * where only the id is at hand (a hook sees the client, not its index). */
FEDC_API uint32_t fedc_client_key(const char *id);

/* ------------------------------------------------------------------ EMNIST -- */

/* FedJAX emnist.preprocess_batch: x = 1 - pixels[..., newaxis], y = label.
 * Input: "x" (LEAF: f32[n,784], pixel/255, 1 = white) or "pixels" (TFF, FedJAX:
 * f32[n,28,28]), and "y" (LEAF) or "label" (TFF, FedJAX) i32[n].
 * Output: "x" f32[n,28,28,1], "y" i32[n] in [0, 62) (FEDC_ERANGE naming the
 * client and example otherwise), and with domain_id set FedJAX's "domain_id"
 * i32[n] (0 = high school writers f2100-f2599, 1 = census), parsed from an id
 * "f####_##" or "<16 hex>:f####_##" (FEDC_EINVAL for any other id). */
#define FEDC_EMNIST_CLASSES 62

typedef struct fedc_emnist_options {
    bool domain_id;
} fedc_emnist_options;

/* `o` may be NULL (no domain_id). */
FEDC_API fedc_status fedc_emnist_preprocess(const fedc_client_data *in, const fedc_emnist_options *o, fedc_client_data **out);
/* ctx: a const fedc_emnist_options * or NULL. */
FEDC_API fedc_status fedc_emnist_hook(void *ctx, fedc_client_data **client);

/* ------------------------------------------------------------- Shakespeare -- */

/* FedJAX shakespeare.py's character vocabulary (from TFF's text-generation
 * tutorial): the 86 bytes of fedc_shakespeare_vocab() map to ids 3..88 in order,
 * every other byte to OOV 89; 0, 1, 2 are PAD, BOS, EOS; 90 ids in all. */
#define FEDC_SHAKESPEARE_PAD 0
#define FEDC_SHAKESPEARE_BOS 1
#define FEDC_SHAKESPEARE_EOS 2
#define FEDC_SHAKESPEARE_OOV 89
#define FEDC_SHAKESPEARE_VOCAB_SIZE 90
#define FEDC_SHAKESPEARE_SEQUENCE_LENGTH 80
/* The longest sequence either text task makes (a bound that keeps sizes far from
 * overflow; FedJAX uses 20 to 80). */
#define FEDC_TASK_MAX_LENGTH (1 << 20)

FEDC_API const char *fedc_shakespeare_vocab(void); /* the 86 bytes, NUL-terminated */
FEDC_API int32_t fedc_shakespeare_char_id(unsigned char c);

/* Two inputs, told apart by their features:
 *
 * "snippets" STRINGS (TFF, FedJAX; also "text", the text reader's lines of a
 *   role's file) — FedJAX shakespeare.preprocess_client: every
 *   snippet becomes BOS + ids + EOS, all are joined into one sequence J, and
 *   x = J[:-1], y = J[1:] are padded with PAD to a multiple of sequence_length
 *   and cut into rows: "x", "y" i32[M, sequence_length], M = ceil((|J|-1) / L).
 *   With L = 3, ["ABCD", "E"] gives x [[BOS,A,B],[C,D,EOS],[BOS,E,PAD]] and
 *   y [[A,B,C],[D,EOS,BOS],[E,EOS,PAD]]. A client without snippets has no rows.
 *
 * "x" and "y" STRINGS (LEAF: x 80 characters, y the next one) — the same
 *   character ids without BOS, EOS or padding: "x" i32[n, L] where L is the
 *   length of the strings (all equal, FEDC_ESHAPE naming the example otherwise;
 *   80 for LEAF and for a client with none), "y" i32[n] (each y one byte).
 *   (LEAF's own models use an 80-character vocabulary; this is FedJAX's, so a
 *   model trained on either source sees the same ids.) */
typedef struct fedc_shakespeare_options {
    int64_t sequence_length; /* 0: 80; at most FEDC_TASK_MAX_LENGTH */
    /* LEAF only: "y" i32[n, L] = the next character of every position of x (x[1:]
     * then y), so that a window is one next-character sequence example for the
     * language model (docs/data.md). With a sequence_length S, "x" and "y" are
     * i32[n, S]: the window's last S positions when S <= L, else the whole window
     * followed by PAD (so a model of any context reads LEAF's 80-character
     * windows). Without leaf_sequences, LEAF ignores sequence_length. */
    bool leaf_sequences;
} fedc_shakespeare_options;

FEDC_API fedc_status fedc_shakespeare_preprocess(const fedc_client_data *in, const fedc_shakespeare_options *o,
                                        fedc_client_data **out);
/* ctx: a const fedc_shakespeare_options * or NULL. */
FEDC_API fedc_status fedc_shakespeare_hook(void *ctx, fedc_client_data **client);

/* ---------------------------------------------------------- Stack Overflow -- */

/* FedJAX stackoverflow.StackoverflowTokenizer (default_vocab_size 10000,
 * num_oov_buckets 1): word k of the vocabulary (0-based) is id k + 3, any other
 * word is OOV = size + 3; 0, 1, 2 are PAD, BOS, EOS; size + 4 ids in all. */
#define FEDC_STACKOVERFLOW_PAD 0
#define FEDC_STACKOVERFLOW_BOS 1
#define FEDC_STACKOVERFLOW_EOS 2
#define FEDC_STACKOVERFLOW_VOCAB_SIZE 10000
#define FEDC_STACKOVERFLOW_MAX_LENGTH 20

typedef struct fedc_stackoverflow_vocab fedc_stackoverflow_vocab;

/* Reads the first `size` lines (0: 10000) of a vocabulary file, most frequent word
 * first; a line is a word, optionally followed by whitespace and more (FedJAX's
 * stackoverflow.word_count has "word count" lines). Fewer lines than `size` is
 * fine. Errors: the file cannot be read (FEDC_EIO), it has no words, a line is
 * empty or a word repeats (FEDC_EPARSE, with the line). */
FEDC_API fedc_status fedc_stackoverflow_vocab_read(const char *path, int64_t size, fedc_stackoverflow_vocab **out);
/* A vocabulary from a list of words (FedJAX's `vocab` argument). */
FEDC_API fedc_status fedc_stackoverflow_vocab_create(fedc_stackoverflow_vocab **out, const char *const *words, int64_t n);
FEDC_API void fedc_stackoverflow_vocab_destroy(fedc_stackoverflow_vocab *v); /* safe on NULL */
FEDC_API int64_t fedc_stackoverflow_vocab_size(const fedc_stackoverflow_vocab *v); /* words, not ids */
/* The id of word[0 .. len): 3 + its rank, or the OOV id size + 3. */
FEDC_API int32_t fedc_stackoverflow_word_id(const fedc_stackoverflow_vocab *v, const char *word, size_t len);
/* One example: tokens[0 .. len) split on each ' ' exactly as Python's
 * str.split(' ') (so "a  b" has an empty, OOV, word between a and b, and "" is
 * one empty word), ids = [BOS] + word ids + [EOS], x = ids[:-1] and y = ids[1:],
 * each truncated or padded with PAD to max_length. */
FEDC_API void fedc_stackoverflow_tokenize(const fedc_stackoverflow_vocab *v, const char *tokens, size_t len,
                                 int64_t max_length, int32_t *x, int32_t *y);

/* Input "tokens" STRINGS (and optionally "type" STRINGS). Output "x", "y"
 * i32[n, max_length], and, where "type" is present, FedJAX's "domain_id" i32[n]
 * (1 for "answer", 0 otherwise).
 * Input "tokens" i32[n, W] instead (fedc_synthetic_zipf's sequences, the
 * benchmarks' stand-in for the real data) holds word ranks already: rank r is the
 * vocabulary's word r (id r + 3; OOV outside [0, vocabulary size)), then x and y
 * are made as fedc_stackoverflow_tokenize makes them, and no vocabulary is needed. */
typedef struct fedc_stackoverflow_options {
    const fedc_stackoverflow_vocab *vocab; /* required for STRINGS tokens */
    int64_t max_length; /* 0: 20 (FedJAX trains on 20, evaluates on 30); at most FEDC_TASK_MAX_LENGTH */
    int64_t vocab_size; /* words, for rank tokens without `vocab` (0: 10000) */
} fedc_stackoverflow_options;

FEDC_API fedc_status fedc_stackoverflow_preprocess(const fedc_client_data *in, const fedc_stackoverflow_options *o,
                                          fedc_client_data **out);
/* ctx: a const fedc_stackoverflow_options * (required). */
FEDC_API fedc_status fedc_stackoverflow_hook(void *ctx, fedc_client_data **client);

/* --------------------------------------------------------------- CIFAR-100 -- */

/* Two preprocessings FedJAX defines in cifar100.py:
 *
 * FEDC_CIFAR100_FEDJAX (preprocess_image, from kuangliu/pytorch-cifar): in
 *   training, the image is padded with 4 zero pixels on every side, cropped back
 *   to 32x32 at offsets i, j drawn from [0, 8) (numpy randint(8), so never 8), and
 *   flipped left-right with probability 1/2; then always
 *   x = (pixel / 255 - mean[c]) * (1 / std[c]) in f32, with the mean and std
 *   below. Output f32[n,32,32,3].
 * FEDC_CIFAR100_TFF (preprocess_image_tff, following TFF's baseline task): in
 *   training a crop_height x crop_width crop at offsets uniform in
 *   [0, 32 - size] and a random flip, else the centre crop at (32 - size) / 2;
 *   then per-image standardization (x - mean) / max(std, sqrt(pixels)) over the
 *   crop's h*w*3 values on the 0..255 scale. That bound is FedJAX's:
 *   tf.image.per_image_standardization, which FedJAX says it matches, uses
 *   1/sqrt(pixels), so low-contrast images differ from TF's. Output f32[n,h,w,3].
 *
 * Random draws come from the counter RNG: example e uses draw g = e /
 * examples_per_draw of fedc_rng_stream_make(seed, round, client, FEDC_CIFAR100_STEP)
 * (block g: words 0 and 1 the offsets, word 2 the flip). FedJAX draws once per
 * batch (it augments in preprocess_batch), which examples_per_draw = the batch size
 * reproduces when batches are taken in order; 0 or 1 draws for every example.
 * A hook sees a client but not its index: with client_from_id, the stream's
 * client is fedc_client_key(id) instead of `client`.
 *
 * Input "image" (or "x") u8[n,32,32,3], "label" (or "y") i32[n] in [0, 100).
 * Output "x" f32 as above, "y" i32[n]; "coarse_label" is dropped. */
#define FEDC_CIFAR100_CLASSES 100
#define FEDC_CIFAR100_STEP 0x43494641u /* "CIFA": apart from other streams of (seed, round, client) */
FEDC_API extern const float fedc_cifar100_mean[3]; /* 0.4914, 0.4822, 0.4465 */
FEDC_API extern const float fedc_cifar100_std[3];  /* 0.2023, 0.1994, 0.2010 */

typedef enum fedc_cifar100_style { FEDC_CIFAR100_FEDJAX, FEDC_CIFAR100_TFF } fedc_cifar100_style;

typedef struct fedc_cifar100_options {
    fedc_cifar100_style style;
    bool train;                  /* random crop and flip; else none (FEDJAX) or the centre crop (TFF) */
    int crop_height, crop_width; /* TFF only, 1..32; 0: 24 */
    int64_t examples_per_draw;   /* 0: 1 */
    uint64_t seed;
    uint32_t round, client;
    bool client_from_id;
} fedc_cifar100_options;

FEDC_API fedc_status fedc_cifar100_preprocess(const fedc_client_data *in, const fedc_cifar100_options *o,
                                     fedc_client_data **out);
/* ctx: a const fedc_cifar100_options * (required); set its round as rounds go by. */
FEDC_API fedc_status fedc_cifar100_hook(void *ctx, fedc_client_data **client);

/* ----------------------------------------------------------- heart disease -- */

/* UCI Heart Disease as a cross-silo task (four hospitals): input "x" f32[n,13],
 * "y" i32[n] in 0..4 and optionally the CSV reader's "missing" u8[n,13] (1 where
 * the file had '?'; the reader fills those with the silo's own mean). Output
 * "y" = (y > 0) (disease or not: the binary task of Detrano et al. and FLamby)
 * and "x" f32[n,13] = (x - mean) / std with the caller's statistics (computed on
 * the training clients only, e.g. by fedc_heart_disease_stats). With
 * impute_missing, a missing value (marked, or NaN) becomes the caller's mean (0
 * after standardizing); without, it is standardized as it stands. */
#define FEDC_HEART_DISEASE_FEATURES 13

typedef struct fedc_heart_disease_options {
    const float *mean, *std; /* FEDC_HEART_DISEASE_FEATURES each; std > 0 */
    bool impute_missing;
} fedc_heart_disease_options;

FEDC_API fedc_status fedc_heart_disease_preprocess(const fedc_client_data *in, const fedc_heart_disease_options *o,
                                          fedc_client_data **out);
/* ctx: a const fedc_heart_disease_options * (required). */
FEDC_API fedc_status fedc_heart_disease_hook(void *ctx, fedc_client_data **client);
/* The mean and the population standard deviation of each column of "x" over the
 * given clients, missing values (marked, or NaN) left out; a constant or empty
 * column gets std 1. */
FEDC_API fedc_status fedc_heart_disease_stats(const fedc_client_data *const *clients, int64_t n, float *mean, float *std);

#ifdef __cplusplus
}
#endif
#endif /* FEDC_TASKS_H */
