"""Calibrate the model against your own hardware: emit a microbenchmark suite, measure it (on a
Trn1 / Inf2 host with the emitted runner, or in the simulator), fit the global parameters.

    neuroncore-sim calibrate emit suite/                      # kernels + run_on_hardware.py
    python suite/run_on_hardware.py --out results.csv          # on the Trn1 / Inf2 host
    neuroncore-sim calibrate fit results.csv --out mine.toml   # then --config mine.toml
    neuroncore-sim calibrate measure suite/ --config mine.toml --out sim.csv   # closed loop

The parameters are declared once in :mod:`.params`; the kernels in :mod:`.suite`. docs/calibrate.md
walks through it.
"""
