"""The transformer block of transformer_block_jax.py in PyTorch: each layer a
``torch.autograd.Function`` whose forward and backward are NKI kernels (RMSNorm's backward is
torch autograd on the reference), one training step profiled per layer (submodule names; a
backward launch is counted with the layer whose forward launched it) and checked against the
block in torch ops.

    PYTHONPATH=. python examples/transformer_block_torch.py     # needs torch (CPU)
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from block_kernels import (matmul_single_tile, rmsnorm, softmax, softmax_bwd,  # noqa: E402
                           swiglu, swiglu_bwd)

import neuroncore_sim as ncs  # noqa: E402

S, D, F = 128, 128, 128  # tokens, model width, MLP width


class MatMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return matmul_single_tile.kernel(a.t().contiguous(), b)

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        g = g.contiguous()
        return (matmul_single_tile.kernel(g.t().contiguous(), b.t().contiguous()),
                matmul_single_tile.kernel(a, g))


def _rmsnorm_ref(x, w):
    return x * torch.rsqrt((x * x).mean(dim=1, keepdim=True) + rmsnorm.EPS) * w


class RMSNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return rmsnorm.kernel(x, w)

    @staticmethod
    def backward(ctx, g):
        x, w = (t.detach().requires_grad_() for t in ctx.saved_tensors)
        with torch.enable_grad():
            return torch.autograd.grad(_rmsnorm_ref(x, w), (x, w), g)


class Softmax(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = softmax.kernel(x.contiguous())
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return softmax_bwd(y, g.contiguous())


class SwiGLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        return swiglu(gate, up)

    @staticmethod
    def backward(ctx, g):
        gate, up = ctx.saved_tensors
        return swiglu_bwd(gate, up, g.contiguous())


NKI = {"mm": MatMul.apply, "norm": RMSNormFn.apply, "softmax": Softmax.apply,
       "glu": SwiGLU.apply}
TORCH = {"mm": torch.matmul, "norm": _rmsnorm_ref, "softmax": lambda x: torch.softmax(x, 1),
         "glu": lambda g, u: torch.nn.functional.silu(g) * u}


class Norm(torch.nn.Module):
    def __init__(self, ops, scale):
        super().__init__()
        self.ops, self.weight = ops, torch.nn.Parameter(torch.full((1, D), scale))

    def forward(self, x):
        return self.ops["norm"](x, self.weight)


class Attention(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.wq, self.wk, self.wv, self.wo = (torch.nn.Parameter(torch.randn(D, D) / D ** 0.5)
                                              for _ in range(4))

    def forward(self, h):
        mm = self.ops["mm"]
        q, k, v = mm(h, self.wq), mm(h, self.wk), mm(h, self.wv)
        p = self.ops["softmax"](mm(q, k.t()) * (1.0 / D ** 0.5))
        return mm(mm(p, v), self.wo)


class MLP(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops
        self.wg, self.wu = (torch.nn.Parameter(torch.randn(D, F) / D ** 0.5) for _ in range(2))
        self.wd = torch.nn.Parameter(torch.randn(F, D) / F ** 0.5)

    def forward(self, h):
        mm = self.ops["mm"]
        return mm(self.ops["glu"](mm(h, self.wg), mm(h, self.wu)), self.wd)


class Block(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.attn_norm, self.attention = Norm(ops, 1.0), Attention(ops)
        self.mlp_norm, self.mlp = Norm(ops, 1.1), MLP(ops)

    def forward(self, x):
        x = x + self.attention(self.attn_norm(x))
        return x + self.mlp(self.mlp_norm(x))


def main() -> dict:
    torch.manual_seed(0)
    model = Block(NKI)
    reference = Block(TORCH)
    reference.load_state_dict(model.state_dict())
    x = torch.randn(S, D)
    with ncs.profile_session(model=model) as session:
        loss = (model(x) ** 2).mean()
        loss.backward()
    ref_loss = (reference(x) ** 2).mean()
    ref_loss.backward()
    worst = max(float((p.grad - r.grad).abs().max() / (r.grad.abs().max() + 1e-30))
                for p, r in zip(model.parameters(), reference.parameters()))
    print(session.table())
    loss, ref_loss = float(loss.detach()), float(ref_loss.detach())
    print(f"\nloss {loss:.6f} (torch ops {ref_loss:.6f}); "
          f"worst relative gradient difference {worst:.2e}")
    assert abs(loss - ref_loss) <= 1e-4 * abs(ref_loss)
    assert worst < 1e-3, worst
    return {"session": session, "loss": loss, "worst": worst}


if __name__ == "__main__":
    main()
