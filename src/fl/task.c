/* The tasks fedc train knows: the table, which drives --task's names, the task
 * of data when none is named, the preprocessing hook set on the datasets, the
 * model's options and which models fit. A new task is one row here and, when
 * its preprocessing needs more than a hook, its file src/fl/task_<name>.c
 * (declared in fl/task.h); docs/training.md has the recipe. */
#include <stdio.h>
#include <string.h>

#include "fedc/fl.h"
#include "fl/task.h"

#define IMAGE_MODELS {"logistic", "dense", "cnn"}

/* name, example, models, formats (whose data default to it), then the rest by name (fl/task.h). */
static const fedc__task tasks[] = {
    {"emnist", "28x28 images", IMAGE_MODELS, {FEDC_FORMAT_LEAF, FEDC_FORMAT_TFF, FEDC_FORMAT_FEDJAX, FEDC_FORMAT_TEXT},
     .hook = fedc_emnist_hook},
    {"fashion", "28x28 images", IMAGE_MODELS, {FEDC_FORMAT_IDX}, .num_classes = 10, .hook = fedc__fashion_hook},
    {"heart", "13 features per example", {"heart", "logistic"}, {FEDC_FORMAT_CSV}, .num_classes = 2,
     .input_dim = FEDC_HEART_DISEASE_FEATURES, .hook = fedc_heart_disease_hook, .prepare = fedc__heart_prepare},
    {"shakespeare", "character sequences", {"shakespeare_lstm", "transformer"}, {0},
     .num_classes = FEDC_SHAKESPEARE_VOCAB_SIZE, .hook = fedc_shakespeare_hook, .prepare = fedc__shakespeare_prepare,
     .follow_length = fedc__shakespeare_follow_length},
    {"stackoverflow", "word sequences", {"stackoverflow_lstm", "transformer"}, {0}, .synthetic = true,
     .hook = fedc_stackoverflow_hook, .prepare = fedc__stackoverflow_prepare,
     .model_options = fedc__stackoverflow_model_options, .follow_length = fedc__stackoverflow_follow_length},
    {"cifar10", "32x32x3 images", {"pfl_cnn", "cnn", "logistic"}, {FEDC_FORMAT_CIFAR10}, .num_classes = 10,
     .hook = fedc__cifar10_hook, .prepare = fedc__cifar10_prepare, .model_options = fedc__cifar10_model_options},
    {"none", "28x28 images", IMAGE_MODELS, {0}, .hook = NULL}, /* the data as read */
};
enum { NTASKS = (int)(sizeof tasks / sizeof *tasks), MAX_MODELS = (int)(sizeof tasks[0].models / sizeof *tasks[0].models) };

/* names[0 .. n) joined by sep, the last two by last ("a|b|c", "a, b or c"). */
static const char *joined(const char *const *names, int n, const char *sep, const char *last, char *buf, size_t size) {
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", i == 0 ? "" : i == n - 1 ? last : sep, names[i]);
    return buf;
}

static const char *task_names(char *buf, size_t size, const char *sep, const char *last) {
    const char *names[NTASKS];
    for (int i = 0; i < NTASKS; i++) names[i] = tasks[i].name;
    return joined(names, NTASKS, sep, last, buf, size);
}

const char *fedc_train_tasks(void) {
    static _Thread_local char list[128]; /* per thread: no race to fill it */
    return list[0] ? list : task_names(list, sizeof list, "|", "|");
}

static fedc_status task_named(const char *name, const fedc__task **out) {
    for (int i = 0; i < NTASKS; i++)
        if (!strcmp(name, tasks[i].name)) {
            *out = &tasks[i];
            return FEDC_OK;
        }
    char names[128];
    return fedc_error(FEDC_EINVAL, "unknown task \"%s\" (use %s)", name, task_names(names, sizeof names, ", ", " or "));
}

static bool claims(const fedc__task *k, fedc_data_format f, bool synthetic) {
    if (synthetic) return k->synthetic;
    for (size_t j = 0; j < sizeof k->formats / sizeof *k->formats && k->formats[j] != FEDC_FORMAT_AUTO; j++)
        if (k->formats[j] == f) return true;
    return false;
}

static const fedc__task *task_of_data(fedc_data_format f, bool synthetic) {
    for (int i = 0; i < NTASKS; i++)
        if (claims(&tasks[i], f, synthetic)) return &tasks[i];
    return NULL;
}

fedc_status fedc__task_resolve(const char *name, fedc_data_format f, bool synthetic, const fedc__task **out) {
    char names[128];
    if (name) {
        fedc_status st = task_named(name, out);
        if (st || !synthetic || (*out)->synthetic) return st;
        const fedc__task *k = task_of_data(f, true);
        return fedc_error(FEDC_EINVAL, "synthetic Zipf data are word sequences: use --task %s, not %s",
                          k ? k->name : "?", name);
    }
    *out = task_of_data(f, synthetic);
    if (*out) return FEDC_OK;
    return fedc_error(FEDC_EINVAL, "no task is the default for %s data: name one with --task (%s)",
                      synthetic ? "synthetic" : fedc_data_format_name(f), task_names(names, sizeof names, ", ", " or "));
}

/* Whether the table's entry names the model: "transformer" stands for every preset. */
static bool names_model(const char *entry, const char *model) {
    if (strcmp(entry, "transformer")) return !strcmp(entry, model);
    return !strncmp(model, "transformer", 11) && (!model[11] || model[11] == ':');
}

/* A loaded model ("onnx:FILE") fits the image and vector tasks: it gets the
 * task's input options and the classes of the task's first model, so that an
 * output of other classes is refused by name. */
static fedc_status loaded_model_options(const fedc__task *k, const char *model, fedc_model_options *o) {
    if (k->follow_length)
        return fedc_error(FEDC_EINVAL, "model \"%s\" does not fit the %s task (%s): a model from a file is trained "
                          "on images or feature vectors, one label each", model, k->name, k->example);
    o->num_classes = k->num_classes;
    o->input_dim = k->input_dim;
    fedc_model *builtin = NULL;
    fedc_status st = fedc_model_create(&builtin, k->models[0], o);
    if (!st) o->num_classes = fedc_model_num_classes(builtin);
    fedc_model_destroy(builtin);
    return st;
}

fedc_status fedc__task_model_options(const fedc__task *k, const trainer *t, const char *model, fedc_model_options *o) {
    if (fedc_model_name_is_loaded(model)) return loaded_model_options(k, model, o);
    const char *shown[MAX_MODELS];
    int n = 0;
    bool fits = false;
    for (; n < MAX_MODELS && k->models[n]; n++) {
        fits |= names_model(k->models[n], model);
        shown[n] = strcmp(k->models[n], "transformer") ? k->models[n] : "transformer[:PRESET]";
    }
    char list[128];
    if (!fits)
        return fedc_error(FEDC_EINVAL, "model \"%s\" does not fit the %s task (%s); use --model %s", model, k->name,
                          k->example, joined(shown, n, ", ", " or ", list, sizeof list));
    o->num_classes = k->num_classes;
    o->input_dim = k->input_dim;
    if (k->model_options) k->model_options(t, o);
    return FEDC_OK;
}
