#!/usr/bin/env python3
"""Per-kernel times of the PyTorch peer (scripts/peer_models.py's module) on
the GPU machine: the model in fp16, channels_last, compiled by inductor
without CUDA graphs (so that torch.profiler sees each kernel; the kernels
are those of --part compile's reduce-overhead mode), three runs profiled
after five warm-up runs, the middle run printed kernel by kernel in launch
order with its duration in microseconds (boost clocks), then the sums by
family (cuDNN depthwise, other convolutions and GEMMs, Triton passes).
Set against `ncu` of `omma bench engine --graphs off` to see, layer by
layer, where omma or the peer is faster (docs/PERFORMANCE.md).

usage: peer_profile.py --peers DIR --assets DIR [--models a,b] [--batch 128]
The peers folder holds tflite_torch.py; the assets folder the .tflite files.
"""
import argparse
import collections
import os
import sys


def family(name):
    if 'depthwise' in name:
        return 'cuDNN depthwise'
    if name.startswith('triton'):
        return 'Triton (bias, activation, pad, resize)'
    if any(k in name for k in ('nvjet', 'gemm', 'conv2d', 'cutlass', 'fprop')):
        return 'convolutions and GEMMs'
    return 'other'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--peers', required=True, help='the folder with tflite_torch.py')
    ap.add_argument('--assets', required=True, help='the folder with the .tflite files')
    ap.add_argument('--models', default='pose_detection,pose_landmark_full,pose_landmark_heavy')
    ap.add_argument('--batch', type=int, default=128)
    a = ap.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.abspath(a.peers))
    import peer_models as pm
    import tflite_torch
    import torch
    from torch.profiler import ProfilerActivity, profile
    pm.tt = tflite_torch
    torch.backends.cudnn.benchmark = True
    module_class = pm.torch_module_class()
    for name in a.models.split(','):
        if name not in pm.MODELS:
            ap.error('--models: %s is not one of %s' % (name, ', '.join(pm.MODELS)))
        file, size, _ = pm.MODELS[name]
        g = pm.parse_model(os.path.join(a.assets, file))
        with torch.inference_mode():
            m = module_class(g, channels_last=True).eval().to(device='cuda', dtype=torch.float16)
            m = m.to(memory_format=torch.channels_last)
            x = torch.randn(a.batch, size, size, 3, device='cuda', dtype=torch.float16)
            cm = torch.compile(m, dynamic=False)
            for _ in range(5):
                cm(x)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(3):
                    cm(x)
                torch.cuda.synchronize()
        evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        evs.sort(key=lambda e: e.time_range.start)
        n = len(evs) // 3
        run = evs[n:2 * n]
        sums = collections.Counter()
        print('==== %s b%d: %d kernels a run, %.1f us' %
              (name, a.batch, n, sum(e.time_range.elapsed_us() for e in run)))
        for e in run:
            us = e.time_range.elapsed_us()
            sums[family(e.name)] += us
            print('%8.1f  %s' % (us, e.name[:150]))
        for k, v in sums.most_common():
            print('sum %-40s %8.1f us' % (k, v))
        sys.stdout.flush()
    return 0


if __name__ == '__main__':
    sys.exit(main())
