"""Copies folded into their producer: ``t = nisa.activation(...); u = nisa.tensor_copy(t)``
where nothing else touches ``t`` becomes one activation writing ``u``.

A compiler that sees a temporary written by one instruction and read only by a copy has the
producer write the copy's destination instead (copy propagation, with the copy's dtype: the
compute engines cast their output for free, arch.md); the copy and the temporary's memory are
gone. The NKI docs do not describe this pass; the measurement it rests on is Autocomp's SD
attention trace (SDK 2.26): v3 writes the softmax's exponentials to an fp32 tile and copies the
whole [128, 4096] row to bf16 (`tensor_copy`, 32 times), where v2 has the activation write bf16
directly; the hardware runs v3 2.3 % *faster* than v2 (0.424 vs 0.434 ms), and with the copies
we estimated v3 28 % slower than v2 (docs/model.md, "Compile stage").

The rule (conservative: a copy is folded only when the result cannot differ in any way the
timing model sees other than the copy's absence):

* the copy is a ``tensor_copy`` without a mask, reading the whole of a tensor ``t`` that exactly
  two instructions touch: one earlier producer writing all of it as its main output, and the
  copy;
* the producer runs on VectorE, ScalarE or GpSimd (not a DMA, not TensorE, which writes PSUM
  only), has no mask, writes ``t`` exactly as the copy reads it (same region, same pattern),
  and can write the copy's destination (GpSimd cannot reach PSUM);
* the copy's destination has the same partitions and element count as its source (a copy that
  moves partitions is a data movement of its own).

The values layer still executes the copy as written; only the timing model's streams change.
Switch: ``config.compiler.fold_copies``.
"""

from __future__ import annotations

from ..program.ir import Access, Engine, Instruction, MemSpace, Opcode

#: Engines whose output the compiler can point at another tile (they cast on output for free).
_PRODUCERS = frozenset({Engine.VECTOR, Engine.SCALAR, Engine.GPSIMD})


def fold_copies(instrs: list[Instruction]) -> list[Instruction]:
    """``instrs`` (one instance, program order) with each foldable copy dropped and its
    producer writing the copy's destination (module docstring)."""
    touched: dict[int, list[int]] = {}  # tensor id -> positions of the instructions touching it
    for pos, ins in enumerate(instrs):
        for a, _ in ins.accesses():
            users = touched.setdefault(a.tensor.id, [])
            if not users or users[-1] != pos:
                users.append(pos)
    retarget: dict[int, Access] = {}  # producer position -> the destination it writes instead
    dropped: set[int] = set()
    for pos, ins in enumerate(instrs):
        if ins.opcode is not Opcode.TENSOR_COPY or ins.mask is not None:
            continue
        src = ins.srcs.get("src")
        users = touched.get(src.tensor.id, ()) if src is not None else ()
        if len(users) != 2 or users[1] != pos or users[0] in retarget:
            continue
        producer = instrs[users[0]]
        if _foldable(producer, src, ins.out):
            retarget[users[0]] = ins.out
            dropped.add(pos)
    if not dropped:
        return instrs
    out = []
    for pos, ins in enumerate(instrs):
        if pos in dropped:
            continue
        dst = retarget.get(pos)
        if dst is not None:
            ins = Instruction(ins.id, ins.opcode, ins.engine, {**ins.dsts, "out": dst}, ins.srcs,
                              ins.attrs, ins.loc, ins.mask, ins.instance, ins.loops)
        out.append(ins)
    return out


def _foldable(producer: Instruction, src: Access, dst: Access) -> bool:
    """Whether ``producer`` can write ``dst`` in place of ``src``, which it writes whole."""
    if producer.engine not in _PRODUCERS or producer.mask is not None:  # (no DMA, no TensorE)
        return False
    out = producer.dsts.get("out")
    if out is None or not same_region(out, src) or src.size != src.tensor.size:
        return False
    if sum(a.tensor.id == src.tensor.id for a, _ in producer.accesses()) != 1:
        return False  # it also reads the temporary, or writes it through another role
    if dst.tensor.space is MemSpace.HBM:
        return False
    if dst.tensor.space is MemSpace.PSUM and producer.engine is Engine.GPSIMD:
        return False
    return (dst.size == src.size and dst.row_lo == src.row_lo and dst.row_hi == src.row_hi)


def same_region(a: Access, b: Access) -> bool:
    """Whether ``a`` and ``b`` are the same elements of the same tensor, seen as one dtype."""
    return (a.tensor.id == b.tensor.id and a.offset == b.offset and a.pattern == b.pattern
            and a.view_dtype == b.view_dtype)
