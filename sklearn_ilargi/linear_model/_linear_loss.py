"""Logistic loss and gradient from the products ``X @ W`` and ``X.T @ R`` alone.

The objective is scikit-learn's (``LogisticRegression`` with the lbfgs solver)::

    sum_i w_i * loss(y_i, X_i @ W + b) / sum_i w_i  +  l2 / 2 * ||W||^2

with the half binomial loss (two classes, one column of ``W``) or the half multinomial loss
(``K >= 3`` classes, one column per class). The intercept ``b`` is not penalized. Since ``X``
is reached only through a :class:`~sklearn_ilargi.utils.TrainingMatrix`, the same loss
serves the factorized path and the materialized one.
"""

import numpy as np
from scipy.special import expit, logsumexp

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

    Notes
    -----
    The coefficients are one flat vector, the ravel of an array of shape
    ``(n_features + fit_intercept, n_outputs)`` whose last row is the intercept;
    ``n_outputs`` is 1 for two classes and ``n_classes`` beyond.
    """

    def __init__(self, matrix, y, n_classes, sample_weight, fit_intercept, l2_reg_strength):
        self.matrix = matrix
        self.n_features = matrix.shape[1]
        self.n_outputs = 1 if n_classes == 2 else n_classes
        self.binary = n_classes == 2
        self.fit_intercept = fit_intercept
        self.l2_reg_strength = l2_reg_strength
        self.sample_weight = sample_weight
        self.weight_sum = float(sample_weight.sum())
        if self.binary:
            self.target = y.astype(np.float64)[:, None]
        else:
            self.target = np.zeros((len(y), n_classes))
            self.target[np.arange(len(y)), y] = 1.0

    @property
    def n_parameters(self):
        return (self.n_features + int(self.fit_intercept)) * self.n_outputs

    def unpack(self, flat):
        """(coef of shape (n_features, n_outputs), intercept of shape (n_outputs,))."""
        full = flat.reshape(self.n_features + int(self.fit_intercept), self.n_outputs)
        intercept = full[-1] if self.fit_intercept else np.zeros(self.n_outputs)
        return full[: self.n_features], intercept

    def raw_prediction(self, flat):
        coef, intercept = self.unpack(flat)
        return self.matrix.matmul(coef) + intercept

    def loss_gradient(self, flat):
        """(objective, gradient as a flat vector) at ``flat``."""
        coef, _ = self.unpack(flat)
        raw = self.raw_prediction(flat)
        if self.binary:
            pointwise = np.logaddexp(0.0, raw[:, 0]) - self.target[:, 0] * raw[:, 0]
            residual = expit(raw) - self.target
        else:
            lse = logsumexp(raw, axis=1)
            pointwise = lse - np.einsum("ij,ij->i", raw, self.target)
            residual = np.exp(raw - lse[:, None]) - self.target
        weighted = residual * (self.sample_weight / self.weight_sum)[:, None]
        loss = float(self.sample_weight @ pointwise) / self.weight_sum
        loss += 0.5 * self.l2_reg_strength * float(np.sum(coef * coef))
        grad_coef = self.matrix.rmatmul(weighted) + self.l2_reg_strength * coef
        if self.fit_intercept:
            grad = np.vstack([grad_coef, weighted.sum(axis=0)[None, :]])
        else:
            grad = grad_coef
        return loss, grad.ravel()

    def gradient(self, flat):
        return self.loss_gradient(flat)[1]

    def curvature(self):
        """An upper bound of the objective's curvature: the safe step of gradient descent is
        its inverse. The logistic Hessian is at most 1/4 (binomial) or 1/2 (multinomial) times
        the weighted gram of ``[X, 1]``."""
        factor = 0.25 if self.binary else 0.5
        top = top_eigenvalue(self.matrix, self.sample_weight,
                             extra_column=self.fit_intercept)
        return factor * top / self.weight_sum + self.l2_reg_strength
