"""The examples in the public docstrings run and show what they claim."""

import doctest

import pytest

import geoattn._docstrings
import geoattn.errors
import geoattn.experiments.training
import geoattn.kernels._native
import geoattn.kernels._op_cayley
import geoattn.kernels._op_exp
import geoattn.kernels._op_symattn
import geoattn.kernels._op_vp
import geoattn.kernels._op_vp_lower
import geoattn.kernels._native_symattn
import geoattn.kernels._semisep
import geoattn.kernels._symattn_native
import geoattn.kernels.dispatch
import geoattn.kernels._triton
import geoattn.models.feedforward
import geoattn.models.integrators
import geoattn.models.per_step
import geoattn.models.sympnet
import geoattn.nn.attention
import geoattn.nn.linear_symplectic
import geoattn.nn.multihead
import geoattn.nn.orthonormal
import geoattn.nn.symplectic_attention
import geoattn.nn.volume_preserving
import geoattn.symbolic
import geoattn.symbolic.algebra
import geoattn.symbolic.policy
import geoattn.systems.oscillator
import geoattn.systems.rigid_body
import geoattn.systems.windows
import geoattn.testing

MODULES = [
    geoattn._docstrings,
    geoattn.errors,
    geoattn.kernels.dispatch,
    geoattn.kernels._op_vp,
    geoattn.kernels._op_vp_lower,
    geoattn.kernels._semisep,
    geoattn.kernels._op_cayley,
    geoattn.kernels._op_exp,
    geoattn.kernels._op_symattn,
    geoattn.kernels._native,
    geoattn.kernels._native_symattn,
    geoattn.kernels._symattn_native,
    geoattn.kernels._triton,
    geoattn.symbolic,
    geoattn.symbolic.policy,
    geoattn.symbolic.algebra,
    geoattn.testing,
    geoattn.nn.attention,
    geoattn.nn.multihead,
    geoattn.nn.volume_preserving,
    geoattn.nn.orthonormal,
    geoattn.nn.linear_symplectic,
    geoattn.nn.symplectic_attention,
    geoattn.models.feedforward,
    geoattn.models.sympnet,
    geoattn.models.integrators,
    geoattn.models.per_step,
    geoattn.systems.rigid_body,
    geoattn.systems.oscillator,
    geoattn.systems.windows,
]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, verbose=False)
    assert result.attempted > 0 and result.failed == 0
