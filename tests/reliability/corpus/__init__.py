"""The bad-input corpus of issue 19: small misuses of our own, as data.

* :mod:`.bad_kernels`: kernels that each break one rule of docs/frontend.md at the line marked
  ``# BAD <case id>``; :data:`.cases.KERNEL_CASES` says what each must raise (or warn).
* :data:`.cases.CLI_CASES`: ``neuroncore-sim`` command lines (every option of profile, run and
  sweep) with the exit status and the one line of stderr they must give.
* :data:`.cases.CONFIG_CASES`: a bad value of every ``NeuronCoreConfig`` field, given in a TOML
  file and as a sweep ``config.<field>`` parameter.

``tests/reliability/test_bad_input_corpus.py`` runs them all.
"""
