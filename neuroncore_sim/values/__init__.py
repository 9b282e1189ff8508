"""Values: what every recorded instruction computes, in numpy, with the hardware's dtypes.

:mod:`.semantics` is the executable specification (one numpy function per opcode),
:mod:`.memory` the storage of HBM tensors and SBUF / PSUM tiles, :mod:`.checks` the value-level
rules, :mod:`.execute` the executor. :mod:`.fast` holds the speed machinery (deferred PSUM
chains, GEMMs in threads, pipelined execution).
"""
