"""A user script as the SDK's CPU-simulation guide has them, for tests of `neuroncore-sim run`.

It takes the GIoU sample kernel (kernels/giou.py), marks it with ``nki.trace``, runs it with
``nki.simulate_kernel`` on random boxes and checks the values against the sample's numpy
reference. Its own options (``--boxes N``, ``--out FILE.npy``) let the tests check that
arguments after the script name reach the script, ``--out`` included.

    python tests/scripts/giou_simulate_kernel.py --boxes 128
    neuroncore-sim run --out reports/ tests/scripts/giou_simulate_kernel.py --boxes 128
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from neuronxcc import nki

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "kernels"))
import giou  # noqa: E402  (kernels/ is a folder of scripts: needs the path entry above)


def random_boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    """n boxes (x1, y1, x2, y2) with corners in [0, 8) and sides in [1, 4)."""
    corner = rng.uniform(0.0, 8.0, (n, 2))
    size = rng.uniform(1.0, 4.0, (n, 2))
    return np.concatenate([corner, corner + size], axis=1).astype(np.float32)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--boxes", type=int, default=256, help="box pairs (a multiple of 128)")
    parser.add_argument("--out", default=None, help="save the GIoU values to this .npy file")
    args = parser.parse_args()

    rng = np.random.default_rng(7)
    boxes_a, boxes_b = random_boxes(rng, args.boxes), random_boxes(rng, args.boxes)
    giou_kernel = nki.trace(giou.kernel)
    values = nki.simulate_kernel(giou_kernel, boxes_a, boxes_b)

    error = float(np.abs(values - giou.reference(boxes_a, boxes_b)).max())
    print(f"giou of {args.boxes} box pairs: max abs error {error:.3g}")
    if args.out:
        np.save(args.out, values)
    return 0 if error < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
