"""Logistic loss and gradient from the products ``X @ W`` and ``X.T @ R`` alone.

The objective is scikit-learn's (``LogisticRegression`` with the lbfgs solver)::

    sum_i w_i * loss(y_i, X_i @ W + b) / sum_i w_i  +  l2 / 2 * ||W||^2

with the half binomial loss (two classes, one column of ``W``) or the half multinomial loss
(``K >= 3`` classes, one column per class). The intercept ``b`` is not penalized. As in
scikit-learn's ``LinearModelLoss``, the work per row (loss and gradient of each raw
prediction) runs in scikit-learn's compiled loss classes, in one fused, multi-threaded pass.
Since ``X`` is reached only through a :class:`~sklearn_ilargi.utils.TrainingMatrix`, the same
loss serves the factorized path and the materialized one.
"""

import numpy as np

from ..utils._sklearn_compat import HalfBinomialLoss, HalfMultinomialLoss
from ._base import top_eigenvalue


class LogisticLoss:
    """Loss and gradient of L2-penalized logistic regression over ``matrix``.

    Parameters
    ----------
    matrix : TrainingMatrix
        ``X`` of shape (n_samples, n_features).
    y : ndarray of int of shape (n_samples,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
        2 for the binomial loss, more for the multinomial one.
    sample_weight : ndarray of shape (n_samples,)
    fit_intercept : bool
    l2_reg_strength : float
    n_threads : int, default=1
        OpenMP threads of the pointwise loss and gradient.

    Notes
    -----
    The coefficients are one flat vector, the ravel of an array of shape
    ``(n_features + fit_intercept, n_outputs)`` whose last row is the intercept;
    ``n_outputs`` is 1 for two classes and ``n_classes`` beyond. This is the memory order of
    scikit-learn's coefficients (``(n_classes, n_dof)`` raveled in Fortran order), so that
    L-BFGS sees the same problem.

    The pointwise losses are weighted by ``sample_weight / sum(sample_weight)``: they then
    sum to the objective's average, and the gradient needs no extra pass over the rows.
    """

    def __init__(self, matrix, y, n_classes, sample_weight, fit_intercept, l2_reg_strength,
                 n_threads=1):
        self.matrix = matrix
        self.n_features = matrix.shape[1]
        self.n_outputs = 1 if n_classes == 2 else n_classes
        self.binary = n_classes == 2
        self.base_loss = (HalfBinomialLoss() if self.binary
                          else HalfMultinomialLoss(n_classes=n_classes))
        self.fit_intercept = fit_intercept
        self.l2_reg_strength = l2_reg_strength
        self.n_threads = n_threads
        self.sample_weight = sample_weight
        self.weight_sum = float(sample_weight.sum())
        self.target = np.ascontiguousarray(y, dtype=np.float64)
        self._average_weight = np.ascontiguousarray(sample_weight / self.weight_sum,
                                                    dtype=np.float64)
        # Reused by every evaluation: a fit evaluates the loss many times over n_samples rows.
        self._loss_out = np.empty(len(y))
        self._gradient_out = np.empty((len(y), self.n_outputs))

    @property
    def n_parameters(self):
        return (self.n_features + int(self.fit_intercept)) * self.n_outputs

    def unpack(self, flat):
        """(coef of shape (n_features, n_outputs), intercept of shape (n_outputs,))."""
        full = flat.reshape(self.n_features + int(self.fit_intercept), self.n_outputs)
        intercept = full[-1] if self.fit_intercept else np.zeros(self.n_outputs)
        return full[: self.n_features], intercept

    def raw_prediction(self, flat):
        """``X @ coef + intercept``, of shape (n_samples, n_outputs), as float64."""
        coef, intercept = self.unpack(flat)
        raw = np.asarray(self.matrix.matmul(coef), dtype=np.float64)
        if self.fit_intercept:
            raw += intercept
        return raw

    def loss_gradient(self, flat):
        """(objective, gradient as a flat vector) at ``flat``."""
        coef, _ = self.unpack(flat)
        pointwise_loss, pointwise_gradient = self.base_loss.loss_gradient(
            y_true=self.target, raw_prediction=self.raw_prediction(flat),
            sample_weight=self._average_weight, loss_out=self._loss_out,
            gradient_out=self._gradient_out, n_threads=self.n_threads,
        )
        loss = float(pointwise_loss.sum())
        loss += 0.5 * self.l2_reg_strength * float(np.sum(coef * coef))
        return loss, self._coef_gradient(coef, pointwise_gradient)

    def gradient(self, flat):
        """The objective's gradient at ``flat``, as a flat vector."""
        coef, _ = self.unpack(flat)
        pointwise_gradient = self.base_loss.gradient(
            y_true=self.target, raw_prediction=self.raw_prediction(flat),
            sample_weight=self._average_weight, gradient_out=self._gradient_out,
            n_threads=self.n_threads,
        )
        return self._coef_gradient(coef, pointwise_gradient)

    def _coef_gradient(self, coef, pointwise_gradient):
        """``X.T @ g + l2 coef``, with the intercept's ``sum(g)`` below, raveled."""
        pointwise_gradient = pointwise_gradient.reshape(-1, self.n_outputs)
        grad_coef = self.matrix.rmatmul(pointwise_gradient) + self.l2_reg_strength * coef
        if not self.fit_intercept:
            return grad_coef.ravel()
        return np.vstack([grad_coef, pointwise_gradient.sum(axis=0)[None, :]]).ravel()

    def curvature(self):
        """An upper bound of the objective's curvature: the safe step of gradient descent is
        its inverse. The logistic Hessian is at most 1/4 (binomial) or 1/2 (multinomial) times
        the weighted gram of ``[X, 1]``, whose largest eigenvalue is computed exactly (see
        :func:`~sklearn_ilargi.linear_model._base.top_eigenvalue`)."""
        factor = 0.25 if self.binary else 0.5
        top = top_eigenvalue(self.matrix, self.sample_weight,
                             extra_column=self.fit_intercept)
        return factor * top / self.weight_sum + self.l2_reg_strength
