"""The instruction set the recorded program uses: :class:`Opcode` (the ``nki.isa`` names) and
:data:`OPCODE_DOC`, the roles and attrs of each opcode (the contract between the front end, the
functional executor and the timing model). ``ir.py`` re-exports both.
"""

from __future__ import annotations

import enum


class Opcode(str, enum.Enum):
    """One opcode per ``nki.isa`` instruction; the value is the nisa function name."""

    NC_MATMUL = "nc_matmul"
    NC_TRANSPOSE = "nc_transpose"
    ACTIVATION = "activation"
    ACTIVATION_REDUCE = "activation_reduce"
    TENSOR_TENSOR = "tensor_tensor"
    TENSOR_SCALAR = "tensor_scalar"
    SCALAR_TENSOR_TENSOR = "scalar_tensor_tensor"
    TENSOR_SCALAR_REDUCE = "tensor_scalar_reduce"
    TENSOR_REDUCE = "tensor_reduce"
    TENSOR_PARTITION_REDUCE = "tensor_partition_reduce"
    TENSOR_TENSOR_SCAN = "tensor_tensor_scan"
    TENSOR_COPY = "tensor_copy"
    MEMSET = "memset"
    IOTA = "iota"
    AFFINE_SELECT = "affine_select"
    RECIPROCAL = "reciprocal"
    BN_STATS = "bn_stats"
    BN_AGGR = "bn_aggr"
    DMA_COPY = "dma_copy"
    DMA_TRANSPOSE = "dma_transpose"
    # nki.language-level work with no nki.isa instruction of its own on NeuronCore-v2 (the
    # lowering is a documented assumption, docs/frontend.md) and nisa.dropout:
    DROPOUT = "dropout"
    RAND = "rand"
    RANDOM_SEED = "random_seed"
    GATHER_FLATTENED = "gather_flattened"
    TENSOR_COPY_DYNAMIC_SRC = "tensor_copy_dynamic_src"
    TENSOR_COPY_DYNAMIC_DST = "tensor_copy_dynamic_dst"
    TENSOR_COPY_PREDICATED = "tensor_copy_predicated"
    SELECT_REDUCE = "select_reduce"
    LOCAL_GATHER = "local_gather"
    MAX8 = "max8"
    NC_FIND_INDEX8 = "nc_find_index8"
    NC_MATCH_REPLACE8 = "nc_match_replace8"
    NC_STREAM_SHUFFLE = "nc_stream_shuffle"
    SEQUENCE_BOUNDS = "sequence_bounds"


#: The opcodes that are DMA transfers (run by the DMA queues and engines, not a compute engine).
DMA_OPCODES = frozenset({Opcode.DMA_COPY, Opcode.DMA_TRANSPOSE})

#: Attr of an instruction whose engine the kernel did not name (an ``nl`` call, or a ``nisa`` call
#: without ``engine=``): the front end records its default engine, and the compile stage may move
#: it (``compiler/engine_choice.py``), as neuronx-cc picks engines "based on engine workload".
ENGINE_PICKED = "engine_picked"

#: Roles and attrs of each opcode (the contract between front end, executor and timing model).
#: Every output is computed in float32 (integer ops in int64 where noted) and cast to the dtype
#: of the destination tensor. ``mask`` (Instruction.mask) limits which output elements are
#: written; all shapes are the access shapes.
OPCODE_DOC: dict[Opcode, str] = {
    Opcode.NC_MATMUL: "srcs stationary[K,M], moving[K,N]; dsts out[M,N] (PSUM, fp32). "
    "attrs accumulate: bool (add into out instead of overwriting), is_stationary_onezero, "
    "is_moving_onezero: bool. out = stationary.T @ moving in fp32.",
    Opcode.NC_TRANSPOSE: "srcs data[P,F]; dsts out[F,P]. Engine TENSOR (to PSUM) or VECTOR "
    "(<= 32x32). Free axes of data are flattened first.",
    Opcode.ACTIVATION: "srcs data, optional bias[P,1], optional scale[P,1]; dsts out, optional "
    "reduce_res[P,1]. attrs op (activation name), scale: float (used when no scale tile), "
    "reduce_op (None or 'add'), reduce_cmd ('idle'|'reset'|'reduce'|'reset_reduce'). "
    "y = op(data*scale + bias); out = y; reduce_res = sum of y over the free axes.",
    Opcode.ACTIVATION_REDUCE: "as ACTIVATION with reduce_res required and reduce_op 'add'.",
    Opcode.TENSOR_TENSOR: "srcs data1, data2 (same shape); dsts out. attrs op.",
    Opcode.TENSOR_SCALAR: "srcs data, optional operand0[P,1], optional operand1[P,1]; dsts out. "
    "attrs op0, operand0 (float, when no tile), reverse0, op1 (or None), operand1, reverse1. "
    "out = (data op0 operand0) op1 operand1; reverseN swaps the operands of opN.",
    Opcode.SCALAR_TENSOR_TENSOR: "srcs data, optional operand0[P,1], operand1 (shape of data); "
    "dsts out. attrs op0, operand0 (float when no tile), reverse0, op1, reverse1. "
    "out = (data op0 operand0) op1 operand1.",
    Opcode.TENSOR_SCALAR_REDUCE: "srcs data, optional operand0[P,1]; dsts out, reduce_res[P,1]. "
    "attrs op0, operand0, reverse0, reduce_op. out = data op0 operand0; reduce_res = "
    "reduce_op over the free axes of out.",
    Opcode.TENSOR_REDUCE: "srcs data; dsts out. attrs op, axes (tuple of data axes >= 1), "
    "negate: bool, keepdims: bool.",
    Opcode.TENSOR_PARTITION_REDUCE: "srcs data[P,F]; dsts out[1,F]. attrs op. Reduce across "
    "partitions (GpSimd).",
    Opcode.TENSOR_TENSOR_SCAN: "srcs data0, data1, optional initial[P,1]; dsts out. attrs op0, "
    "op1, initial (float when no tile), reverse0, reverse1. "
    "out[:,i] = (data0[:,i] op0 out[:,i-1]) op1 data1[:,i], out[:,-1] = initial.",
    Opcode.TENSOR_COPY: "srcs src; dsts out (same shape). Bit-exact when dtypes match, except "
    "on SCALAR which casts through fp32.",
    Opcode.MEMSET: "dsts out. attrs value: float|int.",
    Opcode.IOTA: "dsts out. attrs expr: Affine over the out axes; out[i] = expr(i) in int32, "
    "cast to out's dtype.",
    Opcode.AFFINE_SELECT: "srcs on_true; dsts out. attrs pred: Predicate over the out axes, "
    "on_false_value: float. out = pred ? on_true : on_false_value.",
    Opcode.RECIPROCAL: "srcs data; dsts out. out = 1 / data.",
    Opcode.BN_STATS: "srcs data[P,N]; dsts out[P,6]: per even/odd element halves: "
    "count, mean, variance*count.",
    Opcode.BN_AGGR: "srcs data[P,6k]; dsts out[P,2]: mean and variance aggregated from "
    "bn_stats outputs.",
    Opcode.DMA_COPY: "srcs src; dsts out (same number of elements; shapes may differ only by "
    "dims of size 1). attrs dst_rmw_op: None or 'add'. Engine DMA. Casts when dtypes differ. "
    "Indirect (attrs indirect 'src' or 'dst', oob_mode 'error'|'skip'): srcs index[P,1] (row "
    "numbers); 'src': src is the whole table region [R,F...], out[p] = src[index[p]]; 'dst': "
    "out is the whole table region, out[index[p]] = src[p] (dst_rmw_op 'add': adds, repeated "
    "rows add up); optional srcs prior (the region's current values, kept where not written).",
    Opcode.DMA_TRANSPOSE: "srcs src[A,B]; dsts out[B,A]. Engine DMA; transposes while moving.",
    Opcode.DROPOUT: "srcs data, seed[1,1] (the generator state), optional prob[P,1]; dsts out. "
    "attrs prob (float, when no tile), counter: int. out = data where u >= prob else 0, u = "
    "uniform [0, 1) numbers of generator (seed, counter).",
    Opcode.RAND: "srcs seed[1,1]; dsts out. attrs counter: int. out = uniform [0, 1) numbers "
    "of generator (seed, counter).",
    Opcode.RANDOM_SEED: "srcs optional seed tile[1,1]; dsts out[1,1] (the generator state). "
    "attrs seed (int, when no tile). out = seed as uint32.",
    Opcode.GATHER_FLATTENED: "srcs data[P,...], indices[P,...] (uint32); dsts out (shape of "
    "indices). out[p, i] = data[p].flat[indices[p].flat[i]]; out-of-range indices give NaN "
    "(0 for integers).",
    Opcode.TENSOR_COPY_DYNAMIC_SRC: "srcs src[P,K,F...] (every element the runtime offset can "
    "reach: axis 1 steps the offset), offset[1,1] (int, SBUF); dsts out[P,F...]. attrs "
    "offset_lo: the offset value of src's axis-1 index 0. out = src[:, offset - offset_lo], "
    "copied as TENSOR_COPY.",
    Opcode.TENSOR_COPY_DYNAMIC_DST: "srcs src[P,F...], offset[1,1], old[P,K,F...] (= out); dsts "
    "out[P,K,F...]. attrs offset_lo. out = old with out[:, offset - offset_lo] = src.",
    Opcode.TENSOR_COPY_PREDICATED: "srcs predicate (int), optional src (shape of out), old "
    "(= out); dsts out. attrs src_value (float when no src tile), reverse_pred. "
    "out = (predicate != 0) != reverse_pred ? src : old.",
    Opcode.SELECT_REDUCE: "srcs predicate (int), on_true, optional on_false[P,1]; dsts out, "
    "optional reduce_res[P,1]. attrs on_false_value (float when no tile), reverse_pred, "
    "reduce_op ('maximum'), reduce_cmd. out = pred ? on_true : on_false; the row max feeds the "
    "VectorE accumulator registers per reduce_cmd; reduce_res reads them.",
    Opcode.LOCAL_GATHER: "srcs src[P,...], index[P,...] (uint16); dsts out[P,V*E elements]. "
    "attrs num_elem_per_idx E, num_valid_indices V. Per group of 16 partitions g: idx = "
    "index[g].flatten(order='F')[:V]; out[p, v, e] = src[p].flat[idx[v] + e].",
    Opcode.MAX8: "srcs src[P,N]; dsts out[P,8]: the 8 largest values of each partition (fp32 "
    "compare), descending.",
    Opcode.NC_FIND_INDEX8: "srcs data[P,N], vals[P,8]; dsts out[P,8] (uint): index of the "
    "first occurrence of each val in data's partition (fp32 compare).",
    Opcode.NC_MATCH_REPLACE8: "srcs data[P,N], vals[P,8]; dsts out (shape of data), optional "
    "dst_idx[P,8]. attrs imm: float. For each val in order, its first occurrence still in the "
    "row is replaced by imm; dst_idx gets the positions.",
    Opcode.NC_STREAM_SHUFFLE: "srcs src[Ps,N], old[Pd,N] (= out); dsts out[Pd,N]. attrs "
    "shuffle_mask: 32 ints. out[32q+i] = src[32q+mask[i]], or old[32q+i] where mask[i] = 255.",
    Opcode.SEQUENCE_BOUNDS: "srcs segment_ids[1,N]; dsts out[1,2,N]: start and end (exclusive) "
    "of the run of equal ids holding each element; id 0 (padding) gives start N, end -1.",
}
