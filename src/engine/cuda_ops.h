/* Private: the CUDA kernels of the engine, one launch per graph node (or
 * per step: a run of nodes one kernel computes, cuda_op_step_end).
 *
 * cuda_op_launch() runs one node of a validated (usually rewritten) graph on
 * a stream: it reads the node's activations from device pointers the caller
 * passes, its constants (filters, bias, PRELU alpha, constant operands) from
 * a cuda_weights upload (cuda_weights.h), and writes the node's output. The
 * executor (the engine's CUDA backend) calls it for every node in order;
 * nothing here allocates, synchronizes or keeps state, so any number of
 * threads may launch on their own streams at once, and every launch can be
 * captured in a CUDA graph.
 *
 * Precisions (cuda_prec): CUDA_PREC_F32, everything float; CUDA_PREC_F16,
 * activations and filters stored as IEEE half, arithmetic and accumulation in
 * float (bias and alpha stay float). Every activation a node reads or writes
 * is in the weights' precision; cuda_convert() moves a buffer between the two
 * (for the float32 graph inputs and outputs of the public API).
 *
 * Layout: NHWC activations, channels innermost, dims[0] of every activation
 * is the batch (1 in the graph, `batch` at run time), items back to back.
 * Rank-2/3 tensors (RESHAPE/CONCAT outputs) are [batch, ...] likewise.
 *
 * Kernels (one file per family, all templated on the element type only):
 *   cuda_ops_conv.cu   pointwise (1x1, stride 1, no padding) convolutions as
 *                      a GEMM: rows = batch*H*W pixels, K = Cin, N = Cout,
 *                      shared-memory tiles; fp16 with K and N even runs on
 *                      the tensor cores (mma.sync m16n8k16, fp32
 *                      accumulators; 16-byte tile loads when K % 8 == 0,
 *                      128x32 tiles when N <= 32), the rest on a 64x64-tile
 *                      FFMA kernel. The stems (square 5x5 or 3x3 window,
 *                      stride 2, 3 input channels, Cout <= 32) go to
 *                      cuda_ops_stem.cu. Other convolutions run direct: one
 *                      thread = one output pixel x 8 output channels, filter
 *                      re-laid out HWIO (Cout padded to 8) and staged in
 *                      shared memory when it fits. gemm_tc16_up adds a
 *                      bilinear upsampling in its epilogue (FPN steps).
 *   cuda_ops_dwpw.cu   GR_DWPW, a BlazeBlock (depthwise, pointwise, residual
 *                      with its max pool and channel padding) in one kernel:
 *                      the depthwise tile stays in shared memory and feeds
 *                      the tensor cores (fp16) or FFMA (fp32).
 *   cuda_ops_dwpw_mma.cu GR_DWPW with few channels in fp16: the depthwise
 *                      convolution on the tensor cores too, its output
 *                      handed to the pointwise mma in registers; and a
 *                      block with the heads that read its output.
 *   cuda_ops_gemm_rows.cu 1x1 convolutions with few channels in fp16
 *                      (FPN levels): warps streaming 16-row tiles through
 *                      a cp.async ring.
 *   cuda_ops_dwpw_chain.cu chains of GR_DWPW nodes on small images in fp16:
 *                      a thread block takes whole images through every
 *                      block, activations kept in shared memory.
 *   cuda_ops_dwpw_pair.cu two GR_DWPW nodes on large images in fp16: a
 *                      thread block takes a tile through both, the first's
 *                      output kept in shared memory with a margin.
 *   cuda_ops_stem.cu   the stems: fp16 implicit GEMM on the tensor cores
 *                      (im2col on the fly from a shared-memory patch),
 *                      register-blocked FFMA for fp32.
 *   cuda_ops_dot.cu    GEMM-form convolutions with 1-4 output channels
 *                      (score heads): a dot product per row.
 *   cuda_ops_dwconv.cu depthwise convolutions: one thread = one output
 *                      pixel x 16 bytes of channels (float4 / 8 halves), or
 *                      8 / 4 bytes when the channel count is even but not a
 *                      multiple of that (28, 36, 42 halves); scalar fallback
 *                      for odd channel counts and depth multipliers.
 *   cuda_ops_dwconv_tile.cu their large 3x3 / 5x5 grids: tiles staged in
 *                      shared memory (cp.async), 4 outputs x 4 channels a
 *                      thread, one kernel per activation.
 *   cuda_ops_pool.cu   max pooling, vectorized the same way.
 *   cuda_ops_eltwise.cu ADD (+activation), RELU, PRELU, PAD, CONCAT,
 *                      precision conversion.
 *   cuda_ops_resize.cu RESIZE_BILINEAR (align_corners / half_pixel_centers,
 *                      TFLite's arithmetic).
 * Every kernel is launched with programmatic dependent launch (the next
 * kernel starts while this one finishes and waits for it before touching
 * activations, cuda_ops_device.h).
 * RESHAPE and DEQUANTIZE are device-to-device copies (none when a RESHAPE's
 * input and output share memory). Every convolution applies its fused
 * epilogue in registers: y = act(conv(x) + bias + residual), act one of
 * none, RELU, RELU6, PRELU (per-channel alpha), as does ADD.
 *
 * Work per image, BlazeFace short range (models/face_detection_short_range
 * .tflite, 128x128x3 in, counted from the model file's 101 operators):
 *   30.76 M multiply-accumulates = 61.5 MFLOP:
 *     5x5 stem conv (3 -> 24, stride 2)   7.37 MMAC  (24%)
 *     1x1 convolutions (19 of them)      19.63 MMAC  (64%)
 *     3x3 depthwise (16 of them)          3.76 MMAC  (12%)
 *   101,390 weights (404 KB fp32, 203 KB fp16; read once per batch, L2).
 *   After the load-time rewrites (bias, RELU and the residual ADD fused into
 *   the convolutions) the graph is 53 launches that read and write 3.42 M
 *   activation values per image: 13.7 MB in fp32, 6.8 MB in fp16.
 *   The floor at batch 128 on the H100 (2.94 TB/s measured device copy,
 *   ~60 TFLOP/s fp32 FFMA): bytes 0.30 ms (fp16) / 0.60 ms (fp32) if every
 *   intermediate went to DRAM (at batch 128 the larger ones, 25 MB in fp16,
 *   partly stay in the 50 MB L2); arithmetic 0.13 ms on the CUDA cores,
 *   negligible on the tensor cores. So layer by layer the model is
 *   memory-bound in fp16; the next gains are fusion (depthwise + 1x1 in one
 *   kernel, so the intermediate stays in shared memory) and fewer launches.
 *   The compulsory traffic alone (input, outputs, weights once) is 0.33 MB.
 *
 * Measured once (H100 SXM, single launches at batch 128, best of 7 x 20,
 * a scratch timing program, not `omma bench`), fp16 / fp32 in us:
 *   stem 5x5/2 3->24 direct      259 / 239  (7-8 TFLOP/s: the bottleneck;
 *                                           next: implicit GEMM on tensor cores)
 *   dw 3x3 64x64x24 (vector)      51 / 70
 *   dw 3x3/2 64x64x28 (fp16 scalar: 28 % 8 != 0) 82 / 36
 *   maxpool 2x2 64x64x28          38 / 30   (fp16 scalar for the same reason)
 *   pad 32x32 28->32              28 / 9
 *   pw 64x64 24->24 +res+relu     59 / 118  (fp16 on tensor cores, ~1.3 TB/s)
 *   add+relu 64x64x24             28 / 53   (~2.8 TB/s)
 * So for fp16: the stem first, then 4-byte (half2) vector paths for channel
 * counts that are even but not multiples of 8 (28, 42 in BlazeFace), then
 * fusing depthwise + pointwise.
 * Done since (docs/PERFORMANCE.md "Kernel update", H200, batch 128, fp16,
 * before -> after in us): stem 257 -> 118, dw 3x3/2 64x64x28 81 -> 28,
 * maxpool 64x64x28 37 -> 14, pad 64x64 24->28 95 -> 24, pw 24->24+res+relu
 * 58 -> 47; the whole short-range model 1.307 -> 0.820 ms.
 * Then (H100, docs/PERFORMANCE.md "Fused blocks"): every depthwise +
 * pointwise pair with its residual branch became one GR_DWPW node and one
 * kernel (short range 56 -> 26 launches) and the stems moved to the tensor
 * cores. What limits now (ncu): the DWPW kernels of the large, few-channel
 * layers (96x96x16, 64x64x24, 96x96x32 -> 8) run at 3-5x their DRAM floor,
 * bound by instruction issue and latency (32 warps per SM, short phases
 * between barriers); the fp32 <-> fp16 conversions of the API's I/O are ~5%
 * of a run at batch 128.
 */
#ifndef OMMA_ENGINE_CUDA_OPS_H
#define OMMA_ENGINE_CUDA_OPS_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

#include "model/graph.h"
#include "omma/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cuda_prec {
    CUDA_PREC_F32 = 0, /* float storage and arithmetic */
    CUDA_PREC_F16,     /* half storage, float arithmetic and accumulation */
} cuda_prec;

/* Bytes of one activation element in precision p (4 or 2). */
size_t cuda_prec_size(cuda_prec p);

/* "fp32" / "fp16". */
const char *cuda_prec_name(cuda_prec p);

struct cuda_weights;

/* Runs node n (an element of g->nodes) for `batch` items on stream.
 * inputs[k]: device pointer of the node's input k (n->in[k]) when that is an
 *   activation; ignored (may be NULL) for constants and for absent optional
 *   inputs, which come from w. residual: the device pointer of
 *   n->p.conv.residual when the node has one, else ignored. out: the node's
 *   output. Activations hold `batch` items in w's precision.
 * batch: 1.. for batched tensors; the executor passes 1 for nodes computed
 *   from constants only (a DEQUANTIZE left in an unrewritten graph).
 * choice_batch: the batch every kernel choice is made at, whatever `batch`
 *   (see "Batch invariance" below): the executor passes its max_batch, so
 *   that an item's results never depend on the batch it runs in. At least
 *   `batch`.
 * w: the constants of this same graph (cuda_weights_upload(g, ...)).
 * RESHAPE with out == inputs[0] does nothing. Outputs must not overlap the
 * inputs otherwise.
 * The launch is asynchronous; errors of the launch itself are reported
 * (OMMA_ERR_CUDA, naming the kernel's launcher and the CUDA error), faults
 * during execution surface at the caller's next synchronization.
 * Errors: OMMA_ERR_INVALID_ARG (NULL, n not in g, batch < 1, choice_batch
 * < batch, w of another graph), OMMA_ERR_UNSUPPORTED (a shape the kernels
 * cannot index, e.g. one item of 2^28 elements or more), OMMA_ERR_CUDA.
 * Thread safety: any thread, the graph and weights are only read. */
omma_status cuda_op_launch(const gr_graph *g, const gr_node *n, const struct cuda_weights *w,
                           int batch, int choice_batch, const void *const *inputs,
                           const void *residual, void *out, cudaStream_t stream);

/* True when node n of an fp16 graph can read its input 0 as float32
 * directly (an fp16 stem convolution, cuda_ops_stem.cu): the executor then
 * passes the API's float input to it through cuda_op_launch_f32_input()
 * instead of converting that input to fp16 first. */
bool cuda_op_reads_f32(const gr_graph *g, const gr_node *n, cuda_prec p);

/* True when node n of an fp16 graph can write its output as float32
 * directly (a CONCAT): the executor then has it write the API's float
 * output buffer through cuda_op_launch_f32_output() instead of converting
 * that output afterwards. */
bool cuda_op_writes_f32(const gr_graph *g, const gr_node *n, cuda_prec p);

/* cuda_op_launch() with `out` float32 (n such that cuda_op_writes_f32(g,
 * n, w's precision)); OMMA_ERR_UNSUPPORTED otherwise. */
omma_status cuda_op_launch_f32_output(const gr_graph *g, const gr_node *n,
                                      const struct cuda_weights *w, int batch, int choice_batch,
                                      const void *const *inputs, const void *residual, void *out,
                                      cudaStream_t stream);

/* cuda_op_launch() with inputs[0] holding float32 (n such that
 * cuda_op_reads_f32(g, n, w's precision)); OMMA_ERR_UNSUPPORTED otherwise. */
omma_status cuda_op_launch_f32_input(const gr_graph *g, const gr_node *n,
                                     const struct cuda_weights *w, int batch, int choice_batch,
                                     const void *const *inputs, const void *residual, void *out,
                                     cudaStream_t stream);

/* Steps: runs of nodes one kernel computes at once, in fp16.
 * - Chains of GR_DWPW nodes on small images (cuda_ops_dwpw_chain.cu): each
 *   node after the first reads an earlier one's output; a thread block
 *   takes whole images through all of them.
 * - A GEMM-form convolution, a RESIZE_BILINEAR and the ADD of their two
 *   outputs, which nothing else reads (an FPN level): one GEMM adds the
 *   upsampled tensor in its epilogue.
 * - Pairs of GR_DWPW nodes on larger images (cuda_ops_dwpw_pair.cu): the
 *   second reads the first's output, which nothing else reads; a thread
 *   block takes a tile through both.
 * - A GR_DWPW node and the 1x1 convolutions (heads) right after it that
 *   read its output, which nothing else reads (cuda_dwpw_heads_fits): its
 *   epilogue computes the heads, so the block's output is never written.
 * - A DEPTHWISE_CONV_2D and a 1x1 CONV_2D of its output, which nothing
 *   else reads, on images of few channels (cuda_dwproj_fits): one kernel,
 *   bitwise the two nodes' results, so it always pays.
 * - A RESIZE_BILINEAR and the ADD of its output and another tensor, the
 *   resized tensor read by nothing else (an FPN merge whose lateral
 *   convolution runs elsewhere): one kernel, bitwise the two nodes.
 * cuda_op_step_end: the last node of the step starting at node `first` in
 * precision p, or `first` when none starts there. Memory must be planned
 * with the step as one (plan_build's step_end): its nodes run at once, so
 * every tensor they read stays alive until its last node.
 * cuda_op_step_pays: whether the step is faster than its nodes one by one
 * on the current device at choice_batch items (the exec's max_batch),
 * whatever the batch: a step's sums are not its nodes' (the chain's
 * depthwise convolution on the tensor cores, for one), so running it at
 * some batch sizes and not at others would make an item's results depend
 * on its batch. A chain's thread block takes whole images (H100: a chain
 * at batch 1 is 30-50% slower than its nodes, at batch 128 5-15% faster:
 * an exec for a few cameras runs the nodes); a pair pays where
 * cuda_dwpw_pair_pays says; the convolution + upsample + add and a block
 * with heads always pay. The plan (cuda_op_step_end) is the engine's, made
 * at load; this choice is the exec's.
 * cuda_op_launch_step: runs nodes first..last (a step from
 * cuda_op_step_end) as one launch; acts[t] is the device pointer of
 * activation tensor t (batch items in w's precision); choice_batch as in
 * cuda_op_launch (the one the caller gave cuda_op_step_pays). It writes
 * the last node's output, and of a chain the other nodes' outputs that a
 * later node reads or the graph outputs; not the rest. f32 (or NULL): per tensor, a
 * float32 buffer to write it to instead of acts[t], for tensors where
 * cuda_op_step_writes_f32 holds (else NULL). Errors as cuda_op_launch.
 * cuda_op_step_writes_f32: whether the step at first (found in fp16)
 * writes tensor t and can write it as float32: a head's output. */
int cuda_op_step_end(const gr_graph *g, int first, cuda_prec p);
bool cuda_op_step_pays(const gr_graph *g, int first, int choice_batch);
omma_status cuda_op_launch_step(const gr_graph *g, int first, int last,
                                const struct cuda_weights *w, int batch, int choice_batch,
                                void *const *acts, void *const *f32, cudaStream_t stream);
bool cuda_op_step_writes_f32(const gr_graph *g, int first, int t);

/* Converts n elements between precisions (dst and src may not overlap unless
 * the precisions are equal and dst == src, which does nothing). For the
 * float32 inputs and outputs of the public API around an fp16 graph. */
omma_status cuda_convert(void *dst, cuda_prec dst_prec, const void *src, cuda_prec src_prec,
                         size_t n, cudaStream_t stream);

/* True for a CONV_2D that runs as a GEMM: no padding and either a 1x1
 * window at stride 1 (rows = pixels, K = Cin) or a window covering the whole
 * input (one output pixel, rows = items, K = kh*kw*Cin: FaceMesh's heads).
 * cuda_weights keeps such a filter OHWI ([Cout][K]), other convolutions'
 * as [kh][kw][Cin][round_up(Cout, 8)]. */
bool cuda_conv_is_pointwise(const gr_graph *g, const gr_node *n);

/* Cout rounded up to the direct convolution's output-channel group. */
#define CUDA_CONV_COUT_GROUP 8

/* ---- kernel launchers (the .cu files; cuda_op_launch fills the args) ----
 * Each launcher enqueues its kernel(s) and returns cudaGetLastError() (or the
 * first failing runtime call), so the caller checks it with OMMA_CK in one
 * line that names the launcher. Pointers are device pointers; element
 * pointers are in `prec`, bias and alpha are float. Kernels index with int:
 * every launch covers fewer than 2^31 elements per tensor (cuda_op_launch
 * splits large batches).
 *
 * Batch invariance: within one exec, an item's outputs are bitwise the
 * same whatever the batch it runs in and its row there (the runtime's
 * batches depend on timing). So which kernel, and which arithmetic,
 * computes an output depends on the item's shapes, the pointers' alignment,
 * the device and the choice batch only, never on the batch: where a
 * kernel's choice weighs the work against the GPU, it is made as at
 * choice_batch items (the args' field, at least batch: the exec's
 * max_batch, which cuda_op_launch passes on). An exec for a few cameras
 * thus runs the kernels fast at a few items, one for 128 those fast at
 * 128, at every batch; two execs with different max_batch may differ in
 * the last bits at fp16. What may follow the batch (grids, tiles, images
 * per thread block, channels split over blocks) never changes the
 * sequence of fp32 operations of one output. The launchers that choose
 * (cuda_launch_conv_pointwise, cuda_launch_conv_dot, cuda_launch_dwpw)
 * return cudaErrorInvalidValue where choice_batch < batch. */

typedef struct cuda_conv_args {
    cuda_prec prec;
    const void *x;        /* [batch, ih, iw, cin] */
    const void *w;        /* layout per kind, see cuda_conv_is_pointwise */
    const float *bias;    /* [cout] or NULL */
    const void *residual; /* like y, or NULL */
    const float *alpha;   /* [cout] when act is PRELU */
    void *y;              /* [batch, oh, ow, cout] */
    int batch, ih, iw, cin, oh, ow, cout;
    int choice_batch; /* kernel choices as at this many items ("Batch invariance") */
    int kh, kw, sh, sw, dh, dw, pt, pl; /* window; depthwise/pool use it too */
    int mult;             /* depthwise multiplier (cout = cin * mult) */
    int act;              /* gr_act */
    int x_f32;            /* x is float32 though prec is fp16 (stems only) */
    /* GEMM form, fp16: y += the bilinear resize of up ([batch, uh, uw,
     * cout]) to [oh, ow] after the activation (RESIZE_BILINEAR + ADD
     * fused, cuda_conv_up_ok), or NULL. */
    const void *up;
    int uh, uw;
    bool up_align_corners, up_half_pixel;
} cuda_conv_args;

cudaError_t cuda_launch_conv_pointwise(const cuda_conv_args *a, cudaStream_t s);
/* True when cuda_launch_conv_pointwise can add the upsampled `up` (set in
 * a) in its epilogue: fp16, the tensor-core kernel with 16-byte tiles. */
bool cuda_conv_up_ok(const cuda_conv_args *a);
/* 1x1 convolutions with few channels (cuda_ops_gemm_rows.cu), which
 * cuda_launch_conv_pointwise hands on where cuda_conv_rows_ok holds: fp16,
 * K % 16 == 0 up to 256, N % 8 == 0 up to 96 (K / 2 - 8 with K over
 * 128), no residual, 16-byte
 * aligned buffers; with or without the upsampled addend. */
bool cuda_conv_rows_ok(const cuda_conv_args *a);
cudaError_t cuda_launch_conv_rows(const cuda_conv_args *a, cudaStream_t s);
cudaError_t cuda_launch_conv_direct(const cuda_conv_args *a, cudaStream_t s);
/* The stems (cuda_ops_stem.cu): cuda_launch_conv_direct hands a convolution
 * for which cuda_conv_is_stem() holds to cuda_launch_conv_stem(). */
bool cuda_conv_is_stem(const cuda_conv_args *a);
/* True for a stem that runs on the tensor cores and so can take x_f32. */
bool cuda_conv_stem_reads_f32(const cuda_conv_args *a);
cudaError_t cuda_launch_conv_stem(const cuda_conv_args *a, cudaStream_t s);
/* GEMM-form convolutions with at most CUDA_DOT_MAX_N output channels and
 * an N x K filter of at most 48 KB as float (cuda_ops_dot.cu): dot
 * products, one thread per output row. */
#define CUDA_DOT_MAX_N 4
bool cuda_conv_dot_fits(int n, int k);
cudaError_t cuda_launch_conv_dot(const cuda_conv_args *a, cudaStream_t s);
/* GEMM-form convolutions that cuda_launch_conv_pointwise would give
 * gemm_simt's 64x64 tiles in fewer blocks than a GPU has SMs at
 * choice_batch items of `item_rows` rows each (BlazePose's dense heads: a
 * row per item, K = 1152, N = 195): warps' dot products over K
 * (cuda_ops_dot.cu), where the X rows of a block fit in shared memory. By
 * the item's shape and the choice batch only: its sums are ordered
 * differently from gemm_simt's and conv_dot's. */
bool cuda_gemm_wdot_pays(int item_rows, int choice_batch, int K, int N);
cudaError_t cuda_launch_gemm_wdot(const cuda_conv_args *a, cudaStream_t s);
/* Thin 1x1 convolutions that cuda_launch_conv_pointwise hands on where
 * cuda_conv_thin_ok holds (and cuda_conv_rows_ok does not): fp16, K a multiple of
 * 8 up to 128 (up to 192 with even N up to 32), N from 8 to 1024 (odd too),
 * 4096 16-row tiles x 128-column blocks or more at choice_batch items
 * (whatever the batch: with odd N the alternative is gemm_simt's FFMAs),
 * with or without a residual, x and w 16-byte aligned
 * (cuda_ops_gemm_thin.cu). */
bool cuda_conv_thin_ok(const cuda_conv_args *a);
cudaError_t cuda_launch_conv_thin(const cuda_conv_args *a, cudaStream_t s);
/* 1x1 convolutions with a long K that cuda_launch_conv_pointwise hands on
 * where cuda_conv_deep_ok holds (and none of the above): fp16, K a multiple
 * of 8 from 128, even N over 32, x and w 16-byte aligned, y and the
 * residual 4-byte (cuda_ops_gemm_deep.cu: gemm_tc16's sums through a ring
 * of cp.async stages, in 64x64 tiles, or 32x32 ones where a grid of 64x64
 * tiles at choice_batch is small). */
bool cuda_conv_deep_ok(const cuda_conv_args *a);
cudaError_t cuda_launch_conv_deep(const cuda_conv_args *a, cudaStream_t s);
cudaError_t cuda_launch_dwconv(const cuda_conv_args *a, cudaStream_t s);
/* The depthwise kernels, for tests that compare them bitwise (same sums in
 * the same order): the launcher's choice, or one of them, which gives
 * cudaErrorNotSupported where it does not take the convolution (scalar:
 * any; vec: whole 4-16 byte vectors of channels, multiplier 1; rows and
 * tile: 16-byte vectors, 3x3 or 5x5, stride 1 or 2, at least 4 output
 * columns; tile also a tile that fits its shared memory). */
typedef enum cuda_dw_kernel {
    CUDA_DW_AUTO,
    CUDA_DW_SCALAR,
    CUDA_DW_VEC,
    CUDA_DW_ROWS,
    CUDA_DW_TILE
} cuda_dw_kernel;
cudaError_t cuda_launch_dwconv_as(const cuda_conv_args *a, cuda_dw_kernel k, cudaStream_t s);
/* dwconv_tile (cuda_ops_dwconv_tile.cu), what cuda_launch_dwconv_as
 * launches for CUDA_DW_TILE: cudaErrorNotSupported where it does not take
 * the convolution. */
cudaError_t cuda_launch_dwconv_tile(const cuda_conv_args *a, cudaStream_t s);
cudaError_t cuda_launch_maxpool(const cuda_conv_args *a, cudaStream_t s); /* w, bias unused */

/* GR_DWPW (cuda_ops_dwpw.cu): y = act(pw(dw(x) + dw_bias) + bias + r), r
 * the residual's channels [0, rc) at the output pixel, or (pool_residual)
 * the max of its 2x2 block in a [batch, 2*oh, 2*ow, rc] tensor; 0 for
 * channels rc .. cout-1 and when residual is NULL. */
typedef struct cuda_dwpw_args {
    cuda_prec prec;
    const void *x;         /* [batch, ih, iw, c] */
    const void *dw_w;      /* [kh][kw][c] */
    const float *dw_bias;  /* [c] or NULL */
    const void *pw_w;      /* [cout][c] */
    const float *bias;     /* [cout] or NULL */
    const void *residual;  /* or NULL */
    const float *alpha;    /* [cout] when act is PRELU */
    void *y;               /* [batch, oh, ow, cout] */
    int batch, ih, iw, c, oh, ow, cout;
    int choice_batch; /* kernel choices as at this many items ("Batch invariance") */
    int kh, kw, sh, sw, dh, dw, pt, pl; /* the depthwise window */
    int rc, pool_residual;
    int act;
} cuda_dwpw_args;

/* Shared memory a DWPW block may use (H100: 227 KB per block). */
#define CUDA_DWPW_SMEM_MAX (200 * 1024)

/* True when the block's filters and tiles fit in CUDA_DWPW_SMEM_MAX (every
 * block rw_fuse_block makes does, see GR_DWPW_MAX_* in graph.h). */
bool cuda_dwpw_fits(const cuda_dwpw_args *a);

cudaError_t cuda_launch_dwpw(const cuda_dwpw_args *a, cudaStream_t s);
/* The form with both convolutions on the tensor cores (cuda_ops_dwpw_mma
 * .cu), which cuda_launch_dwpw takes where cuda_dwpw_mma_ok holds: fp16,
 * stride 1, few channels or narrowing blocks on large images, even channel
 * counts, windows up to 3x3. */
bool cuda_dwpw_mma_ok(const cuda_dwpw_args *a);
cudaError_t cuda_launch_dwpw_mma(const cuda_dwpw_args *a, cudaStream_t s);

/* A GR_DWPW block and the heads that read its output (cuda_ops_dwpw_mma
 * .cu): GEMM-form 1x1 convolutions without residual or activation, which
 * its epilogue computes from the block's output held in registers (rounded
 * to half, as the output would be stored), so that output is never
 * written. fp16; the block as cuda_dwpw_mma_ok takes it but at any width
 * up to 64 channels and without the pooled residual, 3x3 at stride 1; at
 * most CUDA_HEADS_MAX heads of at most 32 channels together, counted in
 * 8s per head. A head's output is half, or float32 where y_f32 (a graph
 * output written straight into the API's buffer). */
#define CUDA_HEADS_MAX 4

typedef struct cuda_head {
    const void *w;      /* [n][block.cout] half */
    const float *bias;  /* [n] or NULL */
    void *y;            /* [batch, oh, ow, n] */
    int n;
    bool y_f32;
} cuda_head;

typedef struct cuda_heads_args {
    cuda_dwpw_args block; /* block.y is not written */
    int n_heads;
    cuda_head head[CUDA_HEADS_MAX];
} cuda_heads_args;

/* True when the shapes fit the kernel (pointers are not looked at). */
bool cuda_dwpw_heads_fits(const cuda_heads_args *h);
cudaError_t cuda_launch_dwpw_heads(const cuda_heads_args *h, cudaStream_t s);

/* A chain of GR_DWPW blocks on small images in one kernel
 * (cuda_ops_dwpw_chain.cu): a thread block takes whole images through every
 * block, their activations kept in shared memory. fp16 only; every block
 * 3x3 at stride 1 or 2, channel counts multiples of 8, at most
 * CUDA_CHAIN_MAX_PIXELS output pixels per image. Block k reads x and its
 * residual from global memory (block.x, block.residual) or from the output
 * of block j - 1 earlier in the chain (x_from / res_from = j >= 1); its
 * output goes to block.y when that is not NULL (the last block's must not
 * be). */
#define CUDA_CHAIN_MAX 16
#define CUDA_CHAIN_MAX_PIXELS 256
#define CUDA_CHAIN_SMEM_MAX (227 * 1024) /* H100: the most a block may use */

typedef struct cuda_chain_args {
    int n;
    cuda_dwpw_args block[CUDA_CHAIN_MAX];
    int x_from[CUDA_CHAIN_MAX];
    int res_from[CUDA_CHAIN_MAX];
} cuda_chain_args;

/* True when the blocks' shapes fit the kernel (pointers are not looked at). */
bool cuda_dwpw_chain_fits(const cuda_chain_args *a);
cudaError_t cuda_launch_dwpw_chain(const cuda_chain_args *a, cudaStream_t s);
/* True when choice_batch images give at least half the SMs a thread block
 * (the chain's arithmetic is not its blocks' one by one, so whether it runs
 * may not follow the batch). */
bool cuda_dwpw_chain_pays(int choice_batch);

/* Two GR_DWPW blocks on large images in one kernel (cuda_ops_dwpw_pair.cu):
 * z = B(A(x)), A's output never written to memory (b.x is not read).
 * fp16; both blocks 3x3 at stride 1 with SAME padding, even channel
 * counts up to 128, b.c == a.cout. Residual forms: CUDA_PAIR_OWN, each
 * block adds its own input (a.rc <= a.c, b.rc <= b.c); CUDA_PAIR_SPAN, A
 * adds none and B adds x (b.rc <= a.c); residual pointers are not read
 * (x is the kernel's own copy). */
enum { CUDA_PAIR_OWN = 1, CUDA_PAIR_SPAN = 2 };

typedef struct cuda_pair_args {
    cuda_dwpw_args a, b;
    int form;
} cuda_pair_args;

/* True when the shapes fit the kernel (pointers are not looked at). */
bool cuda_dwpw_pair_fits(const cuda_pair_args *p);
/* True where the pair measured faster than its blocks one by one: on
 * images of at least 32x32, where a block would not run on the tensor
 * cores throughout, narrow-then-wide pairs with at most 16 channels
 * between the blocks, and a.choice_batch items giving the current
 * device's SMs two tiles each (not a.batch: the pair's sums are not its
 * blocks'). */
bool cuda_dwpw_pair_pays(const cuda_pair_args *p);
cudaError_t cuda_launch_dwpw_pair(const cuda_pair_args *p, cudaStream_t s);

/* A depthwise convolution and the 1x1 convolution of its output, which
 * nothing else reads, in one kernel on images of few channels
 * (cuda_ops_dwproj.cu): y = act(pw(actd(dw(x) + bd)) + bias + residual),
 * the depthwise output never written to memory, the results bitwise those
 * of the two nodes one by one. fp16; 8 channels in and out; a k x k
 * window (3 or 5) at stride 1 without dilation, padding pt / pl before
 * (any after); outputs at least 16 pixels wide; acts NONE, RELU or RELU6;
 * 16-byte aligned buffers. */
typedef struct cuda_dwproj_args {
    cuda_prec prec;
    const void *x;        /* [batch, ih, iw, c] */
    const void *wd;       /* [kh][kw][c] */
    const float *bd;      /* [c] or NULL */
    const void *w;        /* [cout][c] */
    const float *bias;    /* [cout] or NULL */
    const void *residual; /* [batch, oh, ow, cout] or NULL */
    void *y;              /* [batch, oh, ow, cout] */
    int batch, ih, iw, c, oh, ow, cout;
    int kh, kw, sh, sw, dh, dw, pt, pl;
    int actd, act; /* gr_act */
} cuda_dwproj_args;

/* True when the shapes fit the kernel (pointers are not looked at). */
bool cuda_dwproj_fits(const cuda_dwproj_args *a);
cudaError_t cuda_launch_dwproj(const cuda_dwproj_args *a, cudaStream_t s);

/* y = act(a + b) (b may be NULL: y = act(a)), n elements, c channels (the
 * innermost dimension, for alpha). b_period: b repeats every b_period
 * elements (a constant operand broadcast over the batch), 0 = not at all. */
typedef struct cuda_eltwise_args {
    cuda_prec prec;
    const void *a, *b;
    const float *alpha;
    void *y;
    int n, b_period;
    int c, act;
} cuda_eltwise_args;

cudaError_t cuda_launch_eltwise(const cuda_eltwise_args *a, cudaStream_t s);

/* Zero padding of a [batch, d1, d2, d3] tensor (lower ranks padded with 1s
 * after the batch dimension). */
typedef struct cuda_pad_args {
    cuda_prec prec;
    const void *x;
    void *y;
    int batch;
    int in[3], before[3], out[3];
} cuda_pad_args;

cudaError_t cuda_launch_pad(const cuda_pad_args *a, cudaStream_t s);

/* Concatenation: output rows of `outer` rows (batch times the dims before
 * the axis), input k contributing width[k] elements per row (its dims from
 * the axis on). */
typedef struct cuda_concat_args {
    cuda_prec prec;
    int n_in;
    const void *x[GR_MAX_INPUTS];
    int width[GR_MAX_INPUTS];
    int outer, out_width;
    void *y;
    bool y_f32; /* y is float32 (an fp16 graph's output, written in place) */
} cuda_concat_args;

cudaError_t cuda_launch_concat(const cuda_concat_args *a, cudaStream_t s);

typedef struct cuda_resize_args {
    cuda_prec prec;
    const void *x;
    void *y;
    int batch, ih, iw, c, oh, ow;
    bool align_corners, half_pixel_centers;
    /* An ADD of the resized tensor and another one fused (a step, fp16):
     * addend like y, added to each resized value after its rounding to the
     * storage precision, then act (gr_act, not PRELU); or NULL. */
    const void *addend;
    int act;
} cuda_resize_args;

cudaError_t cuda_launch_resize_bilinear(const cuda_resize_args *a, cudaStream_t s);

cudaError_t cuda_launch_convert(void *dst, cuda_prec dst_prec, const void *src, cuda_prec src_prec,
                                int n, cudaStream_t s);

/* LOGISTIC of n elements (cuda_ops_pose.cu). */
typedef struct cuda_unary_args {
    cuda_prec prec;
    const void *x;
    void *y;
    int n;
} cuda_unary_args;

cudaError_t cuda_launch_logistic(const cuda_unary_args *a, cudaStream_t s);

/* DEPTH_TO_SPACE of [batch, h, w, block * block * c] into
 * [batch, h * block, w * block, c] (cuda_ops_pose.cu). */
typedef struct cuda_d2s_args {
    cuda_prec prec;
    const void *x;
    void *y;
    int batch, h, w, c, block;
} cuda_d2s_args;

cudaError_t cuda_launch_depth_to_space(const cuda_d2s_args *a, cudaStream_t s);

/* The attention mesh's ops (cuda_ops_mesh.cu). MUL: y = act(a[i % a_period]
 * * b[i % b_period]) for n elements (a period of n: not repeated; 1: one
 * value), act NONE, RELU or RELU6. */
typedef struct cuda_mul_args {
    cuda_prec prec;
    const void *a, *b;
    void *y;
    int n, a_period, b_period, act;
} cuda_mul_args;

cudaError_t cuda_launch_mul(const cuda_mul_args *a, cudaStream_t s);

/* STRIDED_SLICE of [batch, in[0..2]] into [batch, out[0..2]]: y[b, i, j, k]
 * = x[b, begin[0] + i stride[0], ...] (lower ranks padded with 1s). */
typedef struct cuda_slice_args {
    cuda_prec prec;
    const void *x;
    void *y;
    int batch;
    int in[3], out[3], begin[3], stride[3];
} cuda_slice_args;

cudaError_t cuda_launch_strided_slice(const cuda_slice_args *a, cudaStream_t s);

/* Landmarks2TransformMatrix v2 (graph.h's GR_LANDMARKS_TO_MATRIX) of
 * [batch, landmarks, 3] into [batch, 4, 4]; one thread per item. */
typedef struct cuda_l2m_args {
    cuda_prec prec;
    const void *x;
    void *y;
    int batch, landmarks;
    int left, right, out_h, out_w;
    float scale_x, scale_y, target_rotation;
    int n_subset;
    short subset[GR_L2M_MAX_SUBSET][2];
} cuda_l2m_args;

cudaError_t cuda_launch_landmarks_to_matrix(const cuda_l2m_args *a, cudaStream_t s);

/* TransformTensorBilinear v2 of x [batch, h, w, c] by m [batch, 4, 4] into
 * y [batch, oh, ow, c]. */
typedef struct cuda_tbil_args {
    cuda_prec prec;
    const void *x, *m;
    void *y;
    int batch, h, w, c, oh, ow;
} cuda_tbil_args;

cudaError_t cuda_launch_transform_bilinear(const cuda_tbil_args *a, cudaStream_t s);

/* TransformLandmarks v2 of x [batch, landmarks, dims] (dims 2 or 3) by m
 * [batch, 4, 4]. */
typedef struct cuda_tlm_args {
    cuda_prec prec;
    const void *x, *m;
    void *y;
    int batch, landmarks, dims;
} cuda_tlm_args;

cudaError_t cuda_launch_transform_landmarks(const cuda_tlm_args *a, cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
