r"""
Measuring what a layer preserves
================================

:class:`geoattn.nn.VolumePreservingAttention` with a skew weighting is
volume-preserving as a map of the whole sequence; with the arbitrary weighting
it is not (ledger ``vp.map_volume_preserving.arbitrary``). Both have an
orthogonal attention matrix at every input. This example measures the three
quantities with :mod:`geoattn.testing` on random inputs.
"""

import matplotlib.pyplot as plt
import torch

from geoattn.nn import VolumePreservingAttention
from geoattn.testing import assert_volume_preserving, jacobian_determinant, orthogonality_error

torch.manual_seed(0)
x = torch.randn(200, 5, 3)  # 200 sequences of T = 5 states in R^3

skew = VolumePreservingAttention(3, skew_sym=True)
arbitrary = VolumePreservingAttention(3, skew_sym=False)

det_skew = jacobian_determinant(skew, x)
det_arbitrary = jacobian_determinant(arbitrary, x)
print(f"skew weighting:      max |det J - 1| = {float((det_skew - 1).abs().max()):.2e}")
print(f"arbitrary weighting: max |det J - 1| = {float((det_arbitrary - 1).abs().max()):.2e}")
assert_volume_preserving(skew, x)  # passes: the tolerance is k * N * eps * cond(J)

# %%
# The attention matrices themselves are orthogonal in both cases (float32 rounding):
for name, layer in (("skew", skew), ("arbitrary", arbitrary)):
    err = orthogonality_error(layer.attention_matrix(x))
    print(f"{name:9s}: max |Lambda^T Lambda - I| = {float(err.max()):.2e}")

# %%
# The determinants of the arbitrary-weighting map spread around one:
fig, ax = plt.subplots(figsize=(6, 3))
ax.hist((det_skew - 1).numpy(), bins=40, alpha=0.7, label="skew weighting")
ax.hist((det_arbitrary - 1).clamp(-1, 1).numpy(), bins=40, alpha=0.7, label="arbitrary weighting")
ax.set_xlabel("det J - 1")
ax.set_ylabel("samples")
ax.legend()
fig.tight_layout()
