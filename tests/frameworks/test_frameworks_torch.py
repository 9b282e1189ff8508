"""NKI kernels in PyTorch training code: ``torch.autograd.Function`` whose forward and backward
are NKI kernels, on CPU tensors, checked against torch's own ops and with
``torch.autograd.gradcheck``. Skipped where torch is missing (it is not in the test extra:
.ci/frameworks runs these in a venv of the torch and kernels extras; docs/frameworks.md)."""

from __future__ import annotations

import warnings

import pytest

import neuroncore_sim.nki.language as nl
from neuroncore_sim import nki
from neuroncore_sim.errors import KernelError

torch = pytest.importorskip("torch", reason='torch is not installed; pip install ".[torch]"')


@nki.jit
def add_tiles(a, b):
    """c = a + b over a grid of [128, 512] tiles (the SDK guide's example)."""
    c = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    ix = nl.program_id(0) * 128 + nl.arange(128)[:, None]
    iy = nl.program_id(1) * 512 + nl.arange(512)[None, :]
    nl.store(c[ix, iy], value=nl.load(a[ix, iy]) + nl.load(b[ix, iy]))
    return c


def nki_add(a, b):
    return add_tiles[a.shape[0] // 128, a.shape[1] // 512](a, b)


@nki.jit
def tanh_fwd(x):
    y = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(y, value=nl.tanh(nl.load(x)))
    return y


@nki.jit
def tanh_bwd(y, g):
    """d tanh(x)/dx * g = (1 - y*y) * g, from the saved output y."""
    dx = nl.ndarray(y.shape, dtype=y.dtype, buffer=nl.shared_hbm)
    t = nl.load(y)
    nl.store(dx, value=nl.multiply(nl.subtract(1.0, nl.multiply(t, t)), nl.load(g)))
    return dx


class NkiAddFunc(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return nki_add(a, b)

    @staticmethod
    def backward(ctx, dy, *args):
        return dy, dy


class NkiTanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = tanh_fwd(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return tanh_bwd(y, g.contiguous())


def test_guide_example_forward_and_backward():
    a = torch.randn(256, 1024).requires_grad_()
    b = torch.randn(256, 1024).requires_grad_()
    c = NkiAddFunc.apply(a, b)
    out = a * b * c
    out.sum().backward()
    a2, b2 = a.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    ((a2 + b2) * a2 * b2).sum().backward()
    torch.testing.assert_close(out, (a2 * b2 * (a2 + b2)).detach())
    torch.testing.assert_close(a.grad, a2.grad)
    torch.testing.assert_close(b.grad, b2.grad)


def test_nki_backward_kernel_matches_torch_autograd():
    x = torch.randn(128, 64).requires_grad_()
    (NkiTanh.apply(x) * 3.0).sum().backward()
    x2 = x.detach().clone().requires_grad_()
    (torch.tanh(x2) * 3.0).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad, rtol=1e-5, atol=1e-5)


def test_gradcheck_in_float32():
    # The simulator computes in the kernel's dtypes (no float64 on the device), so gradcheck
    # runs in float32 with a matching step and tolerance.
    x = torch.randn(128, 8).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "not double precision"
        assert torch.autograd.gradcheck(NkiTanh.apply, (x,), eps=1e-2, atol=1e-2, rtol=1e-2)


def test_bad_shape_in_forward_is_a_simulator_error():
    x = torch.randn(256, 8).requires_grad_()  # 256 rows do not fit the 128 partitions
    with pytest.raises(KernelError, match=r"test_frameworks_torch\.py:\d+"):
        NkiTanh.apply(x)


def test_profile_session_names_launches_by_torch_module():
    import neuroncore_sim as ncs

    class Act(torch.nn.Module):
        def forward(self, x):
            return NkiTanh.apply(x)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.act1, self.act2 = Act(), Act()

        def forward(self, x):
            return self.act2(self.act1(x) * 2)

    net = Net()
    x = torch.randn(128, 16).requires_grad_()
    with ncs.profile_session(model=net) as s:
        net(x).sum().backward()
    recs = s.launches
    assert [r.kernel for r in recs] == ["tanh_fwd", "tanh_fwd", "tanh_bwd", "tanh_bwd"]
    assert [r.layer for r in recs[:2]] == ["Net/act1", "Net/act2"]
    # autograd runs the backward after every forward returned, last layer first: each backward
    # launch carries the layer whose forward made the Function's launch
    assert [r.layer for r in recs[2:]] == ["Net/act2", "Net/act1"]
    assert [r.backward for r in recs] == [False, False, True, True]
    assert {k: n for k, n, _ in s.by_layer()} == {"Net/act1": 2, "Net/act2": 2}
    assert "Net/act2 (bwd)" in s.table()


def test_backward_launch_without_a_forward_layer_is_named_by_its_node():
    import neuroncore_sim as ncs

    x = torch.randn(128, 16).requires_grad_()
    y = NkiTanh.apply(x)  # outside the session: no layer recorded for the node
    with ncs.profile_session() as s:
        y.sum().backward()
    assert [(r.kernel, r.layer, r.backward) for r in s.launches] == [
        ("tanh_bwd", "NkiTanhBackward", True)]


def test_ncs_layer_names_the_backward_of_what_it_launched():
    import neuroncore_sim as ncs

    x = torch.randn(128, 16).requires_grad_()
    with ncs.profile_session() as s:
        with ncs.layer("act"):
            y = NkiTanh.apply(x)
        y.sum().backward()
    assert [(r.layer, r.backward) for r in s.launches] == [("act", False), ("act", True)]
