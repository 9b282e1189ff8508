"""The validation report's parts (used by ``scripts/validate.py``; scripts, not tests).

* :mod:`.stats`: pure statistics (errors, Spearman, step signs, busy and HBM agreement);
* :mod:`.cache`: the results cache and its key (case, kernel text, config, package source);
* :mod:`.runner`: every case in a fresh worker process, up to ``--jobs`` at once;
* :mod:`.aws`, :mod:`.autocomp`, :mod:`.nkibench`: the three published sets;
* :mod:`.fit`: global parameters fitted on chosen sets, and leave-one-set-out errors;
* :mod:`.report`: ``reports/validation.md``.
"""
