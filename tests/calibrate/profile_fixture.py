"""A small ``neuron-profile view --output-format json`` output, written for the runner's tests.

Where the field names come from (no file of AWS's is copied; the values are made up, sized
like a [128, 512] fp32 round trip):

* the layout, a ``summary`` list of one dict holding ``total_time`` (seconds) and an
  ``instruction`` list (``timestamp``, ``duration``, ``label``, ``opcode``, ``operands``):
  aws-neuron-sdk, ``tools/neuron-sys-tools/neuron-profile-user-guide.rst``, "Alternative output
  formats" / "JSON" (``neuron-profile view --output-format json --output-file profile.json``);
* the summary's per-engine fields: ``hbm_read_bytes``, ``hbm_write_bytes`` and
  ``{scalar,vector,gpsimd}_engine_active_time_percent`` are the profile summary fields NKIBench
  publishes per kernel (zhang677/AccelOpt, ``profile_results.csv``, the set this project
  validates against); ``tensor_engine_active_time_percent``, ``<engine>_engine_active_time``
  and ``dma_active_time`` (seconds) are the same summary's fields as public profiling scripts
  read them. The ``*_percent`` fields are fractions of ``total_time`` despite their name (in
  those scripts ``tensor_engine_active_time / total_time`` equals
  ``tensor_engine_active_time_percent``).

Both forms of an active time appear below: seconds for TensorE and the DMAs, a fraction for
VectorE and ScalarE, and GpSimd idle (0: the runner leaves zero rows out).
"""

from __future__ import annotations

TOTAL_S = 8.26e-6

SUMMARY = {
    "total_time": TOTAL_S,
    "event_count": 41,
    "tensor_engine_active_time": 0.0,
    "tensor_engine_active_time_percent": 0.0,
    "vector_engine_active_time_percent": 0.25,
    "scalar_engine_active_time_percent": 0.125,
    "gpsimd_engine_active_time_percent": 0.0,
    "dma_active_time": 3.5e-6,
    "dma_active_time_percent": 3.5e-6 / TOTAL_S,
    "hbm_read_bytes": 262144,
    "hbm_write_bytes": 262144,
}

PROFILE = {
    "summary": [SUMMARY],
    "instruction": [
        {"timestamp": 10261883214, "duration": 148, "label": "Vector", "opcode": "TENSOR_COPY",
         "operands": "made-up operands"},
    ],
}

#: What the runner's ``profile_metrics`` makes of :data:`SUMMARY` (metric, value).
EXPECTED = [
    ("profile:total_ns", TOTAL_S * 1e9),
    ("profile:active_ns:vector", 0.25 * TOTAL_S * 1e9),
    ("profile:active_ns:scalar", 0.125 * TOTAL_S * 1e9),
    ("profile:active_ns:dma", 3.5e-6 * 1e9),
    ("profile:hbm_read_bytes", 262144.0),
    ("profile:hbm_write_bytes", 262144.0),
]
