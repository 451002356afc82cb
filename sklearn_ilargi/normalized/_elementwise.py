"""Element-wise arithmetic of a normalized matrix: scaling, shifting and maps with f(0) = 0.

Multiplying or dividing by one factor per column scales each block's columns; adding or
subtracting one value per column becomes the matrix's rank-one shift, so both stay exact over
the sources. A function applied cell by cell runs on the sources alone when it maps 0 to 0
(the cells of missing rows stay 0).
"""

import numbers

import numpy as np

from .. import ops
from ..exceptions import NotFactorizableError
from ._parse import plain_array
from ._transposed import TransposedView


class ElementwiseMixin:
    """The element-wise operators of :class:`~sklearn_ilargi.NormalizedMatrix`.

    The host class holds ``blocks``, ``shape``, ``dtype``, ``shift`` and ``backend``, and
    builds its variants with ``_like`` and ``with_shift``.
    """

    def _column_operand(self, other, op, width=None):
        """``other`` as a finite scalar or one finite value per column (of ``width`` columns,
        all by default), in this matrix's dtype.

        Anything else has no factorized form. A value that is not finite (or overflows this
        dtype) is refused: it would put NaN or infinity into the matrix, whose sources were
        checked finite when it was built, and every estimator relies on that.
        """
        if isinstance(other, (ElementwiseMixin, TransposedView)):
            raise NotFactorizableError(
                f"{op} of two normalized matrices has no factorized form; materialize first."
            )
        width = self.shape[1] if width is None else width
        if not isinstance(other, numbers.Real):
            other = self.backend.asarray(plain_array(other, f"The operand of {op}"))
            if other.dtype.kind not in "biuf" or other.shape not in ((), (width,), (1, width)):
                raise NotFactorizableError(
                    f"{op} with an operand of dtype {other.dtype} and shape {other.shape} has no "
                    "factorized form; only a real scalar or one value per column (shape "
                    f"({width},)) keeps it factorized. Call materialize() first to do it on "
                    "the joined matrix."
                )
        with np.errstate(over="ignore"):
            if np.ndim(other) == 0:
                try:
                    value = self.dtype.type(other.item() if hasattr(other, "item") else other)
                except OverflowError:  # an int beyond any float
                    value = self.dtype.type(np.inf)
                finite = bool(np.isfinite(value))
            else:
                value = other.reshape(-1).astype(self.dtype)
                finite = self.backend.all_finite(value)
        if not finite:
            raise ValueError(
                f"{op} by NaN or infinity (the operand is not finite as {self.dtype}): the "
                "result would not be finite."
            )
        return value

    def _per_column(self, value):
        """A scalar repeated for every column; a vector as it is."""
        if np.ndim(value) == 0:
            return self.backend.xp.full(self.shape[1], value, dtype=self.dtype)
        return value

    def _scaled(self, factors, op):
        """Every column times its factor (``factors``: a scalar or one per column)."""
        be = self.backend
        with np.errstate(over="ignore", invalid="ignore"):
            if np.ndim(factors) == 0:
                blocks = [b.with_(source=b.source * factors) for b in self.blocks]
            else:
                blocks = [
                    b.with_(source=be.scale_columns(b.source, factors[b.columns]))
                    for b in self.blocks
                ]
            shift = None if self.shift is None else self.shift * factors
        if not all(be.all_finite(b.source) for b in blocks):
            raise ValueError(f"{op} overflows: the result would hold infinity.")
        scaled = self._like(blocks, shift=None)
        return scaled if shift is None else scaled._shifted(shift, op)

    def _shifted(self, shift, op):
        """This matrix with ``shift`` in place of its own, if every cell stays finite."""
        if not self.backend.all_finite(shift) or self._overflows_with(shift):
            raise ValueError(f"{op} overflows: the result would hold infinity.")
        return self._like(shift=shift)

    def _overflows_with(self, shift):
        """Whether some unshifted cell plus the ``shift`` of its column overflows.

        Only a shift within rounding of the largest float can push a finite cell past it, so
        only then are the cells read (the extremes of each column).
        """
        largest = np.finfo(self.dtype).max
        half_ulp = (largest - np.nextafter(largest, 0)) / 2  # of the largest float
        if not self.shape[0] or not shift.size or float(abs(shift).max()) < half_ulp:
            return False
        base = self.with_shift(None)
        with np.errstate(over="ignore"):
            return not all(self.backend.all_finite(ops.column_extremes(base, kind) + shift)
                           for kind in ("min", "max"))

    def _offset(self, offset, op):
        """This matrix plus ``offset`` (a scalar or one value per column) in every row: kept
        as a rank-one shift, so exact."""
        offset = self._per_column(offset)
        with np.errstate(over="ignore"):
            shift = offset if self.shift is None else self.shift + offset
        return self._shifted(shift, op)

    def __mul__(self, other):
        return self._scaled(self._column_operand(other, "Multiplication"), "Multiplication")

    __rmul__ = __mul__

    def __truediv__(self, other):
        factors = self._column_operand(other, "Division")
        if bool((factors == 0).any() if np.ndim(factors) else factors == 0):
            raise ZeroDivisionError("Division of a NormalizedMatrix by zero.")
        with np.errstate(over="ignore"):
            return self._scaled(1 / factors, "Division")

    def __rtruediv__(self, other):
        raise NotFactorizableError(
            "c / nm divides by the zero cells of missing rows; it has no factorized form."
        )

    def __neg__(self):
        blocks = [b.with_(source=-b.source) for b in self.blocks]
        return self._like(blocks, shift=None if self.shift is None else -self.shift)

    def __pos__(self):
        return self

    def __add__(self, other):
        """Adding a scalar or a per-column vector keeps a rank-one shift: exact."""
        return self._offset(self._column_operand(other, "Addition"), "Addition")

    __radd__ = __add__

    def __sub__(self, other):
        return self._offset(-self._column_operand(other, "Subtraction"), "Subtraction")

    def __rsub__(self, other):
        return (-self)._offset(self._column_operand(other, "Subtraction"), "Subtraction")

    def __pow__(self, power):
        if not isinstance(power, numbers.Real):
            raise NotFactorizableError("nm ** p is factorized for a scalar p only.")
        if not np.isfinite(power):
            raise ValueError(f"** {power}: the power must be finite.")
        return self.apply(lambda v: v ** power, name=f"** {power}")

    def __abs__(self):
        return self.apply(abs, name="abs")

    def apply(self, func, *, name=None):
        """Apply ``func`` cell by cell; exact for any ``func`` with ``func(0) == 0``.

        The missing cells of left/outer joins are zeros and stay zeros, so ``func`` runs on the
        sources only: on each dense source, and on the stored values of each sparse one. It
        gets them read-only (a copy on the GPU, where arrays cannot be made read-only), so it
        cannot change this matrix, and must return new values of the same shape.

        Parameters
        ----------
        func : callable
            An element-wise function of an array (a numpy ufunc, say) with ``func(0) == 0``:
            it returns an array of real numbers of the shape it was given.
        name : str, default=None
            What to call ``func`` in error messages; its ``__name__`` by default.

        Returns
        -------
        NormalizedMatrix
            The same row and column maps over the mapped sources.

        Raises
        ------
        NotFactorizableError
            When ``func(0) != 0`` or the matrix has a shift (then the missing cells are not
            zero).
        ValueError
            When ``func`` produces NaN or infinity, returns another shape than it was given,
            or writes into the values it was given.
        TypeError
            When ``func`` returns something other than an array of real numbers.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ilargi import NormalizedMatrix
        >>> nm = NormalizedMatrix.from_matrices(
        ...     [np.array([[1.0], [4.0]]), np.array([[9.0]])], [np.arange(2), [0, -1]])
        >>> nm.apply(np.sqrt).materialize()
        array([[1., 3.],
               [2., 0.]])
        """
        label = name or getattr(func, "__name__", repr(func))
        if self.shift is not None:
            raise NotFactorizableError(
                f"Element-wise {label} of a shifted (e.g. centered) matrix has no factorized "
                "form; apply it before shifting, or materialize()."
            )
        be = self.backend
        at_zero = _mapped(func, be.xp.zeros(1, dtype=self.dtype), label, be)
        if be.to_numpy(at_zero)[0] != 0:
            raise NotFactorizableError(
                f"Element-wise {label} maps 0 to {be.to_numpy(at_zero)[0]}; only functions with "
                "f(0) == 0 are exact over the sources (missing cells are 0). Use "
                "materialize() to apply it to the joined matrix."
            )
        blocks = []
        for block in self.blocks:
            source = be.map_values(block.source, lambda v: _mapped(func, v, label, be))
            if not be.all_finite(source):
                raise ValueError(f"apply: element-wise {label} produced NaN or infinity.")
            blocks.append(block.with_(source=source.astype(self.dtype, copy=False)))
        return self._like(blocks)


def _mapped(func, values, label, be):
    """``func(values)``, checked to be an array of real numbers of ``values``' shape.

    ``values`` is read-only (see ``map_values``): writing into it raises numpy's error, which
    is said again here in the terms of :meth:`NormalizedMatrix.apply`.
    """
    with np.errstate(all="ignore"):
        try:
            out = func(values)
        except ValueError as error:
            if "read-only" not in str(error):
                raise
            raise ValueError(
                f"apply: {label} writes into the values it is given; they are the matrix's "
                "own, so it must return new ones instead."
            ) from error
    if not isinstance(out, be.xp.ndarray):
        raise TypeError(
            f"apply: {label} returned a {type(out).__name__}; it must return an array of the "
            f"values it is given (shape {values.shape})."
        )
    if out.shape != values.shape:
        raise ValueError(
            f"apply: {label} returned an array of shape {out.shape} for values of shape "
            f"{values.shape}; it must map each value to one value."
        )
    if out.dtype.kind not in "biuf":
        raise TypeError(f"apply: {label} returned values of dtype {out.dtype}; they must be "
                        "real numbers.")
    return be.xp.asarray(out)
