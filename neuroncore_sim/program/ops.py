"""Names of the operators that instructions carry in their ``attrs``.

The front end turns whatever the kernel passed (``np.add``, ``nl.add``, ``nl.exp``) into one of
these names; the functional executor maps names to numpy. Keeping plain names in the Program
makes it printable, comparable and free of callables.

Source: shared/arch.md section 3.4 ([SHARED] ALU operators and activation functions).
"""

from __future__ import annotations

#: Binary ALU operators (tensor_tensor, tensor_scalar, scalar_tensor_tensor, scans).
ARITH_OPS = frozenset({
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod", "fmod",
    "abs_max", "rsqrt",
})
COMPARE_OPS = frozenset({
    "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
})
LOGICAL_OPS = frozenset({"logical_and", "logical_or", "logical_xor"})
#: Bit-vector operators: integer dtypes only, VectorE only, no casting.
BITVEC_OPS = frozenset({
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift",
})
BINARY_OPS = ARITH_OPS | COMPARE_OPS | LOGICAL_OPS | BITVEC_OPS

#: Reduction operators (tensor_reduce, tensor_partition_reduce, reduce_op arguments).
REDUCE_OPS = frozenset({
    "add", "subtract", "multiply", "maximum", "minimum", "bitwise_and", "bitwise_or",
    "bitwise_xor", "logical_and", "logical_or", "logical_xor",
})

#: Activation functions ScalarE evaluates (``nisa.activation`` op), with the documented valid
#: input range where the docs give one (inputs outside it give invalid results on hardware).
ACTIVATIONS: dict[str, tuple[float, float] | None] = {
    "copy": None, "identity": None, "square": None, "sigmoid": None, "relu": None,
    "gelu": None, "gelu_dx": None, "gelu_apprx_tanh": None, "gelu_apprx_sigmoid": None,
    "silu": None, "silu_dx": None, "tanh": None, "softplus": None, "mish": None, "erf": None,
    "erf_dx": None, "exp": None,
    "log": (2.0**-64, 2.0**64),
    "sin": (-3.141592653589793, 3.141592653589793),
    "arctan": (-1.5707963267948966, 1.5707963267948966),
    "sqrt": (2.0**-116, 2.0**118),
    "rsqrt": (2.0**-87, 2.0**97),
    "reciprocal": (2.0**-42, 2.0**42),  # magnitude range
    "sign": None, "abs": None,
    # Not in the documented ScalarE table; nl exposes them and we evaluate them on ScalarE
    # (assumption, docs/model.md).
    "cos": None, "tan": None, "negative": None, "floor": None, "ceil": None, "trunc": None,
}

#: nl / numpy function names that differ from our operator names.
ALIASES = {
    "max": "maximum", "min": "minimum", "sum": "add", "prod": "multiply", "amax": "maximum",
    "amin": "minimum", "true_divide": "divide", "remainder": "mod", "bypass": "copy",
    "absolute": "abs",
}
