"""A simulated launch as the Parquet tables Neuron Explorer writes for a hardware profile.

Analysis code written for hardware profiles (the performance bounds and investigations of
aws-neuron/neuron-agentic-development, ``skills/neuron-nki-profile-querying``) reads tables such
as ``Instruction.parquet`` and ``DmaPacket.parquet`` with pandas or DuckDB. :func:`tables` builds
those tables from a :class:`~neuroncore_sim.result.SimResult` with Neuron Explorer's table and
column names, for the quantities the simulator has; :func:`write_tables` writes them as
``<Table>.parquet`` files (``neuroncore-sim profile/run --out DIR`` does so in each launch's
``parquet/`` folder). docs/reports.md lists every column and how it is derived.

Choices where the reference is silent (documented there too): timestamps are float nanoseconds
from the start of the launch (Neuron Explorer: integer nanoseconds); the ``Summary`` times are
seconds; opcodes other than ``MATMUL`` and ``LDWEIGHTS`` keep their ``nki.isa`` names; one
``DmaPacket`` row per DMA transfer of the model (the share of a DMA instruction one DMA engine
moves), one ``DmaPacketAggregated`` row per DMA instruction.

pandas and pyarrow are imported inside the functions; pyarrow is optional (a clear
:class:`~neuroncore_sim.errors.UnsupportedError` says how to install it).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedError
from ..program.ir import DMA_OPCODES, Instruction, MemSpace, Program
from ..result import SimResult
from ..timing.bounds import instruction_flops
from ..timing.events import (LOAD_STATIONARY, MULTIPLY_MOVING, SPILL_RELOAD, SPILL_SAVE,
                             TENSOR_LS_ROW, Event, is_dma_row)

if TYPE_CHECKING:
    import pandas as pd

#: The tables, in the order they are written.
TABLES = ("Metadata", "Summary", "Instruction", "DmaPacket", "DmaPacketAggregated", "Flow",
          "ActiveTime", "TensorInfo")
#: Neuron Explorer's engine names in ``Instruction.engine``, by event row.
ENGINE_NAMES = {"tensor": "Tensor", TENSOR_LS_ROW: "Tensor", "vector": "Vector",
                "scalar": "Scalar", "gpsimd": "GpSimd", "sync": "Sync"}
#: ``ActiveTime.engine`` names, by event row (TensorE's two stage rows are one engine).
ACTIVE_ENGINES = {"tensor": "tensor", TENSOR_LS_ROW: "tensor", "vector": "vector",
                  "scalar": "scalar", "gpsimd": "gpsimd", "sync": "sync"}
#: ``TensorInfo.type`` by ``TensorDecl.kind`` (HBM tensors only).
TENSOR_TYPES = {"input": "IN", "output": "OUT", "hbm": "INTERNAL"}
#: How ``DmaPacketAggregated.source`` / ``dest`` name the memories: ``[[X]]`` as a source and
#: ``[X]`` as a destination, as Neuron Explorer writes them.
_MEMORY_NAMES = {"input": "INPUT", "output": "OUTPUT", "hbm": "INTERNAL"}
_SECONDS = 1e-9


def tables(res: SimResult) -> dict[str, "pd.DataFrame"]:
    """The launch's profile as Neuron Explorer's tables, by table name (:data:`TABLES`)."""
    import pandas as pd

    summary = res.summary()  # raises the usual error for a launch that was not timed
    assert res.timing is not None  # (summary() has checked)
    program, events = res.program, res.timing.events
    instructions = {ins.id: ins for ins in program.instructions}
    inst_rows, dma_instructions = _instruction_rows(events, instructions)
    agg_rows, flow_rows = _aggregated_rows(dma_instructions, instructions, inst_rows)
    out = {
        "Metadata": [_metadata(res)],
        "Summary": [_summary(res, summary)],
        "Instruction": inst_rows,
        "DmaPacket": [{"id": i, "start_ts": e.start_ns, "end_ts": e.end_ns,
                       "duration_ns": e.duration_ns, "transfer_bytes": e.nbytes,
                       "queue_type": "data", "dma_engine": int(e.engine[3:]),
                       "instruction_id": e.instr_id}
                      for i, e in enumerate(e for e in events if is_dma_row(e.engine))],
        "DmaPacketAggregated": agg_rows,
        "Flow": flow_rows,
        "ActiveTime": _active_rows(events),
        "TensorInfo": _tensor_rows(program, instructions),
    }
    frames = {name: pd.DataFrame(rows, columns=_COLUMNS[name]) for name, rows in out.items()}
    for name, frame in frames.items():  # counts stay integers where some rows have none
        for col in _NULLABLE_INTS.get(name, ()):
            frame[col] = frame[col].astype("Int64")
    return frames


#: Why the tables cannot be written without pyarrow, and how to install it.
MISSING_PYARROW = ("writing the profile as Neuron Explorer's Parquet tables needs the optional "
                   "pyarrow package; install it with: pip install 'neuroncore_sim[parquet]' (or "
                   "pip install pyarrow)")


def available() -> bool:
    """Whether the tables can be written (pandas writes Parquet through pyarrow)."""
    return importlib.util.find_spec("pyarrow") is not None


def write_tables(res: SimResult, folder: str | Path) -> list[Path]:
    """Write :func:`tables` as ``folder/<Table>.parquet``; returns the paths written.

    Raises:
        UnsupportedError: pyarrow (the optional Parquet writer) is not installed.
    """
    if not available():
        raise UnsupportedError(MISSING_PYARROW)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, frame in tables(res).items():
        path = folder / f"{name}.parquet"
        frame.to_parquet(path, engine="pyarrow", index=False)
        written.append(path)
    return written


# --- the tables ----------------------------------------------------------------------------------

_COLUMNS: dict[str, list[str]] = {
    "Metadata": ["dma_ddr_bandwidth", "hbm_ddr_bandwidth", "tensor_engine_num_rows",
                 "tensor_engine_num_cols", "tensor_engine_clock_freq", "kernel_name",
                 "config_name"],
    "Summary": ["total_time", "dma_active_time", "dma_active_time_percent",
                "dma_transfer_count", "dma_transfer_total_bytes",
                "inputs_outputs_weights_size_bytes", "tensor_engine_active_time",
                "tensor_engine_active_time_percent", "vector_engine_active_time",
                "vector_engine_active_time_percent", "scalar_engine_active_time",
                "scalar_engine_active_time_percent", "gpsimd_engine_active_time",
                "gpsimd_engine_active_time_percent", "hardware_flops", "transpose_flops",
                "mfu_estimated_percent", "mbu_estimated_percent", "hbm_read_bytes",
                "hbm_write_bytes"],
    "Instruction": ["id", "bir_id", "engine", "opcode", "tensor_instruction_type", "start_ts",
                    "end_ts", "duration_ns", "adjusted_flops", "hbm_read_bytes",
                    "hbm_write_bytes", "nki_source_location", "bir_debug_info_source_location",
                    "instance"],
    "DmaPacket": ["id", "start_ts", "end_ts", "duration_ns", "transfer_bytes", "queue_type",
                  "dma_engine", "instruction_id"],
    "DmaPacketAggregated": ["id", "start_ts", "end_ts", "duration_ns", "transfer_bytes",
                            "source", "dest", "variable", "read_num_sbuf_partitions",
                            "write_num_sbuf_partitions", "is_transpose_mode"],
    "Flow": ["in_table", "in_id", "out_table", "out_id"],
    "ActiveTime": ["engine", "start_ts", "end_ts", "duration_ns"],
    "TensorInfo": ["variable_name", "type", "size", "load_to_sbuf_dma_count",
                   "load_to_sbuf_total_size_bytes", "load_to_sbuf_avg_size_bytes",
                   "load_to_sbuf_repeat_factor"],
}

_NULLABLE_INTS = {"TensorInfo": ("load_to_sbuf_dma_count", "load_to_sbuf_total_size_bytes"),
                  "DmaPacket": ("instruction_id",)}


def _metadata(res: SimResult) -> dict[str, Any]:
    cfg = res.config
    return {"dma_ddr_bandwidth": cfg.dma_engines * cfg.dma_engine_bytes_per_ns * 1e9,  # B/s
            "hbm_ddr_bandwidth": cfg.hbm_bytes_per_ns * 1e9,  # this core's share, B/s
            "tensor_engine_num_rows": cfg.num_partitions,
            "tensor_engine_num_cols": cfg.gemm_stationary_fmax,
            "tensor_engine_clock_freq": cfg.tensor_clock_hz / 1e9,  # GHz
            "kernel_name": res.program.name, "config_name": cfg.name}


def _summary(res: SimResult, s: dict[str, Any]) -> dict[str, Any]:
    total = s["latency_ns"]
    active = s["engine_active_ns"]

    def pct(ns: float) -> float:
        return 100.0 * ns / total if total > 0 else 0.0

    hbm_read = hbm_write = 0
    for ins in res.program.instructions:
        if ins.opcode in DMA_OPCODES:
            src, dst = ins.srcs["src"], ins.out
            nbytes = max(src.nbytes, dst.nbytes)
            hbm_read += nbytes * (src.space is MemSpace.HBM)
            hbm_write += nbytes * (dst.space is MemSpace.HBM)
    row: dict[str, Any] = {
        "total_time": total * _SECONDS,
        "dma_active_time": active["dma"] * _SECONDS,
        "dma_active_time_percent": pct(active["dma"]),
        "dma_transfer_count": s["dma_transfers"],
        "dma_transfer_total_bytes": s["dma_transfer_total_bytes"],
        "inputs_outputs_weights_size_bytes": s["necessary_bytes"],
        "hardware_flops": s["hardware_flops"], "transpose_flops": s["transpose_flops"],
        "mfu_estimated_percent": s["mfu_percent"],
        "mbu_estimated_percent": s["hbm_bandwidth_percent_of_peak"],
        "hbm_read_bytes": hbm_read, "hbm_write_bytes": hbm_write}
    for engine in ("tensor", "vector", "scalar", "gpsimd"):
        row[f"{engine}_engine_active_time"] = active[engine] * _SECONDS
        row[f"{engine}_engine_active_time_percent"] = pct(active[engine])
    return row


def _instruction_rows(events: tuple[Event, ...], instructions: dict[int, Instruction]
                      ) -> tuple[list[dict[str, Any]], dict[int, list[Event]]]:
    """One row per compute event (an nc_matmul gives an LDWEIGHTS and a MATMUL row sharing
    its ``bir_id``), then one per DMA instruction (from its first transfer's start to its
    last's end); and the DMA transfers by instruction id."""
    rows: list[dict[str, Any]] = []
    dmas: dict[int, list[Event]] = {}
    for e in events:
        if is_dma_row(e.engine):
            dmas.setdefault(e.instr_id, []).append(e)
            continue
        ins = instructions.get(e.instr_id)
        flops, transpose = instruction_flops(ins) if ins is not None else (0, False)
        opcode = ("LDWEIGHTS" if e.opcode == LOAD_STATIONARY else
                  "MATMUL" if e.opcode == MULTIPLY_MOVING or (transpose and e.engine == "tensor")
                  else e.opcode)
        tensor_rows = e.engine in ("tensor", TENSOR_LS_ROW)
        rows.append(_instruction(
            len(rows), e, ENGINE_NAMES.get(e.engine, e.engine), opcode,
            ("TRANSPOSE" if transpose else "REGULAR") if tensor_rows else None,
            e.start_ns, e.end_ns, flops if opcode == "MATMUL" else 0, 0, 0, ins))
    for instr_id, transfers in dmas.items():
        ins = instructions.get(instr_id)
        first = transfers[0]
        nbytes = sum(t.nbytes for t in transfers)
        read = write = 0
        if ins is not None:
            read = nbytes * (ins.srcs["src"].space is MemSpace.HBM)
            write = nbytes * (ins.out.space is MemSpace.HBM)
        elif first.opcode in (SPILL_SAVE, SPILL_RELOAD):  # compiler-added: SBUF <-> HBM
            read, write = (nbytes, 0) if first.opcode == SPILL_RELOAD else (0, nbytes)
        rows.append(_instruction(
            len(rows), first, "DMA", first.opcode, None, min(t.start_ns for t in transfers),
            max(t.end_ns for t in transfers), 0, read, write, ins))
    return rows, dmas


def _instruction(row_id: int, e: Event, engine: str, opcode: str, kind: str | None,
                 start: float, end: float, flops: int, read: int, write: int,
                 ins: Instruction | None) -> dict[str, Any]:
    loc = ins.loc if ins is not None else None
    where = f"{loc.filename}:{loc.lineno}" if loc is not None else (e.source or None)
    return {"id": row_id, "bir_id": e.instr_id, "engine": engine, "opcode": opcode,
            "tensor_instruction_type": kind, "start_ts": start, "end_ts": end,
            "duration_ns": end - start, "adjusted_flops": flops, "hbm_read_bytes": read,
            "hbm_write_bytes": write, "nki_source_location": where,
            "bir_debug_info_source_location": where, "instance": e.instance}


def _aggregated_rows(dmas: dict[int, list[Event]], instructions: dict[int, Instruction],
                     inst_rows: list[dict[str, Any]]
                     ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One DmaPacketAggregated row per DMA instruction, and the Flow edge from its
    Instruction row to it."""
    row_of = {r["bir_id"]: r["id"] for r in inst_rows if r["engine"] == "DMA"}
    agg, flow = [], []
    for instr_id, transfers in dmas.items():
        ins = instructions.get(instr_id)
        start = min(t.start_ns for t in transfers)
        end = max(t.end_ns for t in transfers)
        row: dict[str, Any] = {
            "id": len(agg), "start_ts": start, "end_ts": end, "duration_ns": end - start,
            "transfer_bytes": sum(t.nbytes for t in transfers), "is_transpose_mode": False,
            "source": None, "dest": None, "variable": None, "read_num_sbuf_partitions": 0,
            "write_num_sbuf_partitions": 0}
        if ins is not None:
            src, dst = ins.srcs["src"], ins.out
            hbm = dst if dst.space is MemSpace.HBM and src.space is not MemSpace.HBM else src
            row.update(source=f"[{_memory(src)}]", dest=_memory(dst),
                       variable=hbm.tensor.name,
                       is_transpose_mode=ins.opcode.name == "DMA_TRANSPOSE",
                       read_num_sbuf_partitions=src.partitions if src.space is MemSpace.SBUF
                       else 0,
                       write_num_sbuf_partitions=dst.partitions if dst.space is MemSpace.SBUF
                       else 0)
        elif transfers[0].opcode == SPILL_SAVE:
            row.update(source="[[SB]]", dest="[VIRTUAL]")
        elif transfers[0].opcode == SPILL_RELOAD:
            row.update(source="[[VIRTUAL]]", dest="[SB]")
        agg.append(row)
        flow.append({"in_table": "Instruction", "in_id": row_of[instr_id],
                     "out_table": "DmaPacketAggregated", "out_id": row["id"]})
    return agg, flow


def _memory(access: Any) -> str:
    """``[INPUT]``, ``[OUTPUT]``, ``[INTERNAL]`` (HBM), ``[SB]`` or ``[PSUM]``."""
    if access.space is MemSpace.HBM:
        return f"[{_MEMORY_NAMES.get(access.tensor.kind, 'INTERNAL')}]"
    return "[SB]" if access.space is MemSpace.SBUF else "[PSUM]"


def _active_rows(events: tuple[Event, ...]) -> list[dict[str, Any]]:
    """Per engine, its active intervals merged (overlapping or touching events joined)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        engine = ACTIVE_ENGINES.get(e.engine)
        if engine is not None and e.end_ns > e.start_ns:
            spans.setdefault(engine, []).append((e.start_ns, e.end_ns))
    rows = []
    for engine in sorted(spans, key=list(dict.fromkeys(ACTIVE_ENGINES.values())).index):
        merged: list[list[float]] = []
        for start, end in sorted(spans[engine]):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        rows += [{"engine": engine, "start_ts": s, "end_ts": t, "duration_ns": t - s}
                 for s, t in merged]
    return rows


def _tensor_rows(program: Program, instructions: dict[int, Instruction]
                 ) -> list[dict[str, Any]]:
    """The kernel's HBM tensors (inputs, outputs, private HBM scratch) with their sizes and,
    for those loaded into SBUF, how often and how much."""
    loads: dict[int, list[int]] = {}
    for ins in instructions.values():
        if ins.opcode in DMA_OPCODES and ins.srcs["src"].space is MemSpace.HBM and \
                ins.out.space is MemSpace.SBUF:
            loads.setdefault(ins.srcs["src"].tensor.id, []).append(ins.srcs["src"].nbytes)
    rows = []
    for t in program.tensors:
        if t.space is not MemSpace.HBM or t.kind not in TENSOR_TYPES:
            continue
        size = t.dtype.itemsize
        for n in t.shape:
            size *= n
        got = loads.get(t.id, [])
        rows.append({"variable_name": t.name, "type": TENSOR_TYPES[t.kind], "size": size,
                     "load_to_sbuf_dma_count": len(got) if got else None,
                     "load_to_sbuf_total_size_bytes": sum(got) if got else None,
                     "load_to_sbuf_avg_size_bytes": sum(got) / len(got) if got else None,
                     "load_to_sbuf_repeat_factor": sum(got) / size if got and size else None})
    return rows

