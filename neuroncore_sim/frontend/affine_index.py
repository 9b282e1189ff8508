"""The fast path of affine indexing: ``t[k, i.p, j * 128 + i.x]`` with ``nl.arange`` /
``nl.mgrid`` expressions and ints.

Kernels written in the style of AWS's tutorials index every tile with ``nl.mgrid`` expressions
inside their loops, and each iteration builds new expressions and new tiles, so nothing is
cached on a view. The geometry of such a view depends only on the indexed dims, the parent's
base and coefficients and the key's values (ints and the expressions' constants, coefficients
and sizes): :func:`affine_view` remembers it, with whether the view lies inside its tensor (the
bounds check every operand gets), by those values. Anything else (numpy integers, slices mixed
in, masks, tiles as indices) returns None and goes the general way
(``NkiTensor._index_affine``, which also words every error). Only geometries that the general
path computed without an error are remembered.
"""

from __future__ import annotations

from typing import Any

from .view_cache import remember

def affine_view(view: Any, key: tuple[Any, ...], index_expr: type,
                memo: dict[tuple[Any, ...], Any] | None) -> Any:
    """``view[key]`` for a key of one plain ``int`` or ``index_expr`` (``IndexExpr``) per axis,
    at least one expression, from the cache or the general path; None for any other key.
    (``view`` is an NkiTensor; both types come from the caller: this module sits below
    tensor.py and indexing.py in the imports.) ``memo`` is the launch's ``ViewCache.affine``
    (None outside a launch: computed every time)."""
    if len(key) != len(view.shape):
        return None
    values: list[Any] = []
    has_expr = False
    for k in key:
        t = type(k)
        if t is int:
            values.append(k)
        elif t is index_expr:
            values.append((k.const, k.coefs, k.sizes))
            has_expr = True
        else:
            return None
    if not has_expr:
        return None
    ck = (view.dims, view.base, view.coefs, tuple(values))
    geometry = memo.get(ck) if memo is not None else None
    if geometry is None:
        general = view._index_affine(key)  # raises the general path's errors
        geometry = (general.shape, general.base, general.coefs,
                    general.out_of_bounds() is None)
        if memo is not None:
            remember(memo, ck, geometry)
    shape, base, coefs, inside = geometry
    return type(view)(view.decl, shape, view.dtype, base, coefs, view.space, view.lease,
                      inside=inside, frame=view.frame)
