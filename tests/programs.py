"""Helpers to build ir.Programs by hand for the timing-model tests."""

from __future__ import annotations

from neuroncore_sim import dtypes
from neuroncore_sim.config import TRN1, override
from neuroncore_sim.program.ir import Access, Engine, Instruction, MemSpace, Opcode, Program, SourceLoc
from neuroncore_sim.program.ir import TensorDecl

#: trn1 with the compile stage's rewriting passes off (engine balancing, reordering, auto-cast,
#: vectorisation, repeated loads merged or kept resident):
#: for tests of the timing model, the lowering and the memory plan on the instructions as the
#: kernel recorded them (tests/compiler/test_passes.py shows what each pass changes).
AS_WRITTEN = override(TRN1, {"compiler": {"balance_engines": False, "reorder": False,
                                          "auto_cast": "none", "vectorize": False,
                                          "merge_repeated_loads": False,
                                          "keep_resident_loads": False,
                                          "fold_zero_adds": False,
                                          "fold_copies": False}}, "tests")


class Builder:
    """Accumulates tensors and instructions into a Program.

    Example::

        b = Builder()
        x = b.tensor("x", (128, 512), "bfloat16", "sbuf")
        b.op("tensor_copy", "vector", out=acc(y), src=acc(x))
        program = b.program
    """

    def __init__(self, name: str = "test") -> None:
        self.program = Program(name)
        self._line = 1
        #: the affine_range iterations the next instructions are in (``iteration``)
        self.loops: tuple[tuple[int, int], ...] = ()

    def iteration(self, i: int) -> None:
        """The next instructions are iteration ``i`` of one ``nl.affine_range`` loop (whose
        iterations the compiler interleaves and whose DMA triggers it does not order)."""
        if not self.program.loops:
            self.program.loops.append(SourceLoc("kernel.py", 99))
        self.loops = ((0, i),)

    def tensor(self, name: str, shape: tuple[int, ...], dtype: str = "float32",
               space: str = "sbuf", site: int | None = None, kind: str | None = None
               ) -> TensorDecl:
        """Declare a tensor; ``site`` is the allocating line number in "kernel.py"."""
        sp = MemSpace(space)
        t = TensorDecl(
            id=len(self.program.tensors), name=name, space=sp, shape=tuple(shape),
            dtype=dtypes.BY_NAME[dtype], partition_axis=0,
            kind=kind or ("tile" if sp is not MemSpace.HBM else "input"),
            site=SourceLoc("kernel.py", site) if site is not None else None)
        self.program.tensors.append(t)
        return t

    def op(self, opcode: str, engine: str, *, attrs: dict | None = None, instance: int = 0,
           dsts: dict[str, Access] | None = None, **operands: Access) -> Instruction:
        """Append an instruction. ``out=`` (and any role in ``dsts``) is written; every
        other keyword access is a source role."""
        d = dict(dsts or {})
        if "out" in operands:
            d["out"] = operands.pop("out")
        ins = Instruction(id=len(self.program.instructions), opcode=Opcode(opcode),
                          engine=Engine(engine), dsts=d, srcs=dict(operands),
                          attrs=dict(attrs or {}), loc=SourceLoc("kernel.py", 100 + self._line),
                          instance=instance, loops=self.loops)
        self._line += 1
        self.program.instructions.append(ins)
        return ins

    def matmul(self, out: Access, stationary: Access, moving: Access,
               accumulate: bool = False, **attrs: object) -> Instruction:
        """nc_matmul on TensorE."""
        return self.op("nc_matmul", "tensor", out=out, stationary=stationary, moving=moving,
                       attrs={"accumulate": accumulate, **attrs})

    def dma(self, out: Access, src: Access, transpose: bool = False) -> Instruction:
        """dma_copy (or dma_transpose)."""
        return self.op("dma_transpose" if transpose else "dma_copy", "dma", out=out, src=src)


def acc(t: TensorDecl, *index: slice | int) -> Access:
    """Access of ``t[index]`` (numpy basic slicing per dim; missing dims are full)."""
    offset = 0
    pattern = []
    for d, n in enumerate(t.shape):
        s = index[d] if d < len(index) else slice(None)
        if isinstance(s, int):
            offset += s * t.strides[d]
            pattern.append((t.strides[d], 1))
            continue
        start, stop, step = s.indices(n)
        offset += start * t.strides[d]
        count = max(0, (stop - start + step - 1) // step)
        pattern.append((t.strides[d] * step, count))
    return Access(t, offset, tuple(pattern))
