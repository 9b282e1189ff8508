"""Speed machinery of the values stage: same results as the spec, computed faster.

Deferred PSUM accumulation chains (:mod:`.psum_chain`), GEMMs in background threads
(:mod:`.gemm_jobs`), untouched HBM copies in SBUF (:mod:`.hbm_origin`) and the values worker
thread (:mod:`.pipeline`).
"""
