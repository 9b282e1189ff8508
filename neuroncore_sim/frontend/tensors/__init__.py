"""Tensors and tiles as kernels see them (``nki.tensor``): views of declared tensors.

- :mod:`.tensor`: ``NkiTensor``, a view (shape, dtype, affine map onto its declared tensor) and
  its subscripts;
- :mod:`.tensor_surface`: its documented methods (``reshape``, ``view``, ``astype``,
  ``expand_dims``, ``broadcast_to``, ...); :mod:`.dtype_view`: ``view(dtype)`` of another
  element size;
- :mod:`.tensor_operators`: Python operators on tiles (forwarded to ``nl``);
- :mod:`.buffers`: ``nl.sbuf``, ``nl.psum`` and the HBM buffers a tensor lives in.

These modules import :mod:`..index` and the tracer below them; the one import upward is
tensor.py's of the ``nl`` facade (the edge ``tests/test_layering.py`` allows).
"""
