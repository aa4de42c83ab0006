"""Where the claims come from: each seed text mapped once to its public origin.

The ledger's seed claims come from five texts. Four are versions of pages of the GeometricMachineLearning.jl
documentation (JuliaGNI, MIT License); each is identified here by the commit whose file is
byte-identical to the text (its git blob hash matches), so a reader can open exactly the page the claims
quote. The fifth is a personal note on standard attention whose own publication was not found; the
claims it supports are the standard ones of the transformer paper, which is named instead.

=====  ==================================================================  =========================
seed   public origin                                                       matched by
=====  ==================================================================  =========================
000    GML.jl docs, "The Attention Layer" (layers/attention_layer.md)      blob 47a6d1df at 913a58c3
001    GML.jl docs, "Multihead Attention" (layers/multihead_attention...)  blob 9d16c054 at 66b2c49b
002    Vaswani et al., "Attention Is All You Need", 3.2                    content (no public copy)
003    GML.jl docs, "The Attention Layer", 2023 version                    blob 3e0bc731 at da88a3a5
004    GML.jl docs, "Linear Symplectic Attention"                          blob d35bc659 at 68ddaa50
=====  ==================================================================  =========================

The current rendered pages are under https://juliagni.github.io/GeometricMachineLearning.jl/latest/layers/;
they have changed since (the attention page now carries a 2025 proof of volume preservation), which is why
the sources cite the commit.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Origin", "ORIGINS", "GML_REPO", "gml_file"]

GML_REPO = "https://github.com/JuliaGNI/GeometricMachineLearning.jl"


def gml_file(commit: str, path: str) -> str:
    """The address of ``path`` at ``commit`` in the GeometricMachineLearning.jl repository."""
    return f"{GML_REPO}/blob/{commit}/{path}"


@dataclass(frozen=True)
class Origin:
    """The public origin of one seed text.

    Parameters
    ----------
    title : str
        the page (or paper) as a reader finds it.
    url : str
        an address a reader can open.
    short : str
        a label for narrow tables.
    """

    title: str
    url: str
    short: str

    def __str__(self) -> str:
        return f"{self.title} <{self.url}>"

    def at(self, section: str) -> str:
        """This origin with a section (or remark) of it, e.g. ``origin.at("'The Cayley Transform'")``."""
        sep = " " if section.startswith("(") else ", "
        return f"{self.title}{sep}{section} <{self.url}>"


_ATTN = "docs/src/layers/attention_layer.md"

#: seed number -> its public origin
ORIGINS: dict[str, Origin] = {
    "000": Origin("GeometricMachineLearning.jl docs, 'The Attention Layer' (2024)",
                  gml_file("913a58c3dbf86d6a6b34c01ca7678ca70a8dd815", _ATTN), "GML.jl attention_layer@913a58c"),
    "001": Origin("GeometricMachineLearning.jl docs, 'Multihead Attention'",
                  gml_file("66b2c49b26d0214712fda9dc17a19b2f53b45f35", "docs/src/layers/multihead_attention_layer.md"),
                  "GML.jl multihead_attention@66b2c49"),
    "002": Origin("Vaswani et al., 'Attention Is All You Need', NeurIPS 2017, 3.2 (scaled dot-product attention, "
                  "masking)", "https://arxiv.org/abs/1706.03762", "Vaswani et al. 2017"),
    "003": Origin("GeometricMachineLearning.jl docs, 'The Attention Layer' (2023, orthonormal activation)",
                  gml_file("da88a3a5403c14c7f9c1b6339786027d921bdad8", _ATTN), "GML.jl attention_layer@da88a3a"),
    "004": Origin("GeometricMachineLearning.jl docs, 'Linear Symplectic Attention'",
                  gml_file("68ddaa5024a13a5c04bb1d7ebe8627e82dbed233",
                           "docs/src/layers/linear_symplectic_attention.md"),
                  "GML.jl linear_symplectic_attention@68ddaa5"),
}
