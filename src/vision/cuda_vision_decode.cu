/* The detector's decoding on the GPU, one block per detector image:
 * threads score every anchor and keep those above the threshold, rank them
 * (best score first, ties by anchor: the CPU's order) and decode each into
 * its place; one thread then runs the weighted NMS (vis_weighted_nms, the
 * CPU reference's own code) over the few candidates left. */
#include "vision/cuda_vision.h"

#include "vision/letterbox.h"

#define THREADS 256

__global__ void decode_kernel(const vis_gpu_step *__restrict__ s, const vis_decode_options opt,
                              const vis_anchor *anchors, int n, const float *boxes,
                              const float *scores, float *key_score, int *key_anchor,
                              vis_candidate *cand, omma_detection *dets, int *det_counts)
{
    __shared__ int kept;
    const vis_gpu_step_frame *f = &s->f[blockIdx.x];
    int d = f->detect;
    if (d < 0)
        return;
    if (threadIdx.x == 0)
        kept = 0;
    __syncthreads();
    const float *sc = scores + (size_t)d * (size_t)n;
    const float *bx = boxes + (size_t)d * (size_t)n * 16;
    float *ks = key_score + (size_t)d * (size_t)n;
    int *ka = key_anchor + (size_t)d * (size_t)n;
    for (int a = threadIdx.x; a < n; a += blockDim.x) {
        float score = vis_detection_score(sc[a], opt.score_clip);
        if (score >= opt.min_score) {
            int k = atomicAdd(&kept, 1);
            ks[k] = score;
            ka[k] = a;
        }
    }
    __syncthreads();
    int m = kept;
    vis_candidate *c = cand + (size_t)d * (size_t)n;
    for (int k = threadIdx.x; k < m; k += blockDim.x) {
        float sk = ks[k];
        int ak = ka[k], rank = 0;
        for (int j = 0; j < m; j++)
            rank += ks[j] > sk || (ks[j] == sk && ka[j] < ak);
        vis_decode_anchor(&opt, &anchors[ak], ak, sk, bx + (size_t)16 * (size_t)ak, &c[rank]);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        vis_letterbox lb = vis_letterbox_make(f->frame.width, f->frame.height, (int)opt.input_size);
        det_counts[d] = vis_weighted_nms(&opt, &lb, c, m, dets + (size_t)d * opt.max_faces);
    }
}

extern "C" cudaError_t vis_cuda_decode(const vis_gpu_step *s, vis_gpu_shape shape,
                                       const vis_decode_options *opt, const vis_anchor *anchors,
                                       int n, const float *boxes, const float *scores,
                                       float *key_score, int *key_anchor, vis_candidate *cand,
                                       omma_detection *dets, int *det_counts, cudaStream_t stream)
{
    decode_kernel<<<(unsigned)shape.n, THREADS, 0, stream>>>(
        s, *opt, anchors, n, boxes, scores, key_score, key_anchor, cand, dets, det_counts);
    return cudaGetLastError();
}
