"""Index expressions, masks and the views they select: the bottom of the front end.

- :mod:`.index_base`, :mod:`.index_expr`: ``nl.arange`` / ``nl.mgrid`` expressions, their
  comparisons (masks) and exact ``//`` / ``%``;
- :mod:`.indexing`: ``nl.arange``, ``nl.mgrid``, ``nl.ds`` and what a subscript may hold;
- :mod:`.basic_index`, :mod:`.affine_index`, :mod:`.view_cache`: the geometry of a view
  (ints and slices; affine index expressions) and the launch's memo of them;
- :mod:`.mask_bool`: ``and`` / ``or`` / ``not`` of masks (read from the kernel's bytecode);
- :mod:`.mask_view`: a mask over a shape (``mask_box``) and ``tile[mask]``.

These modules import only each other and the tracer's own bottom modules (``tracer``,
``once_traced``); the tensors of :mod:`..tensors` and everything above build on them
(``tests/test_layering.py``).
"""
