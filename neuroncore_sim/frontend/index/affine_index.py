"""The fast path of affine indexing: ``t[k, i.p, j * 128 + i.x]`` with ``nl.arange`` /
``nl.mgrid`` expressions and ints.

Kernels written in the style of AWS's tutorials index every tile with ``nl.mgrid`` expressions
inside their loops, and each iteration builds new expressions (and often new tiles); compiler-
generated kernels index with ever new ints (``q[b, h, 128 * k + i.p, i.x]``). What such a view
is, apart from its base, depends only on the indexed dims (their strides, offset and partition
dim), the memory, the parent's coefficients and the key's grids (each expression's coefficients
and sizes; which items are ints): its shape and coefficients, whether it passes the operand
layout check, its access pattern and how far it reaches around its base. :func:`affine_view`
remembers that *form* by those values; the base, the bounds check and the offset follow from
the ints and constants of each key by a few additions. A whole view also keeps the views it
hands out, by the whole key, as basic indexing does (``acc[k, i.p, i.x]`` read by every
iteration of an inner loop is one view). Anything else (numpy integers, slices mixed in, masks,
tiles as indices) returns None and goes the general way (``NkiTensor._index_affine``, which
also words every error). Only forms that the general path computed without an error are
remembered.
"""

from __future__ import annotations

from typing import Any

from ...program.ir import Access, MemSpace
from .basic_index import keep_view
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
    consts: list[int] = []  # per axis: the int, or the expression's constant
    form_key: list[Any] = []  # per axis: None for an int, else the expression's grid
    has_expr = False
    for k in key:
        t = type(k)
        if t is int:
            consts.append(k)
            form_key.append(None)
        elif t is index_expr:
            consts.append(k.const)
            form_key.append((k.coefs, k.sizes))
            has_expr = True
        else:
            return None
    if not has_expr:
        return None
    views = view._views  # a whole view caches the views it hands out (tensor.py)
    if views is not None:
        vk = (_AFFINE_KEY, *consts, *form_key)
        cached = views.get(vk)
        if cached is not None:
            return cached
    decl, frame = view.decl, view.frame
    # what the view's form depends on besides the key's grids: the dims indexed, their
    # strides, offset and partition dim (a reshape's or a dtype view's frame, else the
    # declared tensor's), the memory and the parent's coefficients
    layout = ((decl.shape, decl.strides, 0, decl.partition_axis) if frame is None else frame)
    fk = (layout, view.space, view.coefs, tuple(form_key))
    form = memo.get(fk) if memo is not None else None
    if form is None:
        form = _form(view, key, layout)  # raises the general path's errors
        if memo is not None:
            remember(memo, fk, form)
    shape, coefs, terms, lo_ext, hi_ext, tile_ok, pattern = form
    dims, strides, offset = layout[0], layout[1], layout[2]
    base = []
    for b, d_terms in zip(view.base, terms):
        for a, c in d_terms:
            b += c * consts[a]
        base.append(b)
    inside = True
    if lo_ext is not None:  # (None: an empty view, inside whatever its base)
        for b, lo, hi, n in zip(base, lo_ext, hi_ext, dims):
            if b + lo < 0 or b + hi >= n:
                inside = False
                break
    out = type(view)(decl, shape, view.dtype, tuple(base), coefs, view.space, view.lease,
                     inside=inside, frame=frame)
    if inside:
        # a view inside its tensor and laid out as an operand needs no checks at its use
        # (operands.checked_access): its form passes them every time
        for s, b in zip(strides, base):
            offset += s * b
        out._access = Access(decl, offset, pattern, out._as_dtype(decl))
        out._checked = tile_ok
    if views is not None:
        keep_view(views, vk, out, view.space is MemSpace.HBM)
    return out


def _form(view: Any, key: tuple[Any, ...], layout: tuple[Any, ...]) -> tuple[Any, ...]:
    """What ``view[key]`` is whatever the ints and expression constants of ``key`` and the
    base of ``view`` (the general path, ``NkiTensor._index_affine``, computes one such view):
    its shape and coefficients; per declared dim, the (view axis, coefficient) terms that
    move its base with the key's constants and how far the view reaches below and above its
    base (None for an empty view); whether it passes the operand layout check; and its access
    pattern (offset aside: the strides times the base)."""
    general = view._index_affine(key)
    shape, coefs = general.shape, general.coefs
    terms = tuple(tuple((a, c) for a, c in enumerate(row) if c) for row in view.coefs)
    lo_ext, hi_ext = reach(coefs, shape) or (None, None)
    return (shape, coefs, terms, lo_ext, hi_ext, general.tile_error() is None,
            pattern_of(layout[1], coefs, shape))


def reach(coefs: tuple[tuple[int, ...], ...], shape: tuple[int, ...]
          ) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """How far a view of ``shape`` mapped by ``coefs`` reaches below and above its base along
    each declared dim (``NkiTensor`` maps), or None for an empty view."""
    if 0 in shape:
        return None
    lows, highs = [], []
    for row in coefs:
        lo = hi = 0
        for c, n in zip(row, shape):
            ext = c * (n - 1)
            if ext < 0:
                lo += ext
            else:
                hi += ext
        lows.append(lo)
        highs.append(hi)
    return tuple(lows), tuple(highs)


def pattern_of(strides: tuple[int, ...], coefs: tuple[tuple[int, ...], ...],
               shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """The (stride, size) pairs of a view of ``shape`` mapped by ``coefs`` onto dims of
    ``strides`` (its access pattern, the offset aside)."""
    steps = [0] * len(shape)
    for s, row in zip(strides, coefs):
        for a, c in enumerate(row):
            if c:
                steps[a] += s * c
    return tuple(zip(steps, shape))


#: Marks the affine keys among the keys of a view's cache (basic_index.view_key makes the others).
_AFFINE_KEY = object()
