"""The recorded Program: instructions, opcodes, operand regions and their storage layouts.

The one interface between the front end (which records it) and the values and timing stages
(which read it). :mod:`.ir` holds the classes, :mod:`.opcodes` the instruction set,
:mod:`.ops` the operator names instructions carry, :mod:`.layout` the layout arithmetic.
"""
