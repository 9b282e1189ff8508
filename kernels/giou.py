"""Generalized IoU of box pairs: ``giou(a[i], b[i])`` for two batches of boxes.

Boxes are rows ``(x1, y1, x2, y2)`` with ``x1 < x2`` and ``y1 < y2``. The box index goes on the
partition axis, so 128 pairs are processed at once and each coordinate is a [128, 1] column of
the loaded [128, 4] tile; every step is an element-wise VectorE operation.

For boxes A and B with intersection I, union U = |A| + |B| - I and smallest enclosing box C:
``giou = I / U - (|C| - U) / |C|``.
"""

import numpy as np

import neuroncore_sim.nki as nki
import neuroncore_sim.nki.language as nl

PMAX = 128


def _area(x1, y1, x2, y2):
    """Area of boxes given as [P, 1] coordinate columns (clamped at zero for empty boxes)."""
    width = nl.maximum(nl.subtract(x2, x1), 0.0)
    height = nl.maximum(nl.subtract(y2, y1), 0.0)
    return nl.multiply(width, height)


@nki.jit
def kernel(boxes_a, boxes_b):
    """Generalized IoU [N, 1] of row-aligned boxes in two [N, 4] tensors (N % 128 == 0)."""
    n_boxes = boxes_a.shape[0]
    result = nl.ndarray((n_boxes, 1), dtype=nl.float32, buffer=nl.shared_hbm)

    for i in nl.affine_range(n_boxes // PMAX):
        a = nl.load(boxes_a[i * PMAX:(i + 1) * PMAX, :])
        b = nl.load(boxes_b[i * PMAX:(i + 1) * PMAX, :])
        ax1, ay1, ax2, ay2 = a[:, 0:1], a[:, 1:2], a[:, 2:3], a[:, 3:4]
        bx1, by1, bx2, by2 = b[:, 0:1], b[:, 1:2], b[:, 2:3], b[:, 3:4]

        # Intersection: the overlap of the two boxes (zero area when they are apart).
        inter = _area(nl.maximum(ax1, bx1), nl.maximum(ay1, by1),
                      nl.minimum(ax2, bx2), nl.minimum(ay2, by2))
        union = nl.subtract(nl.add(_area(ax1, ay1, ax2, ay2), _area(bx1, by1, bx2, by2)), inter)
        # Smallest box enclosing both.
        hull = _area(nl.minimum(ax1, bx1), nl.minimum(ay1, by1),
                     nl.maximum(ax2, bx2), nl.maximum(ay2, by2))

        iou = nl.divide(inter, union)
        penalty = nl.divide(nl.subtract(hull, union), hull)
        nl.store(result[i * PMAX:(i + 1) * PMAX, :], value=nl.subtract(iou, penalty))
    return result


def reference(boxes_a, boxes_b):
    """numpy meaning of :func:`kernel` (float64 inside, float32 out)."""
    a = boxes_a.astype(np.float64)
    b = boxes_b.astype(np.float64)

    def area(x1, y1, x2, y2):
        return np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)

    inter = area(np.maximum(a[:, 0], b[:, 0]), np.maximum(a[:, 1], b[:, 1]),
                 np.minimum(a[:, 2], b[:, 2]), np.minimum(a[:, 3], b[:, 3]))
    union = area(*a.T) + area(*b.T) - inter
    hull = area(np.minimum(a[:, 0], b[:, 0]), np.minimum(a[:, 1], b[:, 1]),
                np.maximum(a[:, 2], b[:, 2]), np.maximum(a[:, 3], b[:, 3]))
    return (inter / union - (hull - union) / hull).astype(np.float32)[:, None]


def _random_boxes(rng, n):
    """n boxes with corners in [0, 10) and sides in [0.5, 5)."""
    x1 = rng.uniform(0.0, 10.0, n)
    y1 = rng.uniform(0.0, 10.0, n)
    w = rng.uniform(0.5, 5.0, n)
    h = rng.uniform(0.5, 5.0, n)
    return np.stack([x1, y1, x1 + w, y1 + h], axis=1).astype(np.float32)


def example_inputs():
    """Two seeded batches of 256 float32 boxes (overlapping and disjoint pairs both occur)."""
    rng = np.random.default_rng(9)
    return {"boxes_a": _random_boxes(rng, 256), "boxes_b": _random_boxes(rng, 256)}
