/* libFuzzer target for the TFLite reader (src/model/tflite.c).
 *
 * Any input must give either an error (OMMA_ERR_FORMAT / UNSUPPORTED with a
 * message naming the file, *out NULL) or a model whose every index and data
 * range is inside bounds; anything else traps, and ASan/UBSan catch reads
 * out of bounds, leaks and undefined behaviour. Built and run by
 * fuzz/run.sh tflite (make fuzz; a short run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/tflite.h"

static int consistent(const tfl_model *m, size_t size)
{
    if (m->file_size != size || m->n_tensors < 0 || m->n_operators < 0)
        return 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const tfl_tensor *t = &m->tensors[i];
        if (!t->name || t->rank < 0 || t->rank > TFL_MAX_RANK)
            return 0;
        (void)strlen(t->name); /* must be NUL-terminated in bounds */
        size_t elems = 1;
        for (int d = 0; d < t->rank; d++) {
            if (t->shape[d] < 0)
                return 0;
            elems *= (size_t)t->shape[d];
        }
        if (t->data) {
            size_t off = (size_t)(t->data - m->file);
            if (t->data < m->file || off > size || t->data_size > size - off)
                return 0;
            if (elems * (t->type == TFL_FLOAT16 ? 2u : 4u) != t->data_size)
                return 0;
        }
    }
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i] < 0 || m->inputs[i] >= m->n_tensors)
            return 0;
    for (int i = 0; i < m->n_outputs; i++)
        if (m->outputs[i] < 0 || m->outputs[i] >= m->n_tensors)
            return 0;
    for (int i = 0; i < m->n_operators; i++) {
        const tfl_operator *o = &m->operators[i];
        if (o->n_outputs != 1 || o->outputs[0] < 0 || o->outputs[0] >= m->n_tensors)
            return 0;
        for (int k = 0; k < o->n_inputs; k++)
            if (o->inputs[k] < -1 || o->inputs[k] >= m->n_tensors)
                return 0;
        if (!strcmp(tfl_opcode_name((int)o->opcode), "UNKNOWN"))
            return 0;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tfl_model *m = (tfl_model *)(uintptr_t)1;
    omma_status st = tfl_model_read_memory(data, size, "fuzz.tflite", &m);
    if (st == OMMA_OK) {
        if (!m || !consistent(m, size))
            __builtin_trap();
        tfl_model_free(m);
        return 0;
    }
    if (m != NULL ||
        (st != OMMA_ERR_FORMAT && st != OMMA_ERR_UNSUPPORTED && st != OMMA_ERR_OUT_OF_MEMORY) ||
        strncmp(omma_last_error(), "fuzz.tflite: ", 13) != 0)
        __builtin_trap();
    return 0;
}
