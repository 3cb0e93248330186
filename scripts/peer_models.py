#!/usr/bin/env python3
"""The PyTorch peer for the models beyond the face three (issue 24): BlazePose's
detector and landmark models (lite, full, heavy) and the attention FaceMesh.

The peers folder's tflite_torch (given with --peers, imported, not copied) reads
and runs the face models; these models need more, added here on top of it:

- reading: DEPTH_TO_SPACE, LOGISTIC, MUL, STRIDED_SLICE, sparse constants with
  DENSIFY (folded like DEQUANTIZE), MediaPipe's custom ops with their
  flexbuffer options (Landmarks2TransformMatrix, TransformTensorBilinear,
  TransformLandmarks, all v2);
- the numpy reference (run_numpy): those ops, the others delegated op by op
  to tflite_torch.run_numpy;
- the PyTorch module (PeerModule, a tflite_torch.TFLiteModule): steps for
  those ops spliced between the ones TFLiteModule builds, one forward over
  all. The custom ops work in fp32 (their coordinates do not fit fp16) and
  give the activations' dtype back.

Parts:
  --part check    numpy only (no PyTorch): each model on a real input
                  (astronaut.png's face crop, messi5.jpg letterboxed), the
                  headline numbers; --dump DIR writes inputs and outputs (.npy)
  --part compile  the GPU machine: PyTorch CPU fp32 vs the numpy reference on
                  the real input, then torch.compile (reduce-overhead, fp16,
                  channels_last, CUDA events: bench_peers.py --part compile's
                  method and timer) per batch; one JSON line per model like
                  `omma bench engine --json` on stdout, the log on stderr
  --part table    the ratio table of scripts/gpu-bench.sh's OUT (--out), omma
                  against torch.compile at batch 1 and 128

usage: peer_models.py --peers DIR --assets DIR [--part check|compile]
                      [--models a,b] [--batches 1,128,512] [--dump DIR]
       peer_models.py --part table --out DIR [--models a,b]
The assets folder holds the .tflite files, astronaut.png and messi5.jpg.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np

# name: (file, input size, input range)
MODELS = {
    'pose_detection': ('pose_detection.tflite', 224, 'pm1'),
    'pose_landmark_lite': ('pose_landmark_lite.tflite', 256, '01'),
    'pose_landmark_full': ('pose_landmark_full.tflite', 256, '01'),
    'pose_landmark_heavy': ('pose_landmark_heavy.tflite', 256, '01'),
    'face_landmark_with_attention': ('face_landmark_with_attention.tflite', 192, 'pm1'),
}
NEW_BUILTIN = {5: 'DEPTH_TO_SPACE', 14: 'LOGISTIC', 18: 'MUL', 45: 'STRIDED_SLICE',
               124: 'DENSIFY'}
CUSTOM = ('Landmarks2TransformMatrix', 'TransformTensorBilinear', 'TransformLandmarks')
NEW_OPS = ('DEPTH_TO_SPACE', 'LOGISTIC', 'MUL', 'STRIDED_SLICE') + CUSTOM
tt = None  # tflite_torch, imported by main() from --peers
T0 = time.time()


def log(*a):
    print('[%6.1fs]' % (time.time() - T0), *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- flexbuffers
def _uint(b, at, w):
    return int.from_bytes(b[at:at + w], 'little')


def _flex(b, at, parent_w, packed):
    """The flexbuffer value stored at `at` in a parent of width parent_w."""
    t, w = packed >> 2, 1 << (packed & 3)
    if t in (1, 2, 26):  # INT, UINT, BOOL
        return int.from_bytes(b[at:at + parent_w], 'little', signed=t == 1)
    if t == 3:  # FLOAT
        return struct.unpack_from({4: '<f', 8: '<d'}[parent_w], b, at)[0]
    p = at - _uint(b, at, parent_w)  # the rest are offsets
    if t in (6, 7):  # INDIRECT_INT, INDIRECT_UINT
        return int.from_bytes(b[p:p + w], 'little', signed=t == 6)
    if t == 8:
        return struct.unpack_from({4: '<f', 8: '<d'}[w], b, p)[0]
    if t == 5:  # STRING
        return b[p:p + _uint(b, p - w, w)].decode()
    if t == 9:  # MAP: keys vector, its width and the length before the values
        n = _uint(b, p - w, w)
        kw = _uint(b, p - 2 * w, w)
        kv = p - 3 * w - _uint(b, p - 3 * w, w)
        out = {}
        for i in range(n):
            k = kv + i * kw - _uint(b, kv + i * kw, kw)
            key = b[k:b.index(0, k)].decode()
            out[key] = _flex(b, p + i * w, w, b[p + n * w + i])
        return out
    if t == 10:  # untyped VECTOR: element types after the elements
        n = _uint(b, p - w, w)
        return [_flex(b, p + i * w, w, b[p + n * w + i]) for i in range(n)]
    if 11 <= t <= 13:  # VECTOR_INT, VECTOR_UINT, VECTOR_FLOAT
        n = _uint(b, p - w, w)
        return [_flex(b, p + i * w, w, (t - 10) << 2) for i in range(n)]
    if 16 <= t <= 24:  # fixed-length typed vectors of 2, 3, 4
        n, et = 2 + (t - 16) // 3, 1 + (t - 16) % 3
        return [_flex(b, p + i * w, w, et << 2) for i in range(n)]
    raise ValueError('flexbuffer type %d not supported' % t)


def flex_root(b):
    w = b[-1]
    return _flex(b, len(b) - 2 - w, w, b[-2])


# ---------------------------------------------------------------- reading
def _densify(tt_table, raw, dtype, shape, what):
    """TFLite sparse constant (identity traversal, no blocks) -> dense array."""
    sp = tt_table.table(6)
    order = sp.vector(0, 'i')
    if order != list(range(len(shape))) or sp.vector(1, 'i'):
        raise ValueError('%s: sparse order %s or block map not supported' % (what, order))
    vals = np.frombuffer(raw, dtype=dtype)
    levels = []
    for dm in sp.tables(2):
        if dm.scalar(0, 'b') == 0:  # DENSE
            levels.append(None)
            continue
        vec = []
        for ty_field, tab_field in ((2, 3), (4, 5)):  # segments, indices
            fmt = {1: 'i', 2: 'H', 3: 'B'}[dm.scalar(ty_field, 'B')]
            vec.append(dm.table(tab_field).vector(0, fmt))
        levels.append(vec)
    dense = np.zeros(shape, dtype)
    taken = 0

    def walk(level, prev, pos):
        nonlocal taken
        if level == len(shape):
            dense[tuple(pos)] = vals[taken]
            taken += 1
            return
        if levels[level] is None:
            for i in range(shape[level]):
                walk(level + 1, prev * shape[level] + i, pos + [i])
            return
        seg, idx = levels[level]
        for k in range(seg[prev], seg[prev + 1]):
            walk(level + 1, k, pos + [idx[k]])

    walk(0, 0, [])
    if taken != len(vals):
        raise ValueError('%s: placed %d of %d sparse values' % (what, taken, len(vals)))
    return dense


def _new_options(kind, ot):
    t = ot.table(4)
    g = (lambda i, f, d=0: t.scalar(i, f, d)) if t is not None else (lambda i, f, d=0: d)
    if kind == 'MUL':
        return dict(act=tt.ACT[g(0, 'b')])
    if kind == 'DEPTH_TO_SPACE':
        return dict(block=g(0, 'i'))
    if kind == 'STRIDED_SLICE':
        return dict(begin_mask=g(0, 'i'), end_mask=g(1, 'i'), ellipsis_mask=g(2, 'i'),
                    new_axis_mask=g(3, 'i'), shrink_axis_mask=g(4, 'i'))
    if kind in CUSTOM:
        raw = ot.bytes(5)
        return flex_root(raw) if raw else {}
    return {}


def parse_model(path):
    """tflite_torch.parse_tflite plus the ops and sparse constants above."""
    b = open(path, 'rb').read()
    if len(b) < 8 or b[4:8] != b'TFL3':
        raise ValueError('%s: not a TFLite flatbuffer (no TFL3 identifier)' % path)
    model = tt._Table(b, struct.unpack_from('<I', b, 0)[0])
    kinds = []
    for oc in model.tables(1):
        code = max(oc.scalar(0, 'b'), oc.scalar(3, 'i'))
        kinds.append(oc.string(1) or tt.BUILTIN.get(code)
                     or NEW_BUILTIN.get(code, 'BUILTIN_%d' % code))
    buffers = [bt.bytes(0) for bt in model.tables(4)]
    sgs = model.tables(2)
    if len(sgs) != 1:
        raise ValueError('%s: expected 1 subgraph, found %d' % (path, len(sgs)))
    sg = sgs[0]
    tensors = []
    for k, tab in enumerate(sg.tables(0)):
        ty = tab.scalar(1, 'b')
        if ty not in tt.TTYPE:
            raise ValueError('%s: unsupported tensor type %d' % (path, ty))
        shape = tab.vector(0, 'i')
        raw = buffers[tab.scalar(2, 'I')]
        data = None
        if raw and tab.table(6) is not None:
            data = _densify(tab, raw, tt.TTYPE[ty], shape, '%s tensor %d' % (path, k))
        elif raw:
            data = np.frombuffer(raw, dtype=tt.TTYPE[ty]).reshape(shape).copy()
        tensors.append(tt.Tensor(tab.string(3), shape, tt.TTYPE[ty], data))
    ops = []
    for ot in sg.tables(3):
        kind = kinds[ot.scalar(0, 'I')]
        ins, outs = ot.vector(1, 'i'), ot.vector(2, 'i')
        if kind in ('DEQUANTIZE', 'DENSIFY'):  # constants: folded (fp16 -> fp32)
            src = tensors[ins[0]]
            if src.data is None:
                raise ValueError('%s: %s of a non-constant tensor' % (path, kind))
            tensors[outs[0]].data = src.data.astype(
                np.float32 if kind == 'DEQUANTIZE' else src.data.dtype)
            continue
        if kind in NEW_OPS:
            opts = _new_options(kind, ot)
        elif kind in tt.BUILTIN.values():
            opts = tt._options(kind, ot.table(4))
        else:
            raise ValueError('%s: unsupported operator %s' % (path, kind))
        ops.append(tt.Op(kind, ins, outs, opts))
    for op in ops:  # DEQUANTIZE of a DENSIFY output: the fold order above
        for i in op.inputs:
            t = tensors[i] if i >= 0 else None
            if t is not None and t.data is not None and t.data.dtype == np.float16:
                t.data = t.data.astype(np.float32)
    return tt.Graph(tensors, ops, sg.vector(1, 'i'), sg.vector(2, 'i'))


# ---------------------------------------------------------------- the new ops, numpy
def _slices(op, g):
    """STRIDED_SLICE with constant begin/end/strides -> per-dim python slices (TFLite dims)."""
    o = op.opts
    if o['ellipsis_mask'] or o['new_axis_mask'] or o['shrink_axis_mask']:
        raise ValueError('STRIDED_SLICE masks %s not supported' % o)
    begin, end, strides = (g.tensors[i].data.tolist() for i in op.inputs[1:4])
    out = []
    for d, (bb, e, s) in enumerate(zip(begin, end, strides)):
        out.append(slice(None if o['begin_mask'] >> d & 1 else bb,
                         None if o['end_mask'] >> d & 1 else e, s))
    out[0] = slice(None)  # the batch stays whole (the model says batch 1)
    return tuple(out)


def l2m_np(o, lm):
    """MediaPipe's Landmarks2TransformMatrix v2 (landmarks_to_transform_matrix.cc):
    [N, L, 3] -> [N, 4, 4] taking the crop's pixels to the input's."""
    lm = lm.astype(np.float64)
    left, right = lm[:, o['left_rotation_idx'], :2], lm[:, o['right_rotation_idx'], :2]
    rot = o.get('target_rotation_radians', 0.0) - np.arctan2(right[:, 1] - left[:, 1],
                                                             right[:, 0] - left[:, 0])
    idx = np.array(o['subset_idxs']).reshape(-1)
    p = lm[:, idx, :2]
    c, s = np.cos(rot)[:, None], np.sin(rot)[:, None]
    rx = c * p[..., 0] - s * p[..., 1]
    ry = s * p[..., 0] + c * p[..., 1]
    x0, x1, y0, y1 = rx.min(1), rx.max(1), ry.min(1), ry.max(1)
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    ci, si = np.cos(-rot), np.sin(-rot)
    cx, cy = ci * mx - si * my, si * mx + ci * my  # the box's centre, unrotated
    sx = o['scale_x'] * (x1 - x0) / o['output_width']
    sy = o['scale_y'] * (y1 - y0) / o['output_height']
    hx, hy = -o['output_width'] / 2, -o['output_height'] / 2
    # translate(cx, cy) . rotate(-rot) . scale(sx, sy) . translate(hx, hy)
    m = np.zeros((len(lm), 4, 4))
    m[:, 0, 0], m[:, 0, 1] = ci * sx, -si * sy
    m[:, 1, 0], m[:, 1, 1] = si * sx, ci * sy
    m[:, 0, 3] = ci * sx * hx - si * sy * hy + cx
    m[:, 1, 3] = si * sx * hx + ci * sy * hy + cy
    m[:, 2, 2] = m[:, 3, 3] = 1
    return m.astype(np.float32)


def transform_bilinear_np(x, m, oh, ow):
    """MediaPipe's TransformTensorBilinear v2: output pixel centres through m,
    bilinear, 0 where the point falls outside [0, W-1] x [0, H-1]."""
    n, h, w, ch = x.shape
    oy, ox = np.meshgrid(np.arange(oh) + 0.5, np.arange(ow) + 0.5, indexing='ij')
    m = m.astype(np.float64)
    tx = m[:, 0, 0, None, None] * ox + m[:, 0, 1, None, None] * oy + m[:, 0, 3, None, None] - 0.5
    ty = m[:, 1, 0, None, None] * ox + m[:, 1, 1, None, None] * oy + m[:, 1, 3, None, None] - 0.5
    inside = (tx >= 0) & (tx <= w - 1) & (ty >= 0) & (ty <= h - 1)
    tx, ty = np.clip(tx, 0, w - 1), np.clip(ty, 0, h - 1)
    x0, y0 = np.floor(tx).astype(int), np.floor(ty).astype(int)
    x1, y1 = np.minimum(x0 + 1, w - 1), np.minimum(y0 + 1, h - 1)
    fx, fy = (tx - x0)[..., None], (ty - y0)[..., None]
    b = np.arange(n)[:, None, None]
    top = x[b, y0, x0] * (1 - fx) + x[b, y0, x1] * fx
    bot = x[b, y1, x0] * (1 - fx) + x[b, y1, x1] * fx
    return ((top * (1 - fy) + bot * fy) * inside[..., None]).astype(np.float32)


def transform_landmarks_np(lm, m):
    """MediaPipe's TransformLandmarks v2: (x, y) through m's first two rows, z kept."""
    out = lm.astype(np.float32).copy()
    m = m.astype(np.float64)
    x, y = lm[..., 0].astype(np.float64), lm[..., 1].astype(np.float64)
    out[..., 0] = m[:, 0, 0, None] * x + m[:, 0, 1, None] * y + m[:, 0, 3, None]
    out[..., 1] = m[:, 1, 0, None] * x + m[:, 1, 1, None] * y + m[:, 1, 3, None]
    return out


def _new_np(g, op, a):
    k, o = op.kind, op.opts
    if k == 'LOGISTIC':
        return 1 / (1 + np.exp(-a[0]))
    if k == 'MUL':
        return tt._act_np(a[0] * a[1], o['act'])
    if k == 'DEPTH_TO_SPACE':  # DCR: y[n, h*b+i, w*b+j, c] = x[n, h, w, (i*b+j)*C + c]
        n, h, w, c = a[0].shape
        bs = o['block']
        y = a[0].reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
        return y.reshape(n, h * bs, w * bs, c // (bs * bs))
    if k == 'STRIDED_SLICE':
        return a[0][_slices(op, g)]
    if k == 'Landmarks2TransformMatrix':
        return l2m_np(o, a[0])
    if k == 'TransformTensorBilinear':
        oh, ow = g.tensors[op.outputs[0]].shape[1:3]
        return transform_bilinear_np(a[0], a[1], oh, ow)
    if k == 'TransformLandmarks':
        return transform_landmarks_np(a[0], a[1])
    raise ValueError('unsupported op ' + k)


def run_numpy(g, x):
    """The numpy reference: x NHWC [N,H,W,C]; the new ops here, the others one at a
    time through tflite_torch.run_numpy. Returns the outputs in TFLite layout."""
    vals = {i: t.data for i, t in enumerate(g.tensors) if t.data is not None}
    vals[g.inputs[0]] = np.asarray(x, np.float32)
    for op in g.ops:
        a = [vals[i] if i >= 0 else None for i in op.inputs]
        if op.kind in NEW_OPS:
            y = _new_np(g, op, a)
        else:  # a one-op graph whose non-first inputs are constants holding the values
            ts = [tt.Tensor(t.name, t.shape, t.dtype, vals.get(i)) for i, t in enumerate(g.tensors)]
            y = tt.run_numpy(tt.Graph(ts, [op], [op.inputs[0]], [op.outputs[0]]), a[0])[0]
        vals[op.outputs[0]] = np.asarray(y, np.float32)
    return [vals[i] for i in g.outputs]


# ---------------------------------------------------------------- real inputs
def _letterbox(img, size):
    from PIL import Image
    h, w = img.shape[:2]
    s = size / max(h, w)
    nh, nw = round(h * s), round(w * s)
    im = np.asarray(Image.fromarray(img).resize((nw, nh), Image.BILINEAR), np.float32)
    out = np.zeros((size, size, 3), np.float32)
    out[(size - nh) // 2:(size - nh) // 2 + nh, (size - nw) // 2:(size - nw) // 2 + nw] = im
    return out


def real_inputs(assets, peers):
    """astronaut.png's face crop (the short-range detector's best box, like
    bench_peers.py) for the mesh; messi5.jpg letterboxed for the pose models."""
    from PIL import Image
    sys.path.insert(0, peers)
    import face_utils as fu
    face = np.asarray(Image.open(os.path.join(assets, 'astronaut.png')).convert('RGB'))
    gd = tt.parse_tflite(os.path.join(assets, 'face_detection_short_range.tflite'))
    reg, cls = tt.run_numpy(gd, fu.to_input(face, 128))
    _, box, _ = fu.decode_best('short', reg, cls)
    person = np.asarray(Image.open(os.path.join(assets, 'messi5.jpg')).convert('RGB'))
    xs = {}
    for name, (_, size, rng) in MODELS.items():
        if name == 'face_landmark_with_attention':
            xs[name] = fu.face_crop(face, box, size=size)
        else:
            lb = _letterbox(person, size)
            xs[name] = (lb / 127.5 - 1 if rng == 'pm1' else lb / 255.0)[None].astype(np.float32)
    return xs


def headline(name, g, outs):
    """Numbers a person can check: the best person score (detector), the pose or
    face flag, and for the mesh whether each iris centre lies inside its eye's
    contour box."""
    sig = lambda v: float(1 / (1 + math.exp(-v)))  # noqa: E731
    if name == 'pose_detection':
        return dict(best_score=sig(float(outs[1].max())))
    if name.startswith('pose_landmark'):
        return dict(pose_flag=float(outs[1].reshape(-1)[0]),  # already a LOGISTIC output
                    nose_xy=[round(float(v), 1) for v in outs[0].reshape(-1)[:2]])
    names = [g.tensors[i].name for i in g.outputs]
    o = dict(zip(names, outs))
    r = dict(face_flag=sig(float(o['conv_faceflag'].reshape(-1)[0])))
    for side in ('left', 'right'):
        eye = o['output_%s_eye' % side].reshape(-1, 2)
        iris = o['output_%s_iris' % side].reshape(-1, 2)[0]
        r[side + '_iris_in_eye'] = bool((eye.min(0) <= iris).all() and (iris <= eye.max(0)).all())
    return r


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


# ---------------------------------------------------------------- the PyTorch module
def torch_module_class():
    import torch
    import torch.nn.functional as F

    def b_nchw(a):  # a constant broadcasting against NHWC -> against NCHW (4-D ops)
        return tt._nhwc_to_nchw_b(a)

    class PeerModule(tt.TFLiteModule):
        """TFLiteModule with steps for the new ops spliced in. 4-D activations are
        NCHW inside (channels_last memory when asked), others in TFLite layout."""

        def __init__(self, g, channels_last=False, nchw_input=False):
            old = [op for op in g.ops if op.kind not in NEW_OPS]
            super().__init__(tt.Graph(g.tensors, old, g.inputs, g.outputs),
                             channels_last=channels_last, nchw_input=nchw_input)
            steps, it = [], iter(self.steps)
            for op in g.ops:
                steps.append(self._new_step(g, op) if op.kind in NEW_OPS else next(it))
            self.steps = steps
            last = {}
            for n, (_, i, _, _) in enumerate(self.steps):
                for j in (i if isinstance(i, tuple) else (i,)):
                    last[j] = n
            self.drops = [[] for _ in self.steps]
            for j, n in last.items():
                if j not in self.outs and g.tensors[j].data is None:  # constants: never in v
                    self.drops[n].append(j)

        def _const(self, i, arr):
            name = 'k%d' % i
            if not hasattr(self, name):
                self.register_buffer(name, torch.from_numpy(np.ascontiguousarray(arr, np.float32)))
            return name

        def _new_step(self, g, op):
            k, o, ins, out = op.kind, op.opts, op.inputs, op.outputs[0]
            rank = len(g.tensors[ins[0]].shape)
            if k == 'LOGISTIC':
                return ('logistic', ins[0], out, {})
            if k == 'DEPTH_TO_SPACE':
                return ('d2s', ins[0], out, dict(block=o['block']))
            if k == 'MUL':
                p = dict(act=o['act'])
                for j, t in (('a', ins[0]), ('b', ins[1])):
                    d = g.tensors[t].data
                    if d is not None:
                        p[j] = self._const(t, b_nchw(d) if rank == 4 else d)
                return ('mul', (ins[0], ins[1]), out, p)
            if k == 'STRIDED_SLICE':
                s = _slices(op, g)
                if rank == 4:
                    s = (s[0], s[3], s[1], s[2])
                return ('slice', ins[0], out, dict(s=s))
            if k == 'Landmarks2TransformMatrix':
                return ('l2m', ins[0], out, dict(o=o))
            if k == 'TransformTensorBilinear':
                return ('tbil', (ins[0], ins[1]), out,
                        dict(size=tuple(g.tensors[out].shape[1:3])))
            if k == 'TransformLandmarks':
                return ('tlm', (ins[0], ins[1]), out, {})
            raise ValueError('unsupported op ' + k)

        def _run_new(self, kind, v, i, p):
            if kind == 'logistic':
                return torch.sigmoid(v[i])
            if kind == 'd2s':  # DCR in NCHW: x channel (i*b + j)*C + c
                x, b = v[i], p['block']
                n, c, h, w = x.shape
                y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
                y = y.reshape(n, c // (b * b), h * b, w * b)
                return y.contiguous(memory_format=torch.channels_last if self.channels_last
                                    else torch.contiguous_format)
            if kind == 'mul':
                a = getattr(self, p['a']) if 'a' in p else v[i[0]]
                b = getattr(self, p['b']) if 'b' in p else v[i[1]]
                return tt._act_t(a * b, p['act'])
            if kind == 'slice':
                return v[i][p['s']]
            if kind == 'l2m':
                return self._l2m(v[i].float(), p['o'])
            if kind == 'tbil':
                return self._tbil(v[i[0]], v[i[1]], p['size'])
            if kind == 'tlm':
                lm, m = v[i[0]], v[i[1]]
                x, y = lm[..., 0].float(), lm[..., 1].float()
                nx = m[:, 0:1, 0] * x + m[:, 0:1, 1] * y + m[:, 0:1, 3]
                ny = m[:, 1:2, 0] * x + m[:, 1:2, 1] * y + m[:, 1:2, 3]
                return torch.cat([nx[..., None], ny[..., None], lm[..., 2:].float()],
                                 -1).to(lm.dtype)
            return None

        @staticmethod
        def _l2m(lm, o):  # fp32 [N, L, 3] -> fp32 [N, 4, 4] (l2m_np's arithmetic)
            lt, rt = lm[:, o['left_rotation_idx'], :2], lm[:, o['right_rotation_idx'], :2]
            rot = o.get('target_rotation_radians', 0.0) - torch.atan2(rt[:, 1] - lt[:, 1],
                                                                      rt[:, 0] - lt[:, 0])
            pts = lm[:, [int(j) for j in np.array(o['subset_idxs']).reshape(-1)], :2]
            c, s = torch.cos(rot)[:, None], torch.sin(rot)[:, None]
            rx = c * pts[..., 0] - s * pts[..., 1]
            ry = s * pts[..., 0] + c * pts[..., 1]
            x0, x1 = rx.amin(1), rx.amax(1)
            y0, y1 = ry.amin(1), ry.amax(1)
            mx, my = (x0 + x1) / 2, (y0 + y1) / 2
            ci, si = torch.cos(-rot), torch.sin(-rot)
            cx, cy = ci * mx - si * my, si * mx + ci * my
            sx = o['scale_x'] * (x1 - x0) / o['output_width']
            sy = o['scale_y'] * (y1 - y0) / o['output_height']
            hx, hy = -o['output_width'] / 2, -o['output_height'] / 2
            z, one = torch.zeros_like(ci), torch.ones_like(ci)
            rows = [ci * sx, -si * sy, z, ci * sx * hx - si * sy * hy + cx,
                    si * sx, ci * sy, z, si * sx * hx + ci * sy * hy + cy,
                    z, z, one, z, z, z, z, one]
            return torch.stack(rows, 1).view(-1, 4, 4)

        @staticmethod
        def _tbil(x, m, size):  # x NCHW, m fp32 [N, 4, 4] -> NCHW [N, C, OH, OW]
            n, c, h, w = x.shape
            oh, ow = size
            oy = torch.arange(oh, device=x.device, dtype=torch.float32).view(1, oh, 1) + 0.5
            ox = torch.arange(ow, device=x.device, dtype=torch.float32).view(1, 1, ow) + 0.5
            mm = m.view(n, 16, 1, 1)
            tx = mm[:, 0] * ox + mm[:, 1] * oy + mm[:, 3] - 0.5
            ty = mm[:, 4] * ox + mm[:, 5] * oy + mm[:, 7] - 0.5
            inside = (tx >= 0) & (tx <= w - 1) & (ty >= 0) & (ty <= h - 1)
            # align_corners=True: -1 and 1 are the first and last pixel centres
            grid = torch.stack([tx * (2 / max(w - 1, 1)) - 1, ty * (2 / max(h - 1, 1)) - 1], -1)
            y = F.grid_sample(x.float(), grid, mode='bilinear', padding_mode='border',
                              align_corners=True)
            y = (y * inside[:, None]).to(x.dtype)
            return y.contiguous(memory_format=torch.channels_last if x.is_contiguous(
                memory_format=torch.channels_last) else torch.contiguous_format)

        def forward(self, x):
            # TFLiteModule.forward's loop with the new kinds first; the face
            # models' kinds go to the same calls it makes
            if not self.nchw_input:
                x = x.permute(0, 3, 1, 2)
            x = x.contiguous(memory_format=torch.channels_last if self.channels_last
                             else torch.contiguous_format)
            v = {self.inp: x}
            for n, (kind, i, o, p) in enumerate(self.steps):
                y = self._run_new(kind, v, i, p)
                if y is None:
                    y = self._run_old(kind, v, i, p)
                v[o] = y
                for d in self.drops[n]:
                    del v[d]
            return tuple(v[j].permute(0, 2, 3, 1) if r == 4 else v[j]
                         for j, r in zip(self.outs, self.out_rank))

        def _run_old(self, kind, v, i, p):
            if kind == 'conv':
                y = v[i]
                if p['prepad'] is not None:
                    y = F.pad(y, p['prepad'])
                y = F.conv2d(y, getattr(self, p['w']),
                             getattr(self, p['b']) if p['b'] is not None else None,
                             p['stride'], p['pad'], p['dil'], p['groups'])
                return tt._act_t(y, p['act'])
            if kind == 'add':
                a = getattr(self, p['aconst']) if 'aconst' in p else v[i[0]]
                b = getattr(self, p['bconst']) if 'bconst' in p else v[i[1]]
                return tt._act_t(a + b, p['act'])
            if kind == 'act':
                return tt._act_t(v[i], p['act'])
            if kind == 'prelu':
                y, al = v[i], getattr(self, p['alpha'])
                return F.prelu(y, al) if p['per_channel'] else torch.where(y >= 0, y, y * al)
            if kind == 'pad':
                return F.pad(v[i], p['pad'])
            if kind == 'maxpool':
                y = v[i]
                if p['prepad'] is not None:
                    y = F.pad(y, p['prepad'], value=float('-inf'))
                return tt._act_t(F.max_pool2d(y, p['k'], p['stride'], p['pad']), p['act'])
            if kind == 'reshape':
                y = v[i]
                if p['from4d']:
                    y = y.permute(0, 2, 3, 1)
                y = y.reshape([y.shape[0]] + p['shape'])
                return y.permute(0, 3, 1, 2) if len(p['shape']) == 3 else y
            if kind == 'concat':
                return tt._act_t(torch.cat([v[j] for j in i], dim=p['axis']), p['act'])
            if kind == 'resize':
                y = v[i]
                if p['align_corners'] or p['half_pixel']:
                    return F.interpolate(y, size=p['size'], mode='bilinear',
                                         align_corners=p['align_corners'])
                return tt._resize_legacy(y, *p['size'])
            raise ValueError('step kind %s' % kind)

    return PeerModule


# ---------------------------------------------------------------- parts
def part_check(a, xs):
    for name in a.models:
        g = parse_model(os.path.join(a.assets, MODELS[name][0]))
        t = time.time()
        outs = run_numpy(g, xs[name])
        kinds = sorted({op.kind for op in g.ops if op.kind in NEW_OPS})
        log('%s: numpy %.1fs, new ops %s, %s' % (name, time.time() - t, kinds,
                                                  headline(name, g, outs)))
        if a.dump:
            os.makedirs(a.dump, exist_ok=True)
            np.save(os.path.join(a.dump, name + '.input.npy'), xs[name])
            for k, o in enumerate(outs):
                np.save(os.path.join(a.dump, '%s.out%d.npy' % (name, k)), o)


def part_compile(a, xs):
    """Validation on the real input, then bench_peers.py --part compile's timing."""
    import torch
    sys.path.insert(0, a.peers)
    import bench_peers as bp  # its Timer, ring and rel: the same method
    if not torch.cuda.is_available():
        log('--part compile: PyTorch sees no CUDA device')
        return 1
    PeerModule = torch_module_class()
    torch.backends.cudnn.benchmark = True
    import torch._dynamo as dynamo
    for k in ('cache_size_limit', 'recompile_limit'):
        if hasattr(dynamo.config, k):
            setattr(dynamo.config, k, 64)
    timer = bp.Timer(True, target_s=a.target_s)
    dev = 'cuda'
    env = dict(device=torch.cuda.get_device_name(0), torch=torch.__version__,
               cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
    log(env)
    failed = False
    for name in a.models:
        file, size, _ = MODELS[name]
        g = parse_model(os.path.join(a.assets, file))
        row = dict(bench='engine', backend='torch', peer='torch.compile reduce-overhead',
                   model=os.path.join(a.assets, file), precision='fp16', channels_last=True,
                   device_name=env['device'], torch=env['torch'], results=[])
        try:
            ref = run_numpy(g, xs[name])
            with torch.inference_mode():
                cpu = PeerModule(g).eval()(torch.from_numpy(xs[name]))
                row['torch_cpu_fp32_vs_numpy'] = max(rel(o.float().numpy(), r)
                                                     for o, r in zip(cpu, ref))
                m = PeerModule(g, channels_last=True).eval().to(device=dev, dtype=torch.float16)
                m = m.to(memory_format=torch.channels_last)
                gpu = m(torch.from_numpy(xs[name]).to(dev).half())
                gout = [o.float().cpu().numpy() for o in gpu]
                row['gpu_fp16_eager_vs_numpy'] = [rel(o, r) for o, r in zip(gout, ref)]
                row['headline_numpy'] = headline(name, g, ref)
                row['headline_gpu_fp16'] = headline(name, g, gout)
            log(name, {k: v for k, v in row.items() if k not in ('results',)})
            if row['torch_cpu_fp32_vs_numpy'] > 1e-3:  # a wrong layout or op: O(1)
                raise ValueError('PyTorch fp32 differs from the numpy reference: %.1e'
                                 % row['torch_cpu_fp32_vs_numpy'])
        except Exception as e:
            row['error'] = '%s: %s' % (type(e).__name__, str(e)[:300])
            log(name, row['error'])
            print(json.dumps(row), flush=True)
            failed = True
            continue
        for b in a.batches:
            r = dict(batch=b)
            try:
                with torch.inference_mode():
                    ins = bp.ring((b, size, size, 3), torch.float16, dev)
                    eager = [o.float().cpu().numpy() for o in m(ins[0])]
                    cm = torch.compile(m, mode='reduce-overhead', dynamic=False)
                    mark = getattr(torch.compiler, 'cudagraph_mark_step_begin', lambda: None)
                    t = time.time()
                    for _ in range(3):
                        mark()
                        out = cm(ins[0])
                    torch.cuda.synchronize()
                    r['compile_s'] = time.time() - t
                    r['relerr_vs_eager_fp16'] = max(rel(o.float().cpu().numpy(), e)
                                                    for o, e in zip(out, eager))

                    def step(i):
                        mark()
                        cm(ins[i % len(ins)])
                    st = timer.run(step)
                r.update(median_ms=st['median_ms'], p10_ms=st['p10_ms'], p90_ms=st['p90_ms'],
                         min_ms=st['min_ms'], iters=st['iters'],
                         images_per_s=b / st['median_ms'] * 1e3)
            except Exception as e:  # e.g. out of memory at 512: recorded, the rest go on
                r['error'] = '%s: %s' % (type(e).__name__, str(e)[:300])
            log(name, r)
            row['results'].append(r)
            ins = cm = None
            torch.cuda.empty_cache()
        print(json.dumps(row), flush=True)
        m = None
    return 1 if failed else 0


# bench_peers.py's names of the face models
FACE_PEER_NAMES = {'face_detection_short_range': 'blazeface_short',
                   'face_detection_full_range': 'blazeface_full', 'face_landmark': 'facemesh'}


def _model_name(path):
    return os.path.basename(path).rsplit('.tflite', 1)[0]


def part_table(a):
    """ratio.txt: omma (fp16, CUDA graphs) against torch.compile at batch 1 and 128,
    from OUT's engine.jsonl, peers_models.jsonl and bench_peers' peers_compile.json
    (the last line of a model wins)."""
    omma, torch_ms, device = {}, {}, None
    for line in open(os.path.join(a.out, 'engine.jsonl')):
        r = json.loads(line)
        if r.get('precision') == 'fp16' and r.get('graphs') is True:
            for x in r['results']:
                omma[(_model_name(r['model']), x['batch'])] = x['median_ms']
    path = os.path.join(a.out, 'peers_models.jsonl')
    if os.path.exists(path):
        for line in open(path):
            r = json.loads(line)
            device = r.get('device_name', device)
            for x in r.get('results', []):
                torch_ms[(_model_name(r['model']), x['batch'])] = x.get('median_ms')
    path = os.path.join(a.out, 'peers_compile.json')
    if os.path.exists(path):
        d = json.load(open(path))
        device = d.get('env', {}).get('device', device)
        back = {v: k for k, v in FACE_PEER_NAMES.items()}
        for r in d.get('compile', []):
            if r['model'] in back and 'median_ms' in r:
                torch_ms[(back[r['model']], r['batch'])] = r['median_ms']
    print('omma bench engine (fp16, CUDA graphs) vs the PyTorch peer (torch.compile '
          'reduce-overhead, fp16, channels_last) on %s' % (device or 'the GPU'))
    print('ratio = torch.compile ms / omma ms (target: >= 2 at batch 128)\n')
    print('%-30s %5s %10s %10s %7s' % ('model', 'batch', 'omma ms', 'torch ms', 'ratio'))
    missing = False
    for m in a.models:
        for b in (1, 128):
            o, t = omma.get((m, b)), torch_ms.get((m, b))
            f = lambda v: '%10.3f' % v if v else '%10s' % '-'  # noqa: E731
            ratio = '%7.2f' % (t / o) if o and t else '%7s' % '-'
            missing = missing or not (o and t)
            print('%-30s %5d %s %s %s' % (m, b, f(o), f(t), ratio))
    return 1 if missing else 0


def main():
    global tt
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--peers', help='the folder with tflite_torch.py')
    ap.add_argument('--assets', help='models, astronaut.png, messi5.jpg')
    ap.add_argument('--part', default='check', choices=['check', 'compile', 'table'])
    ap.add_argument('--models', default=','.join(MODELS))
    ap.add_argument('--batches', default='1,128')
    ap.add_argument('--target-s', type=float, default=0.6)
    ap.add_argument('--dump', help='check: write inputs and outputs as .npy here')
    ap.add_argument('--out', help='table: the folder of gpu-bench.sh\'s results')
    a = ap.parse_args()
    a.models = a.models.split(',')
    if a.part == 'table':
        if not a.out:
            ap.error('--part table needs --out')
        return part_table(a)
    if not a.peers or not a.assets:
        ap.error('--part %s needs --peers and --assets' % a.part)
    for m in a.models:
        if m not in MODELS:
            ap.error('--models: %s is not one of %s' % (m, ', '.join(MODELS)))
    a.batches = [int(b) for b in a.batches.split(',')]
    sys.path.insert(0, os.path.abspath(a.peers))
    import tflite_torch
    tt = tflite_torch
    xs = real_inputs(a.assets, a.peers)
    if a.part == 'check':
        part_check(a, xs)
        return 0
    return part_compile(a, xs)


if __name__ == '__main__':
    sys.exit(main())
