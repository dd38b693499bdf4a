/* The compute devices by name (device.h): the built-in CPU ones, then any that a
 * test or an embedding program registers; how options choose one; and the check
 * that a device runs every node of a program, made once when an executor is
 * created so that a run never meets a node its device cannot run. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "exec/device.h"

enum { MAX_DEVICES = 16 };

/* The first is the default. A device built into fedc is one more entry here. */
static const fedc__device *devices[MAX_DEVICES] = {&fedc__device_cpu, &fedc__device_cpu_reference};
static int ndevices = 2;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* registration may race with lookups */

const char *fedc_device_name(int i) {
    pthread_mutex_lock(&lock);
    const char *name = i >= 0 && i < ndevices ? devices[i]->name : NULL;
    pthread_mutex_unlock(&lock);
    return name;
}

static const fedc__device *find_locked(const char *name) {
    for (int i = 0; i < ndevices; i++)
        if (strcmp(devices[i]->name, name) == 0) return devices[i];
    return NULL;
}

const fedc__device *fedc__device_find(const char *name) {
    pthread_mutex_lock(&lock);
    const fedc__device *d = find_locked(name);
    pthread_mutex_unlock(&lock);
    return d;
}

/* "cpu, cpu-reference, ...", for the message that refuses an unknown name. */
static void list_names(char *to, size_t size) {
    size_t used = 0;
    to[0] = '\0';
    for (int i = 0; fedc_device_name(i) && used < size; i++)
        used += (size_t)snprintf(to + used, size - used, "%s%s", i ? ", " : "", fedc_device_name(i));
}

fedc_status fedc__device_of(const fedc_exec_options *o, const fedc__device **out) {
    const char *name = o->device ? o->device : o->reference_kernels ? fedc__device_cpu_reference.name
                                                                    : fedc__device_cpu.name;
    *out = fedc__device_find(name);
    if (!*out) {
        char known[512];
        list_names(known, sizeof known);
        return fedc_error(FEDC_EINVAL, "executor: no device \"%s\"; the devices are %s", name, known);
    }
    if (o->reference_kernels && *out != &fedc__device_cpu_reference)
        return fedc_error(FEDC_EINVAL, "executor: reference_kernels asks for the device \"%s\", but device is \"%s\"; "
                          "set device alone", fedc__device_cpu_reference.name, name);
    return FEDC_OK;
}

/* The first entry of k that the executor calls unguarded (kernels.def's ref column
 * REF) and k lacks, or NULL. */
#define REQUIRED_REF 1
#define REQUIRED_NONE 0
static const char *missing_kernel(const fedc__kernels *k) {
#define FEDC_KERNEL(ret, field, ref, fast, params) \
    if (REQUIRED_##ref && !k->field) return #field;
#include "kernels/kernels.def"
#undef FEDC_KERNEL
    return NULL;
}

fedc_status fedc__device_register(const fedc__device *d) {
    if (!d->name || !d->name[0] || !d->kernels || !d->buffers || !d->supports_op || !d->init || !d->synchronize)
        return fedc_error(FEDC_EINVAL, "device_register: device \"%s\" lacks a name, its kernels, its buffer type "
                          "or a hook", d->name ? d->name : "");
    const char *missing = missing_kernel(d->kernels);
    if (missing)
        return fedc_error(FEDC_EINVAL, "device_register: device \"%s\" has no kernel %s (kernels.def requires it)",
                          d->name, missing);
    pthread_mutex_lock(&lock);
    fedc_status st = find_locked(d->name) ? fedc_error(FEDC_EINVAL, "device_register: a device is named \"%s\" already",
                                                       d->name)
                     : ndevices == MAX_DEVICES ? fedc_error(FEDC_ENOMEM, "device_register: %d devices already, the most",
                                                            MAX_DEVICES)
                                               : FEDC_OK;
    if (!st) devices[ndevices++] = d;
    pthread_mutex_unlock(&lock);
    return st;
}

/* The nodes of p and of its bodies, depth first; `where` names the body. */
static fedc_status check_nodes(const fedc__device *d, const fedc_program *p, const char *where) {
    for (int v = 0; v < p->n; v++) {
        const fedc__node *n = &p->nodes[v];
        if (!d->supports_op(d, p, n))
            return fedc_error(FEDC_EUNSUPPORTED, "executor: device \"%s\" does not support %%%d (%s)%s; choose "
                              "another device (fedc_device_name lists them)", d->name, v, fedc__ops[n->op].name, where);
        if (!fedc__op_has_body(n->op)) continue;
        char body[256];
        snprintf(body, sizeof body, " in the body of %%%d (%s)%s", v, fedc__ops[n->op].name, where);
        fedc_status st = check_nodes(d, fedc__body(p, n), body);
        if (st) return st;
    }
    return FEDC_OK;
}

fedc_status fedc__device_check(const fedc__device *d, const fedc_program *p) {
    if (!d->buffers->host)
        return fedc_error(FEDC_EUNSUPPORTED, "executor: device \"%s\" keeps its buffers (%s) off the host; the "
                          "executor runs on host memory only", d->name, d->buffers->name);
    return check_nodes(d, p, "");
}
