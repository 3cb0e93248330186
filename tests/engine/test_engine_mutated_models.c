/* Loading damaged models end to end (reader, graph build, validation,
 * rewrites, plan) and running the ones that still load: every outcome is
 * either OK or an error with a message, never a crash, a leak or an
 * out-of-bounds access (this test runs under ASan/UBSan in `make test`).
 * The bytes changed are the ones that describe the graph (flatbuffer tables,
 * shapes, paddings, sizes), not the float weights, which cannot break
 * anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_private.h"
#include "model/tflite.h"
#include "support/face_inputs.h"
#include "testing.h"

#ifndef MUTATIONS
#define MUTATIONS 300
#endif
#define RUNS_MAX 12 /* mutated models that load are also run (a few: time) */

static unsigned char *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = n > 0 ? malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = b ? (size_t)n : 0;
    return b;
}

/* Marks the bytes holding float constants (weights): not worth mutating. */
static unsigned char *weight_mask(const unsigned char *file, size_t size)
{
    tfl_model *m = NULL;
    unsigned char *mask = calloc(size, 1);
    if (!mask || tfl_model_read_memory(file, size, "original", &m) != OMMA_OK) {
        free(mask);
        return NULL;
    }
    for (int i = 0; i < m->n_tensors; i++) {
        const tfl_tensor *t = &m->tensors[i];
        if (!t->data || t->type == TFL_INT32)
            continue;
        size_t off = (size_t)(t->data - m->file);
        memset(mask + off, 1, t->data_size);
    }
    tfl_model_free(m);
    return mask;
}

static unsigned rnd(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

static void mutate_model(const char *path, unsigned seed)
{
    size_t size;
    unsigned char *orig = read_all(path, &size);
    REQUIRE(orig);
    unsigned char *mask = weight_mask(orig, size);
    unsigned char *copy = malloc(size);
    size_t *targets = malloc(size * sizeof *targets);
    if (!mask || !copy || !targets) {
        free(orig);
        free(mask);
        free(copy);
        free(targets);
        REQUIRE(!"buffers");
    }
    size_t nt = 0;
    for (size_t i = 0; i < size; i++)
        if (!mask[i])
            targets[nt++] = i;
    int loaded = 0, ran = 0, failed = 0, no_message = 0;
    int by_status[OMMA_STATUS_COUNT] = {0};
    for (int k = 0; k < MUTATIONS; k++) {
        memcpy(copy, orig, size);
        int flips = 1 + (int)(rnd(&seed) % 4);
        for (int f = 0; f < flips; f++) {
            size_t at = targets[rnd(&seed) % nt];
            /* Small changes to numbers (shapes, indices, offsets) reach deeper
             * than random bytes, which the reader mostly rejects. */
            switch (rnd(&seed) % 4) {
            case 0: copy[at] ^= (unsigned char)(1u << (rnd(&seed) % 8)); break;
            case 1: copy[at] += 1; break;
            case 2: copy[at] -= 1; break;
            default: copy[at] = (unsigned char)rnd(&seed); break;
            }
        }
        tfl_model *m = NULL;
        gr_graph *g = NULL;
        omma_engine *e = NULL;
        omma_clear_error();
        omma_status st = tfl_model_read_memory(copy, size, "mutated", &m);
        if (st == OMMA_OK)
            st = gr_build_tflite(m, &g);
        tfl_model_free(m);
        if (st == OMMA_OK)
            st = eng_engine_from_graph(g, NULL, &e); /* takes g */
        if (st == OMMA_OK) {
            loaded++;
            if (ran < RUNS_MAX) {
                omma_exec *x = NULL;
                float *in;
                omma_tensor_info info;
                if (omma_exec_create(e, 1, &x) == OMMA_OK &&
                    omma_exec_input(x, 0, &in) == OMMA_OK &&
                    omma_engine_input_info(e, 0, &info) == OMMA_OK) {
                    for (size_t i = 0; i < info.item_elems; i++)
                        in[i] = (float)(i % 7) / 7.0f;
                    st = omma_exec_run(x, 1);
                    ran++;
                }
                omma_exec_destroy(x);
            }
            omma_engine_release(e);
        }
        if (st != OMMA_OK) {
            failed++;
            if ((int)st > 0 && st < OMMA_STATUS_COUNT)
                by_status[st]++;
            if (omma_last_error()[0] == '\0')
                no_message++;
            if (getenv("OMMA_TEST_VERBOSE"))
                fprintf(stderr, "  %s: %s\n", omma_status_str(st), omma_last_error());
        }
    }
    fprintf(stderr, "%s: %d mutations: %d loaded (%d of them run), %d failed (FORMAT %d, "
            "UNSUPPORTED %d, other %d), %d without a message\n",
            path, MUTATIONS, loaded, ran, failed, by_status[OMMA_ERR_FORMAT],
            by_status[OMMA_ERR_UNSUPPORTED],
            failed - by_status[OMMA_ERR_FORMAT] - by_status[OMMA_ERR_UNSUPPORTED], no_message);
    CHECK(no_message == 0);
    CHECK(by_status[OMMA_ERR_INTERNAL] == 0 && by_status[OMMA_ERR_INVALID_ARG] == 0);
    CHECK(failed > 0); /* the mutations do reach the checks */
    free(orig);
    free(mask);
    free(copy);
    free(targets);
}

static void test_short_range_mutations(void) { mutate_model(FACE_MODEL_SHORT, 1); }
static void test_face_mesh_mutations(void) { mutate_model(FACE_MODEL_MESH, 2); }

int main(void)
{
    RUN(test_short_range_mutations);
    RUN(test_face_mesh_mutations);
    return testing_finish();
}
