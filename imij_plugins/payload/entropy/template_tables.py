"""Record 35's tables fitted to the template units' outcome counts (2.14, section 5's notes):
the encoder's side, apart from template.py, which the decoder imports too."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from imij_plugins.payload.entropy.bilevel import CONTEXTS, HALF, fit_probabilities, prob_scale
from imij_plugins.payload.entropy.modeling import best_tables
from imij_plugins.payload.entropy.models import M, Table, TableCode
from imij_plugins.payload.entropy.template import CANDIDATE_CONTEXTS


class TemplateFit(NamedTuple):
    """Record 35's tables as fitted (2.14): what its record writes and the units are coded with."""

    bits: int  # b = 4 + prec, the coded values' width
    values: list[int | None]  # per context (1024 phase-0, then 40 candidate): v, None when unused
    probs: np.ndarray  # per context the probability coded with (M / 2 when unused)
    code: TableCode | None  # the direct-index table's code, when written
    table: Table | None  # and that table


def fit_template_tables(counts: Sequence[tuple[np.ndarray, ...]], prec: int | None, unused: bool, seed: int,
                        escape: bool | None, escape_prec: int | None) -> TemplateFit:
    """Record 35's tables from the units' outcome counts (template_counts and typical rows; 5).
    ``prec``, ``unused``, ``seed``, ``escape``, ``escape_prec``: as level_writer.LevelOptions."""
    zeros = np.zeros(CONTEXTS + CANDIDATE_CONTEXTS, np.int64)
    ones = np.zeros(CONTEXTS + CANDIDATE_CONTEXTS, np.int64)
    esc = np.zeros(256, np.int64)
    for p0, q, e, _ in counts:
        zeros += np.concatenate([p0[:, 0], q[:, 0]])
        ones += np.concatenate([p0[:, 1], q[:, 1]])
        esc += e
    # probabilities: the precision with the smallest record plus estimated stream, every
    # precision fitted at once (a row each)
    precisions = np.array([4 + prec] if prec is not None else range(4, 12))[:, None]
    v, probs, used, written = fit_probabilities(zeros, ones, precisions)
    if not unused:
        used = np.broadcast_to((zeros + ones) > 0, used.shape)
        probs = np.where(used, v * prob_scale(precisions), HALF)
    # a used context costs its value's bits and its outcomes at v's probability (probs there),
    # an unused one a bit per outcome
    cost = np.where(used, written, zeros + ones)
    best = min(range(len(precisions)), key=lambda i: float(cost[i].sum()))  # the first of the smallest
    b, v, probs, used = int(precisions[best, 0]), v[best], probs[best], used[best]
    values: list[int | None] = [x if k else None for x, k in zip(v.tolist(), used.tolist())]
    if seed:
        rng = random.Random(seed + 1)
        vmax = M if b == 11 else (1 << b) - 1
        for c in range(len(values)):
            if zeros[c] + ones[c] == 0 and rng.random() < 0.5:
                values[c] = rng.randint(0, vmax)
                probs[c] = values[c] * (1 if b == 11 else 1 << (10 - b))
    # the direct-index table (3.3 grammar) with the smallest total size
    need = bool(esc[1:].any())
    if escape is False and need:
        raise ValueError("escaped indices other than 0 need the direct-index table (escape=False)")
    code: TableCode | None = None
    table: Table | None = None
    if need or escape:
        code = _index_table(esc, escape_prec)
        table = Table.from_weights(code.weights)
    return TemplateFit(b, values, probs, code, table)



def _index_table(counts: np.ndarray, prec: int | None) -> TableCode:
    """The direct-index table (3.3 grammar over symbols 0..=255) with the fewest total bits, all
    precisions weighed at once (modeling.best_tables, as the slots' tables)."""
    return best_tables([counts], range(1, 9) if prec is None else range(prec, prec + 1))[0]
