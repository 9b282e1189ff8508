"""The fast path of affine indexing: ``t[k, i.p, j * 128 + i.x]`` with ``nl.arange`` /
``nl.mgrid`` expressions and ints.

Kernels written in the style of AWS's tutorials index every tile with ``nl.mgrid`` expressions
inside their loops, and each iteration builds new expressions (and often new tiles). The
geometry of such a view depends only on the indexed dims (their strides, offset and partition
dim), the memory, the parent's base and coefficients and the key's values (ints and the
expressions' constants, coefficients and sizes): :func:`affine_view` remembers it by those
values, with what the view's use as an operand would otherwise compute again each time:
whether it lies inside its tensor, whether it passes the operand layout check, and its access
pattern. A whole view also keeps the views it hands out, by the key's values, as basic indexing
does (``acc[k, i.p, i.x]`` read by every iteration of an inner loop is one view). Anything else
(numpy integers, slices mixed in, masks, tiles as indices) returns None and goes the general way
(``NkiTensor._index_affine``, which also words every error). Only geometries that the general
path computed without an error are remembered.
"""

from __future__ import annotations

from typing import Any

from ..program.ir import Access
from .basic_index import VIEW_CACHE_SIZE
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
    views = view._views  # a whole view caches the views it hands out (tensor.py)
    if views is not None:
        vk = (_AFFINE_KEY, *values)
        cached = views.get(vk)
        if cached is not None:
            return cached
    decl, frame = view.decl, view.frame
    # what the view's operand checks and access pattern depend on besides the key: the dims
    # indexed, their strides, offset and partition dim (a reshape's or a dtype view's frame,
    # else the declared tensor's), and the memory
    layout = ((decl.shape, decl.strides, 0, decl.partition_axis) if frame is None else frame)
    ck = (layout, view.space, view.base, view.coefs, tuple(values))
    geometry = memo.get(ck) if memo is not None else None
    if geometry is None:
        general = view._index_affine(key)  # raises the general path's errors
        inside = general.out_of_bounds() is None
        # a view inside its tensor and laid out as an operand needs no checks at its use
        # (operands.checked_access): the same geometry passes them every time
        checked = inside and general.tile_error() is None
        acc = general.access() if inside else None
        geometry = (general.shape, general.base, general.coefs, inside, checked,
                    acc.offset if acc is not None else 0, acc.pattern if acc is not None else None)
        if memo is not None:
            remember(memo, ck, geometry)
    shape, base, coefs, inside, checked, offset, pattern = geometry
    out = type(view)(decl, shape, view.dtype, base, coefs, view.space, view.lease,
                     inside=inside, frame=frame)
    if pattern is not None:
        out._access = Access(decl, offset, pattern, out._as_dtype(decl))
        out._checked = checked
    if views is not None:
        if len(views) >= VIEW_CACHE_SIZE:
            del views[next(iter(views))]
        views[vk] = out
    return out


#: Marks the affine keys among the keys of a view's cache (basic_index.view_key makes the others).
_AFFINE_KEY = object()
