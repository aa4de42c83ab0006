r"""
Orthogonality of the generated Cayley kernel in float32 and float64
===================================================================

:func:`geoattn.kernels.cayley` is generated from the SymPy expression that the
ledger proves orthogonal (``cayley.orthogonal``). In floating point the
residual :math:`\|\Lambda^T\Lambda - I\|_F` is a rounding error that grows
with the size :math:`T` and the conditioning of :math:`I + C`; the tests bound it by
:math:`k\,T\,\varepsilon\,\|\Lambda\|^2`. This example plots it against that bound.
"""

import matplotlib.pyplot as plt
import torch

from geoattn import kernels as K
from geoattn.testing import orthogonality_error

torch.manual_seed(0)
sizes = [2, 4, 8, 16, 32, 64]
fig, ax = plt.subplots(figsize=(6, 3.4))
for dtype, marker in ((torch.float32, "o"), (torch.float64, "s")):
    worst = []
    for T in sizes:
        C = torch.randn(512, T, T, dtype=dtype)
        C = C - C.mT
        worst.append(float(orthogonality_error(K.cayley(C)).max()))
    eps = torch.finfo(dtype).eps
    ax.loglog(sizes, worst, marker=marker, label=f"{str(dtype)[6:]}: max residual")
    ax.loglog(sizes, [32 * T * eps for T in sizes], ls=":", label=f"{str(dtype)[6:]}: 32 T eps")
    print(dtype, ["%.1e" % w for w in worst])
ax.set_xlabel("T")
ax.set_ylabel("|Λᵀ Λ − I|_F")
ax.legend(fontsize=8)
fig.tight_layout()
