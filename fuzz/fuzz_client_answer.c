/* A deployment client's reading of its server's answers (client_answer.c,
 * what a client runs on every message a server sends): the input is the
 * frame, read in place as the client reads it (fedc__wire_view), then taken
 * as the answer to each request the client makes (the plan, a check-in, a
 * ready, a report), and a task's broadcast values checked against its
 * client_work. The client's plan is the fixed one of fuzz_plan_base.h, so
 * that inputs close to the seeds (fuzz/corpus/client_answer: the honest
 * answers, their task of that plan's hash) get past the hash to the later
 * checks. FEDC_FUZZ_SEEDS=DIR writes those seeds into DIR and exits. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>

#include "deploy/client.h"
#include "fuzz_plan_base.h"

static fedc_plan *base;

/* The seeds: each kind of answer as an honest server writes it. */
static void write_seeds(const char *dir) {
    const fedc_program *q = fedc_deployment_form_phase(fedc_plan_form(base), 0, FEDC_PHASE_CLIENT_WORK);
    static float zeros[1 << 12];
    fedc_tensor_entry t[FEDC__PLAN_MAX_FILES + 64];
    int nt = 0;
    for (int i = 0; i < fedc_program_num_inputs(q); i++)
        if (!strncmp(fedc_program_input_name(q, i), "broadcast/", 10))
            t[nt++] = (fedc_tensor_entry){fedc_program_input_name(q, i), fedc_value_type(q, fedc_program_input(q, i)), zeros};
    fedc_plan_file files[FEDC__PLAN_MAX_FILES];
    char names[FEDC__PLAN_MAX_FILES][72];
    int nfiles = fedc_plan_files(base, files, FEDC__PLAN_MAX_FILES), np = 0;
    fedc_tensor_entry p[FEDC__PLAN_MAX_FILES];
    for (int i = 0; i < nfiles; i++, np++) {
        snprintf(names[i], sizeof names[i], "file/%s", files[i].name);
        p[i] = (fedc_tensor_entry){names[i], fedc_type_make(FEDC_U8, 1, (int64_t[]){(int64_t)files[i].size}), files[i].data};
    }
    const char *hash = fedc_plan_hash(base);
    struct {
        const char *name;
        fedc__msg_type type;
        fedc_metadata_entry f[8];
        int nf;
        const fedc_tensor_entry *t;
        int nt;
    } seeds[] = {
        {"task", FEDC__MSG_TASK, {{"round", "0"}, {"exchange", "0"}, {"slot", "0"}, {"heartbeat_ms", "1000"}, {"added", "-1"},
                                  {"program", "round"}, {"hash", hash}}, 7, t, nt},
        {"plan", FEDC__MSG_PLAN, {{"hash", hash}}, 1, p, np},
        {"wait", FEDC__MSG_WAIT, {{"retry_ms", "20"}, {"reason", "not yet"}}, 2, NULL, 0},
        {"done", FEDC__MSG_DONE, {{"rounds", "1"}, {"added", "0"}}, 2, NULL, 0},
        {"go", FEDC__MSG_GO, {{0}}, 0, NULL, 0},
        {"ack", FEDC__MSG_ACK, {{"counted", "1"}}, 1, NULL, 0},
        {"reject", FEDC__MSG_REJECT, {{"reason", "not expected"}}, 1, NULL, 0},
    };
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++) {
        void *frame = NULL;
        size_t size = 0;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, seeds[i].name);
        FILE *f = fopen(path, "wb");
        if (!f || fedc__wire_encode(seeds[i].type, seeds[i].f, seeds[i].nf, seeds[i].t, seeds[i].nt, &frame, &size) ||
            fwrite(frame, 1, size, f) != size)
            __builtin_trap();
        fclose(f);
        fedc_free(frame);
    }
    exit(0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!base) {
        base = fuzz_plan_base(fuzz_dir("client-answer"));
        if (getenv("FEDC_FUZZ_SEEDS")) write_seeds(getenv("FEDC_FUZZ_SEEDS"));
    }
    fedc__msg m;
    if (fedc__wire_view(data, size, (size_t)1 << 20, &m) != FEDC_OK) return 0;
    for (fedc__client_request asked = FEDC__ASKED_PLAN; asked <= FEDC__ASKED_REPORT; asked++) {
        client c = {.plan = base, .form = fedc_plan_form(base), .exchanges = fedc_deployment_form_exchanges(fedc_plan_form(base)),
                    .id = "0"};
        fedc__client_answer a;
        if (fedc__client_read_answer(&c, asked, &m, &a) != FEDC_OK) continue;
        fuzz_sink += (unsigned)(a.ms + a.rounds + a.counted);
        if (a.plan) fuzz_sink += (unsigned)fedc_plan_hash(a.plan)[0], fedc_plan_destroy(a.plan);
        if (asked == FEDC__ASKED_CHECKIN && m.type == FEDC__MSG_TASK) {
            fuzz_sink += (unsigned)(a.task.round + a.task.e + a.task.slot) + (unsigned)a.task.id.slot[0];
            const fedc_program *q = fedc_deployment_form_phase(c.form, (int)a.task.e, FEDC_PHASE_CLIENT_WORK);
            if (fedc__client_task_broadcasts(&c, &m, q, NULL) == FEDC_OK) fuzz_sink += (unsigned)fedc_program_num_inputs(q);
        }
    }
    fedc__msg_free(&m);
    return 0;
}
