/* task.h — the tasks fedc train knows (internal). A task says what the data's
 * examples are, the preprocessing that turns a client as read into the model's
 * "x" and "y" (include/fedc/tasks.h's hooks), the model options that follow,
 * and which models fit. src/fl/task.c holds the table, one row a task; a task
 * whose preprocessing needs more than a hook has its file, src/fl/task_<name>.c,
 * its functions declared here. docs/training.md says how to add one. */
#ifndef FEDC_FL_TASK_H
#define FEDC_FL_TASK_H

#include "fedc/nn.h"
#include "fedc/tasks.h"

typedef struct trainer trainer; /* src/fl/train.h */

/* The cifar10 task's per-channel statistics of the training images. */
typedef struct fedc__cifar10_stats {
    float mean[3], std[3];
} fedc__cifar10_stats;

/* The language models' output covers the vocabulary and 4 special ids, at most
 * 2^20 classes. */
enum { FEDC__MAX_VOCAB = (1 << 20) - 4 };

typedef struct fedc__task {
    const char *name;           /* as --task takes it */
    const char *example;        /* what an example is, for messages: "28x28 images" */
    const char *models[3];      /* the models that fit; "transformer" is transformer[:PRESET] */
    fedc_data_format formats[5]; /* data of these formats are of this task unless --task says otherwise */
    bool synthetic;             /* synthetic:zipf data (word ranks) are of this task, and fit no other */
    int num_classes, input_dim; /* the model's options (0: the model's default) */
    fedc_client_fn hook;        /* a client as read -> "x", "y"; NULL: the data are used as read */
    /* The hook's options (*ctx), made from the config and the opened data before
     * any client loads; NULL: the hook takes none. */
    fedc_status (*prepare)(trainer *t, void **ctx);
    /* Model options that follow what prepare found (a vocabulary's size); NULL: none. */
    void (*model_options)(const trainer *t, fedc_model_options *o);
    /* Sequence tasks: the model's tokens per example, which the rows then have. */
    void (*follow_length)(trainer *t, int64_t length);
} fedc__task;

/* The job's task: `name`, or where NULL the one that data of format f are of,
 * or synthetic:zipf data (synthetic); FEDC_EINVAL where synthetic data are
 * named another task, an unknown name (listing the known ones), or no task
 * claims the format. */
fedc_status fedc__task_resolve(const char *name, fedc_data_format f, bool synthetic, const fedc__task **out);
/* Checks that `model` fits task k (FEDC_EINVAL saying what fits otherwise) and
 * sets the options the task gives it. */
fedc_status fedc__task_model_options(const fedc__task *k, const trainer *t, const char *model, fedc_model_options *o);

/* The tasks' own files. */
fedc_status fedc__fashion_hook(void *ctx, fedc_client_data **client);                /* task_fashion.c */
/* Replaces *client by one whose "x" (type t, f32) is its u8 "x" scaled, element i
 * as (x - shift[c]) / scale[c] with c = i % (t's last dimension), and "y" as it was
 * ("x" and "y" already checked). */
fedc_status fedc__task_scale_images(fedc_client_data **client, fedc_type t, const float *shift, const float *scale);
fedc_status fedc__heart_prepare(trainer *t, void **ctx);                             /* task_heart.c */
fedc_status fedc__cifar10_prepare(trainer *t, void **ctx);                           /* task_cifar10.c */
fedc_status fedc__cifar10_hook(void *ctx, fedc_client_data **client);
void fedc__cifar10_model_options(const trainer *t, fedc_model_options *o);
fedc_status fedc__shakespeare_prepare(trainer *t, void **ctx);                       /* task_shakespeare.c */
void fedc__shakespeare_follow_length(trainer *t, int64_t length);
fedc_status fedc__stackoverflow_prepare(trainer *t, void **ctx);                     /* task_stackoverflow.c */
void fedc__stackoverflow_model_options(const trainer *t, fedc_model_options *o);
void fedc__stackoverflow_follow_length(trainer *t, int64_t length);

#endif
