"""The cross-validation's ridge fits from one inverse (compass_hooks.learn.ngrams.SubsetRidge) give what a solve
on each training block gives, for training sets larger and smaller than the rows left out, in any order."""

from __future__ import annotations

import numpy as np
import pytest

from compass_hooks.learn.ngrams import SubsetRidge, fit_ridge_dual


@pytest.mark.parametrize("kept", [1.0, 0.8, 0.55, 0.3])
def test_subset_fits_match_a_direct_solve(kept):
    rng = np.random.default_rng(7)
    Phi = rng.normal(size=(600, 90))
    K, y = Phi @ Phi.T, rng.integers(0, 2, 600)
    ridge = SubsetRidge(K, 1.0)
    train = rng.permutation(600)[: int(600 * kept)]
    want, b_want = fit_ridge_dual(K[np.ix_(train, train)], y[train], 1.0)
    got, b_got = ridge.fit(train, y[train])
    assert b_got == b_want and np.allclose(got, want, rtol=1e-7, atol=1e-9)
    others = np.setdiff1d(np.arange(600), train)
    if len(others):  # the out-of-fold scores, which is what the trainer keeps
        assert np.allclose(K[np.ix_(others, train)] @ got, K[np.ix_(others, train)] @ want, atol=1e-7)


def test_the_gram_matrix_is_left_as_it_was():
    K = np.eye(4) * 2.0
    SubsetRidge(K, 1.0)
    assert np.array_equal(K, np.eye(4) * 2.0)
