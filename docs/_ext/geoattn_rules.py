r"""The text of a derivation step's rule (its justification) split into prose, formulas and identifiers.

A rule such as ``"transpose reverses products; A^T = -A"`` or ``"step 3 at t=1: the map is the time-1 flow of V
on all of \mathbb{R}^{d\times T}"`` mixes English with formulas written in TeX or ASCII. The docs set it as text
in which:

* parts between ``$...$`` are formulas, and when a rule has any, nothing else is (``\$`` is a dollar sign);
* otherwise every run of tokens that are not words is one formula (``A^T = -A``, ``\det X^T = \det X``), and
  every English word stays text, so prose never reaches a math node;
* identifiers with underscores (``matrix_softmax``, ``n_heads``) and ledger ids (``cayley.orthogonal``) are set
  as code, never as math, where TeX would read the underscore as a subscript;
* an ASCII subscript of several characters is braced (``C_ij`` becomes :math:`C_{ij}`, not :math:`C_i j`).

:func:`escape_text_underscores` escapes the bare underscores inside ``\text{}``-like groups of a formula, which
MathJax's text-mode macros (and LaTeX) would otherwise reject.
"""

from __future__ import annotations

import re

_MARKED = re.compile(r"(?<!\\)\$(.+?)(?<!\\)\$")
#: an English word, possibly hyphenated (``time-1``, ``block-triangular``), in parentheses or before punctuation
_WORD = re.compile(r"^\(?(?:[A-Za-z][a-z']+|a)(?:-[A-Za-z0-9]+)*\)?[,;:.]?$")
#: an identifier with an underscore and no TeX command (``matrix_softmax:``), or a ledger id (``vec.right_mult``)
_IDENT = re.compile(r"^\(?([A-Za-z][A-Za-z0-9]*(?:[._][A-Za-z0-9]+)*)\)?[,;:.]?$")
_NUMBER = re.compile(r"^\(?[0-9]+\)?[,;:.]?$")
#: a single-letter symbol with an unbraced subscript of several lower-case characters ending the formula token
_ASCII_SUBSCRIPT = re.compile(r"(?<![\\A-Za-z])([A-Za-z])_([a-z0-9]{2,})(?=$|[\s(),;:.=])")
#: a code identifier with underscores inside other text (``cayley_vjp(I``, ``_exp_frechet_blocks``)
#: (starting a token or after an opening bracket; dots allowed, as in ``exp_skew.square_vjp``)
_IDENT_IN = re.compile(r"(?<![^\s(\[])(?:_[A-Za-z]|[A-Za-z][A-Za-z0-9]+)[A-Za-z0-9]*(?:[._][A-Za-z0-9]+)*")
_TIMES = re.compile(r"(?<![\\A-Za-z0-9])([A-Za-z0-9]) x ([A-Za-z0-9])(?![A-Za-z0-9])")
_TEXT_GROUP = re.compile(r"(\\(?:text|textrm|textit|textbf|textsf|texttt|mbox)\s*\{)((?:[^{}]|\{[^{}]*\})*)(\})")


def _is_identifier(token: str) -> bool:
    m = _IDENT.match(token)
    return bool(m) and "\\" not in token and bool(re.search(r"[A-Za-z]{2,}[._][A-Za-z]", m.group(1)))


def _kind(token: str) -> str:
    if _is_identifier(token):
        return "code"
    if _WORD.match(token) and "\\" not in token:
        return "text"
    if _NUMBER.match(token):
        return "number"
    return "math"


def _split_edges(formula: str) -> tuple[str, str, str]:
    """Unbalanced parentheses and final punctuation of a formula run belong to the surrounding text."""
    lead, trail = "", ""
    while formula.startswith("(") and formula.count("(") > formula.count(")"):
        lead, formula = lead + "(", formula[1:]
    while formula and (formula[-1] in ",;:." or (formula[-1] == ")" and formula.count(")") > formula.count("("))):
        trail, formula = formula[-1] + trail, formula[:-1]
    return lead, formula, trail


def rule_segments(rule: str) -> list[tuple[str, str]]:
    r"""Split a rule into ``("text" | "math" | "code", part)`` segments, in order.

    Parameters
    ----------
    rule : str
        The rule of a derivation step.

    Returns
    -------
    list of (str, str)
        Adjacent segments of one kind are merged; text segments keep their spaces. A number right after a
        formula token belongs to the formula (``x = 0``), otherwise to the text (``step 3``); an ASCII ``x``
        between two single symbols is a product sign (``T x T``).
    """
    if _MARKED.search(rule):
        out, pos = [], 0
        for m in _MARKED.finditer(rule):
            out += [("text", rule[pos:m.start()].replace("\\$", "$")), ("math", m.group(1))]
            pos = m.end()
        out.append(("text", rule[pos:].replace("\\$", "$")))
        return [(k, s) for k, s in out if s]
    out, pos = [], 0
    for m in _IDENT_IN.finditer(rule):
        if "_" not in m.group(0):
            continue
        if "\\" in rule[max(0, rule.rfind(" ", 0, m.start())):m.start()]:
            continue  # inside a TeX token (\mathrm{skew_from_lower}): the formula's own business
        out += _token_segments(rule[pos:m.start()]) + [("code", m.group(0))]
        pos = m.end()
    out += _token_segments(rule[pos:])
    merged: list[tuple[str, str]] = []
    for kind, part in out:
        if merged and merged[-1][0] == kind == "text":
            merged[-1] = ("text", merged[-1][1] + part)
        elif part:
            merged.append((kind, part))
    return merged


def _token_segments(piece: str) -> list[tuple[str, str]]:
    """The segments of a piece of a rule with no identifier: runs of words and runs of formula tokens."""
    lead_space = piece[:len(piece) - len(piece.lstrip())]
    trail_space = piece[len(piece.rstrip()):]
    tokens = piece.split()
    kinds = [_kind(t) for t in tokens]
    for i, k in enumerate(kinds):
        if k == "number":
            kinds[i] = "math" if i > 0 and kinds[i - 1] == "math" else "text"
    runs: list[list] = []
    for tok, k in zip(tokens, kinds):
        if runs and runs[-1][0] == k:
            runs[-1][1].append(tok)
        else:
            runs.append([k, [tok]])
    out: list[tuple[str, str]] = []

    def add(kind: str, part: str) -> None:
        if not part:
            return
        if out and out[-1][0] == kind == "text":
            out[-1] = ("text", out[-1][1] + part)
        else:
            out.append((kind, part))

    for n, (k, toks) in enumerate(runs):
        space = " " if n < len(runs) - 1 else ""
        if k == "text":
            add("text", " ".join(toks) + space)
            continue
        lead, body, trail = _split_edges(" ".join(toks))
        if k == "code" and body.startswith("(") and body.endswith(")"):
            lead, body, trail = lead + "(", body[1:-1], ")" + trail
        add("text", lead)
        if k == "math":
            body = _TIMES.sub(r"\1\\times \2", _ASCII_SUBSCRIPT.sub(r"\1_{\2}", body))
        add(k, body)
        add("text", trail + space)
    return ([("text", lead_space)] if lead_space else []) + out + ([("text", trail_space)] if trail_space else [])


def escape_text_underscores(tex: str) -> str:
    r"""Escape every bare ``_`` inside the ``\text{}``-like groups of a formula (``\texttt{n_heads}`` becomes
    ``\texttt{n\_heads}``); underscores already escaped and those in math mode are left as they are."""
    return _TEXT_GROUP.sub(lambda m: m.group(1) + re.sub(r"(?<!\\)_", r"\\_", m.group(2)) + m.group(3), tex)
