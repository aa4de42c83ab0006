"""The one-reduction test of finite samples in the Gram layer's backward (geoattn.kernels._gram._finite_mask)."""

import torch

from geoattn.kernels._gram import _finite_mask


def test_all_finite_gives_none():
    assert _finite_mask(torch.rand(64, dtype=torch.float64)) is None


def test_nan_and_inf_samples_are_masked():
    sq = torch.rand(8, dtype=torch.float64)
    sq[2], sq[5] = float("nan"), float("inf")
    mask = _finite_mask(sq)
    assert mask is not None
    assert mask.tolist() == [i not in (2, 5) for i in range(8)]


def test_overflowing_sum_of_finite_samples_gives_none():
    # the sum overflows, every sample is finite: the exact mask decides, and masks nothing
    sq = torch.full((4,), 1e308, dtype=torch.float64)
    assert not torch.isfinite(sq.sum())
    assert _finite_mask(sq) is None


def test_negative_control_a_filter_reading_one_sample_is_caught():
    # a fault injected into the filter (taking any finite first entry as "all finite") must change the answer
    sq = torch.tensor([1.0, float("nan")], dtype=torch.float64)

    def broken(s):
        return None if bool(torch.isfinite(s[0])) else torch.isfinite(s)

    assert broken(sq) is None
    assert _finite_mask(sq) is not None
