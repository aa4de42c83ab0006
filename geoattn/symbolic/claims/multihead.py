"""Multi-head attention, softmax and attention as reweighting (seeds 000, 001, 002)."""

from __future__ import annotations

import sympy as sp
from sympy import IndexedBase, Sum
from sympy.matrices.expressions import Determinant, FunctionMatrix, MatrixSymbol, OneMatrix, ZeroMatrix
from sympy.matrices.expressions.matexpr import MatrixElement

from .. import algebra as alg
from ..claim import Claim, corrected
from ..nodes import Softmax
from ..proof import identity, relation
from ..evidence import Derivation, Level, Step
from ..strategies import MatrixIdentity
from ._common import Policy, ShapePolicy, T, d, grid
from ._entrywise import ENTRIES, matrices_equal
from ._sources import ORIGINS

__all__ = ["CLAIMS", "softmax_cols", "softmax_rows"]

SRC0 = ORIGINS["000"]
SRC1 = ORIGINS["001"]
SRC2 = ORIGINS["002"]


def softmax_cols(m: sp.Matrix) -> sp.Matrix:
    """Column-wise softmax of an explicit matrix (exact)."""
    e = m.applyfunc(sp.exp)
    sums = [sum(e[:, j]) for j in range(e.cols)]
    return sp.Matrix(e.rows, e.cols, lambda i, j: e[i, j] / sums[j])


def softmax_rows(m: sp.Matrix) -> sp.Matrix:
    """Row-wise softmax of an explicit matrix (exact)."""
    return softmax_cols(m.T).T


# ---------------------------------------------------------------------------
# multi-head shapes
# ---------------------------------------------------------------------------


def _projection_factors(corrected: bool):
    def build(s):
        m = s["m"]  # the head dimension N / n_heads
        N = m * s["h"]  # N divisible by n_heads
        p = ("P_i", m, N) if corrected else ("P_i", N, m)
        return [p, ("Z", N, s["T"])]

    return build


def _output_shape_derivation() -> Derivation:
    m = sp.Symbol("m", integer=True, positive=True)  # head dimension N / n_heads
    h = sp.Symbol("h", integer=True, positive=True)  # n_heads
    N = sp.Symbol("N", integer=True, positive=True)
    k = sp.Symbol("k", integer=True, positive=True)
    rows, cols = sp.symbols("r_k c_k", integer=True, positive=True)  # the shape of head k's output
    head = sp.ImmutableMatrix([[rows, cols]])
    stacked = sp.ImmutableMatrix([[Sum(rows, (k, 1, h)), cols]])
    per_head = sp.ImmutableMatrix([[Sum(m, (k, 1, h)), T]])
    summed = sp.ImmutableMatrix([[m * h, T]])
    return Derivation(
        assumptions=[r"N = \mathtt{n\_heads}\cdot m,\ h = \mathtt{n\_heads}",
                     r"\text{head } k:\ V_k\,\mathrm{softmax}(\cdot) \text{ with } V_k = P^V_kZ,\ "
                     r"\text{shape } (r_k, c_k)",
                     r"\text{stacking the heads adds their rows and keeps the columns}"],
        facts={"N = h m": {m * h: N}},
        subject=(head,),
        steps=[
            Step(head, sp.ImmutableMatrix([[m, T]]),
                 r"V_k = P^V_kZ\in\mathbb{R}^{m\times T}, \mathrm{softmax}(\cdot)\in\mathbb{R}^{T\times T}",
                 lemma="ledger:mha.projection_shapes.corrected"),
            Step(stacked, per_head, "step 1 in every head", identity((rows, m), (cols, T), facts=())),
            Step(per_head, summed, r"\sum_{k=1}^{h} m = hm", identity(facts=())),
            Step(summed, sp.ImmutableMatrix([[N, T]]), r"N = \mathtt{n\_heads}\cdot m", identity()),
        ],
        remark=r"\mathrm{MultiHeadAttention}(Z)\in\mathbb{R}^{N\times T}",
        conclusion=sp.Eq(stacked, sp.ImmutableMatrix([[N, T]]), evaluate=False),
    )


def _output_shape_identity() -> MatrixIdentity:
    def residual(size):
        m, h, t = size["m"], size["h"], size["T"]
        blocks = [sp.zeros(m, t) for _ in range(h)]
        stacked = sp.Matrix.vstack(*blocks)
        return sp.Matrix([[stacked.rows - m * h, stacked.cols - t]])

    return MatrixIdentity("shape(stacked heads) - (N, T)", variables=lambda s: {}, residual=residual)


# ---------------------------------------------------------------------------
# softmax
# ---------------------------------------------------------------------------


def _stochastic_derivation() -> Derivation:
    i, j = sp.symbols("i j", integer=True)
    v = IndexedBase("v", real=True)
    denom = Sum(sp.exp(v[j]), (j, 0, T - 1))
    entry = sp.exp(v[i]) / denom
    both = sp.ImmutableMatrix([[Sum(entry, (i, 0, T - 1)), sp.sign(entry, evaluate=False)]])
    pulled = sp.ImmutableMatrix([[Sum(sp.exp(v[i]), (i, 0, T - 1)) / denom, 1]])
    return Derivation(
        assumptions=[r"v\in\mathbb{R}^T", r"[\mathrm{softmax}(v)]_i = e^{v_i}/\sum_j e^{v_j}",
                     r"\mathrm{softmax}_\mathrm{row}(M) = \mathrm{softmax}_\mathrm{col}(M^T)^T\ \text{(definition)}"],
        steps=[
            Step(both, pulled, "the denominator does not depend on i; e^{v_i} > 0 for real v_i, and so is their sum",
                 ENTRIES),
            Step(pulled, sp.ImmutableMatrix([[1, 1]]), "numerator and denominator are the same sum", ENTRIES),
        ],
        remark=r"\sum_i[\mathrm{softmax}(v)]_i = 1,\ [\mathrm{softmax}(v)]_i > 0:\ \text{each column (row) of the "
        r"column (row) softmax is a probability vector}",
        conclusion=sp.Eq(both, sp.ImmutableMatrix([[1, 1]]), evaluate=False),
    )


def _stochastic_identity() -> MatrixIdentity:
    def residual(size, C):
        sc = softmax_cols(C)
        sr = softmax_rows(C)
        col_sums = sp.Matrix([[sp.simplify(sum(sc[:, j]) - 1) for j in range(sc.cols)]])
        row_sums = sp.Matrix([[sp.simplify(sum(sr[i, :]) - 1) for i in range(sr.rows)]])
        negatives = sp.Matrix([[sum(1 for x in list(sc) + list(sr) if not x.is_positive)]])
        return sp.Matrix.hstack(col_sums, row_sums, negatives)

    return MatrixIdentity(
        "[column sums - 1, row sums - 1, #nonpositive entries]",
        variables=lambda s: {"C": alg.general("c", s["T"], s["T"])},
        residual=residual,
    )


def _singular_derivation() -> Derivation:
    i, j, k = sp.symbols("i j k", integer=True, nonnegative=True)
    C = ZeroMatrix(T, T)
    soft0 = FunctionMatrix(T, T, sp.Lambda((i, j), sp.exp(C[i, j]) / Sum(sp.exp(C[k, j]), (k, 0, T - 1))))
    uniform = OneMatrix(T, T) / T
    return Derivation(
        assumptions=[r"T\ge 2", r"C = 0\in\mathbb{R}^{T\times T}",
                     r"[\mathrm{softmax}(C)]_{ij} = e^{C_{ij}}/\sum_k e^{C_{kj}}"],
        steps=[
            Step(Determinant(soft0), Determinant(uniform), r"every entry is e^0/\sum_k e^0 = 1/T",
                 relation(_equal_arguments, "equal matrices (at a generic entry) have equal determinants")),
            Step(Determinant(uniform), 0, "all T >= 2 columns are equal", lemma="determinant_equal_columns"),
        ],
        remark=r"\mathrm{softmax}(C) \text{ can be singular (witness } C = 0)",
        conclusion=sp.Eq(Determinant(soft0), 0, evaluate=False),
    )


def _equal_arguments(lhs, rhs) -> bool:
    """Both sides are determinants of matrices that agree at a generic entry."""
    return isinstance(lhs, Determinant) and isinstance(rhs, Determinant) and matrices_equal(lhs.arg, rhs.arg)


def _singular_identity() -> MatrixIdentity:
    # witness: the determinant of softmax(0) must vanish
    return MatrixIdentity(
        "det softmax(0_T)",
        variables=lambda s: {},
        residual=lambda s: softmax_cols(sp.zeros(s["T"], s["T"])).det(),
    )


# ---------------------------------------------------------------------------
# attention as reweighting
# ---------------------------------------------------------------------------


def _multiplicative_derivation() -> Derivation:
    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    Z = MatrixSymbol("Z", d, T)
    W = MatrixSymbol("W", d, d)
    entry = MatrixElement(Z.T * W * Z, i, j)
    cols = MatrixElement(Z[:, i].T * W * Z[:, j], 0, 0)
    return Derivation(
        assumptions=[r"Z = [z^{(1)}, \ldots, z^{(T)}]\in\mathbb{R}^{d\times T},\ W\in\mathbb{R}^{d\times d}"],
        steps=[Step(entry, cols, r"entries of both products as sums; z^{(i)} = Z_{\bullet i}", ENTRIES)],
        remark=r"[Z^TWZ]_{ij} = (z^{(i)})^TWz^{(j)}",
        conclusion=sp.Eq(entry, cols, evaluate=False),
    )


def _multiplicative_identity() -> MatrixIdentity:
    def residual(size, Z, W):
        t = size["T"]
        entries = sp.Matrix(t, t, lambda i, j: (Z[:, i].T * W * Z[:, j])[0, 0])
        return (Z.T * W * Z - entries).applyfunc(sp.expand)

    return MatrixIdentity(
        "Z^T W Z - [(z^(i))^T W z^(j)]",
        variables=lambda s: {"Z": alg.general("z", s["d"], s["T"]), "W": alg.general("w", s["d"], s["d"])},
        residual=residual,
    )


def _reweighting_identity() -> MatrixIdentity:
    def residual(size, Z, S):
        t = size["T"]
        combos = sp.Matrix.hstack(*[sum((S[i, j] * Z[:, i] for i in range(t)), sp.zeros(Z.rows, 1)) for j in range(t)])
        return (Z * S - combos).applyfunc(sp.expand)

    return MatrixIdentity(
        "Z sigma(C) - [sum_i p^(j)_i z^(i)]_j",
        variables=lambda s: {"Z": alg.general("z", s["d"], s["T"]), "S": alg.general("s", s["T"], s["T"])},
        residual=residual,
    )


def _reweighting_derivation() -> Derivation:
    k, j, i = sp.symbols("k j i", integer=True, nonnegative=True)
    Z = MatrixSymbol("Z", d, T)
    S = MatrixSymbol("Sigma", T, T)
    entry = MatrixElement(Z * S, k, j)
    combo = Sum(S[i, j] * Z[k, i], (i, 0, T - 1))
    return Derivation(
        assumptions=[r"p^{(j)} = [\sigma(C)]_{\bullet j},\ z^{(i)} = Z_{\bullet i}"],
        steps=[Step(entry, combo, r"definition of the matrix product: = [\sum_i p^{(j)}_i z^{(i)}]_k", ENTRIES)],
        remark=r"Z\sigma(C) = \left[\sum_i p^{(1)}_iz^{(i)}, \ldots, \sum_i p^{(T)}_iz^{(i)}\right]",
        conclusion=sp.Eq(entry, combo, evaluate=False),
    )


def _row_column_derivation() -> Derivation:
    X = MatrixSymbol("X", T, d)
    Wq, Wk, Wv = (MatrixSymbol(s, d, d) for s in ("W_q", "W_k", "W_v"))
    Srow = X * Wq * (X * Wk).T / sp.sqrt(d)  # Q K^T / sqrt(d) in the row convention
    Kc, Qc, Vc = Wk.T * X.T, Wq.T * X.T, Wv.T * X.T  # P^K Z, P^Q Z, P^V Z with Z = X^T, P = W^T
    Arow = MatrixSymbol(r"\mathrm{softmax}_\mathrm{row}(QK^T/\sqrt{d})", T, T)
    col = Vc * Softmax(Kc.T * Qc / sp.sqrt(d), "columns")
    col_t = Vc * Softmax(Srow.T, "columns")
    return Derivation(
        assumptions=[
            r"Z = X^T,\ P^Q = W_q^T,\ P^K = W_k^T,\ P^V = W_v^T",
            r"\mathrm{softmax}_\mathrm{col}(S^T) = \mathrm{softmax}_\mathrm{row}(S)^T \text{ (definition)}",
        ],
        steps=[
            Step(col, col_t, r"K^TQ = (Wk^TX^T)^T(W_q^TX^T) = (QK^T)^T", identity()),
            Step(col_t, Vc * Arow.T, "the row softmax normalises the rows, the columns of the transpose",
                 lemma="definition"),
            Step(Vc * Arow.T, (Arow * X * Wv).T, "transpose of a product", identity()),
        ],
        remark=r"V\,\mathrm{softmax}_\mathrm{col}\!\left(\frac{K^TQ}{\sqrt d}\right) = "
        r"\left(\mathrm{softmax}_\mathrm{row}\!\left(\frac{QK^T}{\sqrt d}\right)V\right)^T",
        conclusion=sp.Eq(col, (Arow * X * Wv).T, evaluate=False),
    )


def _row_column_identity() -> MatrixIdentity:
    def residual(size, X, Wq, Wk, Wv):
        dd = size["d"]
        scale = sp.sqrt(dd)
        Q, K, V = X * Wq, X * Wk, X * Wv
        y_row = softmax_rows(Q * K.T / scale) * V
        Z = X.T
        Qc, Kc, Vc = Wq.T * Z, Wk.T * Z, Wv.T * Z
        y_col = Vc * softmax_cols(Kc.T * Qc / scale)
        return (y_col - y_row.T).applyfunc(lambda x: sp.simplify(sp.together(x)))

    def variables(s):
        t, dd = s["T"], s["d"]
        return {
            "X": alg.general("x", t, dd),
            "Wq": alg.general("q", dd, dd),
            "Wk": alg.general("k", dd, dd),
            "Wv": alg.general("v", dd, dd),
        }

    return MatrixIdentity("Y_col - Y_row^T", variables=variables, residual=residual)


_MHA_PROJECTION_SHAPES = Claim(
    id="mha.projection_shapes",
    title="projections are N x (N/n_heads)",
    statement="P_i in R^{N x (N / n_heads)} for Z in R^{N x T}, applied as P_i Z.",
    latex=r"P^{(\cdot)}_i\in\mathbb{R}^{N\times(N\div\mathtt{n\_heads})},\ Z\in\mathbb{R}^{N\times T},\ P_iZ",
    source=SRC1.at("'Written as an equation'"),
    expected=Level.REFUTED,
    checker=ShapePolicy(factors=_projection_factors(False), sizes=grid(m=[2], h=[1, 2], T=[3]), name="P_i Z"),
    notes="Sizes: m = N / n_heads is the head dimension, h = n_heads, N = m h. P_i Z needs P_i to have N "
    "columns; with N x m projections it is defined only for one head.",
)


#: the claims this module declares, in ledger order (the family comes from geoattn.symbolic.claims.FAMILIES)
CLAIMS = [
    _MHA_PROJECTION_SHAPES,
    corrected(_MHA_PROJECTION_SHAPES, Claim(
        id="mha.projection_shapes.corrected",
        title="projections are (N/n_heads) x N",
        statement="P_i in R^{(N / n_heads) x N}, so that P_i Z in R^{(N / n_heads) x T}.",
        latex=r"P^{(\cdot)}_i\in\mathbb{R}^{(N\div\mathtt{n\_heads})\times N},\ "
        r"P_iZ\in\mathbb{R}^{(N\div\mathtt{n\_heads})\times T}",
        expected=Level.PROVED,
        checker=ShapePolicy(
            factors=_projection_factors(True),
            sizes=grid(m=[2], h=[1, 2], T=[3]),
            expect_shape=lambda s: (s["m"], s["T"]),
            name="P_i Z",
        ),
    )),
    Claim(
        id="mha.output_shape",
        title="concatenated heads have the input's size",
        statement="Concatenating the heads' outputs gives an array of the same size as the input.",
        latex=r"\mathrm{MultiHeadAttention}(Z)\in\mathbb{R}^{N\times T}\ \text{for}\ Z\in\mathbb{R}^{N\times T}",
        source=SRC1.at("'concatenated together'"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_output_shape_identity(),
            search=grid(m=[1, 2, 3], h=[1, 2, 4], T=[3]),
            points=1,
            prove=_output_shape_derivation,
        ),
        notes="Holds with the corrected projection shapes (mha.projection_shapes.corrected).",
    ),
    Claim(
        id="softmax.stochastic",
        title="softmax gives probability vectors",
        statement="Column (resp. row) softmax gives probability vectors: positive entries summing to 1.",
        latex=r"\sum_{i=1}^T[\mathrm{softmax}(c)]_i = 1,\quad [\mathrm{softmax}(c)]_i > 0",
        source=f"{SRC0.at('footnote 3')}; {SRC1}; {SRC2}",
        expected=Level.PROVED,
        checker=Policy(identity=_stochastic_identity(), search=grid(T=[2, 3]), points=2, prove=_stochastic_derivation),
    ),
    Claim(
        id="softmax.can_be_singular",
        title="softmax matrix can be singular",
        statement="A stochastic (softmax) matrix can have identical columns, so det(softmax(C)) can be 0.",
        latex=r"\exists C:\ \det\mathrm{softmax}(C) = 0",
        source=SRC0.at("remark in 'Volume-Preserving Attention'"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_singular_identity(), search=grid(T=[2, 3, 4, 5]), points=1, prove=_singular_derivation
        ),
    ),
    Claim(
        id="attention.multiplicative_matrix",
        title="C = Z^T W Z entrywise",
        statement="For multiplicative attention the correlation matrix is C = Z^T W Z, [C]_ij = z^(i)^T W z^(j).",
        latex=r"C = Z^TWZ,\quad [C]_{ij} = (z^{(i)})^TWz^{(j)}",
        source=SRC0.at("introduction"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_multiplicative_identity(), search=grid(d=[1, 2], T=[2, 3]), prove=_multiplicative_derivation
        ),
    ),
    Claim(
        id="attention.reweighting",
        title="Z sigma(C) as a reweighting",
        statement="The output Z sigma(C) is [sum_i p^(1)_i z^(i), ..., sum_i p^(T)_i z^(i)] with "
        "p^(j) the j-th column of sigma(C).",
        latex=r"Z\sigma(C) = \left[\sum_{i=1}^Tp^{(1)}_iz^{(i)}, \ldots, \sum_{i=1}^Tp^{(T)}_iz^{(i)}\right]",
        source=SRC0.at("'Reweighting of the Input Sequence'"),
        expected=Level.PROVED,
        checker=Policy(
            identity=_reweighting_identity(), search=grid(d=[1, 2], T=[2, 3]), prove=_reweighting_derivation
        ),
    ),
    Claim(
        id="attention.row_column_equivalence",
        title="row and column conventions agree",
        statement="The row convention of 002 (X in R^{T x d}, softmax(Q K^T / sqrt d) V) and the column convention "
        "of 001 (V softmax(K^T Q / sqrt N)) compute the same attention up to transposition, with Z = X^T and "
        "P = W^T.",
        latex=r"V\,\mathrm{softmax}_\mathrm{col}(K^TQ/\sqrt d) = (\mathrm{softmax}_\mathrm{row}(QK^T/\sqrt d)V)^T",
        source=f"{SRC1}; {SRC2}",
        expected=Level.PROVED,
        checker=Policy(
            identity=_row_column_identity(), search=grid(T=[2, 3], d=[1, 2]), points=1, prove=_row_column_derivation
        ),
    ),
]
