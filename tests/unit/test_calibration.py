"""Calibration's figures against independent computations and published worked examples."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import pytest
from scipy.stats import norm

from fair_forge_core.calibration import (
    BEST_THRESHOLD_RULE,
    Counts,
    NoPairScored,
    best_threshold,
    build_report,
    calibrate_sync,
    cohens_kappa,
    count,
    format_report,
    proportion,
)
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.metrics import TurnJudgement
from fair_forge_core.schemas import CalibrationConfig, CalibrationReport, CalibrationRequest, LabelledPair

STARTER = Path(__file__).resolve().parents[2] / "examples" / "calibration" / "starter.jsonl"


def textbook_kappa(a: int, b: int, c: int, d: int) -> float:
    """Cohen's κ of a 2×2 table, rows rater 1 (yes, no), columns rater 2 (yes, no):
    a = yes/yes, b = yes/no, c = no/yes, d = no/no. Floats, as in a textbook."""
    n = a + b + c + d
    p_o = (a + d) / n
    p_yes = ((a + b) / n) * ((a + c) / n)
    p_no = ((c + d) / n) * ((b + d) / n)
    p_e = p_yes + p_no
    return (p_o - p_e) / (1 - p_e)


def scipy_wilson(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval written out from its formula, z from scipy."""
    z = norm.ppf(1 - (1 - level) / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


# --------------------------------------------------------------------------- kappa


def test_kappa_of_the_published_example_is_0_4() -> None:
    # Wikipedia, "Cohen's kappa", worked example: 50 grant proposals, both yes 20, both no 15,
    # A yes / B no 5, A no / B yes 10: p_o = 0.7, p_e = 0.5, kappa = 0.4.
    counts = Counts(
        judge_pass_human_pass=20, judge_pass_human_fail=5, judge_fail_human_pass=10, judge_fail_human_fail=15
    )
    assert cohens_kappa(counts) == pytest.approx(0.4, abs=1e-15)


@pytest.mark.parametrize(
    "cells", [(73, 4, 5, 40), (1, 0, 0, 1), (3, 9, 4, 2), (0, 5, 5, 0), (10, 1, 0, 0), (7, 0, 3, 0)]
)
def test_kappa_equals_the_textbook_formula(cells: tuple[int, int, int, int]) -> None:
    assert cohens_kappa(Counts(*cells)) == pytest.approx(textbook_kappa(*cells), abs=1e-12)


def test_kappa_is_one_for_perfect_agreement_and_minus_one_for_perfect_balanced_disagreement() -> None:
    assert cohens_kappa(Counts(5, 0, 0, 5)) == 1.0
    assert cohens_kappa(Counts(0, 5, 5, 0)) == -1.0


def test_kappa_is_none_when_chance_agreement_is_one_or_nothing_was_scored() -> None:
    assert cohens_kappa(Counts(12, 0, 0, 0)) is None  # both sides passed everything
    assert cohens_kappa(Counts(0, 0, 0, 9)) is None
    assert cohens_kappa(Counts()) is None


# --------------------------------------------------------------------------- Wilson


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion", Statistics in
        # Medicine 17:857-872, Table I, method 3 (Wilson score, no continuity correction).
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_of_published_examples(successes: int, n: int, low: float, high: float) -> None:
    rate = proportion(successes, n)
    assert rate is not None
    assert (round(rate.ci_low, 4), round(rate.ci_high, 4)) == (low, high)
    assert (rate.successes, rate.n, rate.value) == (successes, n, successes / n)


@pytest.mark.parametrize(("successes", "n"), [(28, 32), (25, 30), (5, 30), (1, 1), (0, 3), (53, 62), (999, 2000)])
def test_wilson_interval_equals_the_formula_with_scipy(successes: int, n: int) -> None:
    rate = proportion(successes, n)
    assert rate is not None
    assert (rate.ci_low, rate.ci_high) == pytest.approx(scipy_wilson(successes, n), abs=1e-12)


def test_a_rate_over_nothing_is_none() -> None:
    assert proportion(0, 0) is None


# --------------------------------------------------------------------------- counts and the report


def pair(label: str, category: str | None = None, query: str = "q") -> LabelledPair:
    return LabelledPair(query=query, answer="a", ground_truth="g", label=label, category=category)


def test_counts_at_the_threshold_are_score_greater_or_equal() -> None:
    counts = count([0.7, 0.69999, 1.0, 0.0], [True, True, False, False], 0.7)
    assert counts == Counts(
        judge_pass_human_pass=1, judge_pass_human_fail=1, judge_fail_human_pass=1, judge_fail_human_fail=1
    )


def hand_made_report() -> CalibrationReport:
    """12 pairs: 6 human passes (scores 0.9 0.8 0.75 0.7 0.5 —), 6 human fails (0.1 0.2 0.3 0.85 — —)."""
    pairs = [
        pair("pass", "numbers"),
        pair("pass", "numbers"),
        pair("pass", "names"),
        pair("pass", "names"),
        pair("pass", "names"),
        pair("pass", None),
        pair("fail", "numbers"),
        pair("fail", "numbers"),
        pair("fail", "names"),
        pair("fail", "names"),
        pair("fail", None),
        pair("fail", "refusal"),
    ]
    judgements = [
        TurnJudgement(0.9, "right"),
        TurnJudgement(0.8, "right"),
        TurnJudgement(0.75),
        TurnJudgement(0.7),
        TurnJudgement(0.5, "partly"),
        TurnJudgement(None, error="judge call failed: HTTP 500"),
        TurnJudgement(0.1),
        TurnJudgement(0.2),
        TurnJudgement(0.3),
        TurnJudgement(0.85, "looks right"),
        TurnJudgement(None, error="unparseable judge output after 3 attempts"),
        TurnJudgement(None, error="judge call failed: HTTP 500"),
    ]
    return build_report(pairs, judgements, 0.7)


def test_the_report_counts_scored_pairs_only_and_lists_the_unscored_apart() -> None:
    report = hand_made_report()
    assert (report.pairs, report.scored, report.unscored) == (12, 9, 3)
    assert report.confusion.model_dump() == {
        "judge_pass_human_pass": 4,  # 0.9 0.8 0.75 0.7
        "judge_pass_human_fail": 1,  # 0.85
        "judge_fail_human_pass": 1,  # 0.5
        "judge_fail_human_fail": 3,  # 0.1 0.2 0.3
    }
    assert [(u.index, u.category, u.label) for u in report.unscored_pairs] == [
        (5, None, "pass"),
        (10, None, "fail"),
        (11, "refusal", "fail"),
    ]
    assert report.unscored_pairs[1].error == "unparseable judge output after 3 attempts"
    unscored = [r for r in report.results if r.score is None]
    assert [(r.index, r.agrees, r.judge_label) for r in unscored] == [
        (5, None, None),
        (10, None, None),
        (11, None, None),
    ]
    assert any("3 pair(s) unscored" in w for w in report.warnings)


def test_the_report_rates_are_the_confusion_tables_with_wilson_intervals() -> None:
    report = hand_made_report()
    expected = {"agreement": (7, 9), "tpr": (4, 5), "tnr": (3, 4), "false_pass_rate": (1, 4)}
    for name, (successes, n) in expected.items():
        rate = getattr(report, name)
        assert (rate.successes, rate.n) == (successes, n), name
        assert rate.value == successes / n
        assert (rate.ci_low, rate.ci_high) == pytest.approx(scipy_wilson(successes, n), abs=1e-12)
    assert report.kappa == pytest.approx(textbook_kappa(4, 1, 1, 3), abs=1e-12)
    assert report.confidence == 0.95


def test_per_category_agreement_sorted_with_the_uncategorised_last() -> None:
    rows = [(c.category, c.pairs, c.scored, c.unscored, c.agreed, c.agreement) for c in hand_made_report().per_category]
    assert rows == [
        ("names", 5, 5, 0, 3, 3 / 5),  # 0.75 ✓ 0.7 ✓ 0.5 ✗ | 0.3 ✓ 0.85 ✗
        ("numbers", 4, 4, 0, 4, 1.0),
        ("refusal", 1, 0, 1, 0, None),
        (None, 2, 0, 2, 0, None),
    ]


def test_a_rate_whose_side_is_missing_is_none() -> None:
    report = build_report([pair("pass"), pair("pass")], [TurnJudgement(0.9), TurnJudgement(0.2)], 0.7)
    assert report.tnr is None and report.false_pass_rate is None
    assert report.kappa == 0.0  # p_o = p_e = 1/2: the judge's one pass of two is what chance gives
    assert report.tpr is not None and report.tpr.value == 0.5
    assert any("no scored pair is labelled 'fail'" in w for w in report.warnings)
    assert any("only 2 scored pairs" in w for w in report.warnings)


def test_a_report_of_nothing_scored_has_no_rates() -> None:
    report = build_report([pair("pass")], [TurnJudgement(None, error="x")], 0.7)
    assert report.agreement is None and report.kappa is None and report.best_threshold is None
    assert report.unscored == 1 and report.scored == 0


# --------------------------------------------------------------------------- best threshold


def brute_force_agreement(scores: list[float], human: list[bool], t: float) -> int:
    return sum((s >= t) == h for s, h in zip(scores, human, strict=True))


def test_best_threshold_lowers_the_threshold_when_that_agrees_more() -> None:
    scores = [0.6, 0.65, 0.8, 0.3, 0.5]
    human = [True, True, True, False, False]
    best = best_threshold(scores, human, 0.7)
    assert best is not None
    # At 0.7: 3/5 agree (0.6 and 0.65 fail wrongly). Any t in (0.5, 0.6] agrees on all 5; 0.6 is the
    # only candidate there (the observed score).
    assert (best.threshold, best.agreed, best.scored, best.agreement) == (0.6, 5, 5, 1.0)
    assert best.improvement == pytest.approx(2 / 5)
    assert best.rule == BEST_THRESHOLD_RULE


def test_best_threshold_keeps_the_configured_one_when_nothing_does_better() -> None:
    scores = [0.9, 0.5, 0.6, 0.65]
    human = [True, False, True, False]
    # 0.6, 0.7 and 0.9 each agree on 3 of 4; the configured 0.7 is the closest to itself.
    assert [brute_force_agreement(scores, human, t) for t in (0.5, 0.6, 0.65, 0.7, 0.9)] == [2, 3, 2, 3, 3]
    best = best_threshold(scores, human, 0.7)
    assert best is not None and (best.threshold, best.agreed, best.improvement) == (0.7, 3, 0.0)


def test_best_threshold_of_two_equally_close_is_the_higher() -> None:
    # 0.6 and 0.8 each agree on 2 of 3 and are 0.1 from 0.7 (in decimals: binary floats make 0.6
    # look closer); the configured 0.7 agrees on 1.
    scores, human = [0.8, 0.6, 0.7], [True, True, False]
    assert [brute_force_agreement(scores, human, t) for t in (0.6, 0.7, 0.8)] == [2, 1, 2]
    best = best_threshold(scores, human, 0.7)
    assert best is not None and best.threshold == 0.8 and best.agreed == 2


def test_best_threshold_can_be_above_every_score_only_as_the_configured_one() -> None:
    # Every pair is a human fail: failing all of them needs a threshold above the highest score.
    best = best_threshold([0.1, 0.2], [False, False], 0.7)
    assert best is not None and (best.threshold, best.agreed) == (0.7, 2)
    best = best_threshold([0.8, 0.9], [False, False], 0.7)
    assert best is not None and (best.threshold, best.agreed) == (0.9, 1)  # 0.9 fails 0.8: the best on offer


@pytest.mark.parametrize("seed", range(20))
def test_best_threshold_is_the_brute_force_optimum(seed: int) -> None:
    import random

    rng = random.Random(seed)
    n = rng.randint(1, 40)
    scores = [rng.choice([0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]) for _ in range(n)]
    human = [rng.random() < 0.5 for _ in range(n)]
    configured = rng.choice([0.5, 0.7, 0.72])
    best = best_threshold(scores, human, configured)
    assert best is not None
    candidates = sorted({configured, *scores})
    top = max(brute_force_agreement(scores, human, t) for t in candidates)
    assert best.agreed == top == brute_force_agreement(scores, human, best.threshold)
    winners = [t for t in candidates if brute_force_agreement(scores, human, t) == top]
    nearest = min(round(abs(t - configured), 9) for t in winners)
    assert best.threshold == max(t for t in winners if round(abs(t - configured), 9) == nearest)
    # And no threshold up to the highest score (nor the configured one) does better: above the highest
    # score every pair fails, which is a candidate only as the configured threshold.
    grid = [t for t in (i / 1000 for i in range(1001)) if t <= max(scores)]
    assert max(brute_force_agreement(scores, human, t) for t in grid) <= top


# --------------------------------------------------------------------------- schemas, text, the judge


def test_the_request_is_strict_and_names_the_field() -> None:
    from pydantic import ValidationError

    base = {"connector": {"class_path": "fair_forge_core.judges.ReferenceJudge"}}
    good = CalibrationRequest.model_validate(
        base | {"pairs": [{"query": "q", "answer": "a", "ground_truth": "g", "label": "pass"}]}
    )
    assert good.config.threshold == 0.7 and good.config.max_concurrency == 8
    assert good.config.evaluation_config().threshold == 0.7
    bad_cases = [
        ({"pairs": []}, "pairs"),
        ({"pairs": [{"query": "q", "answer": "a", "ground_truth": "g", "label": "PASS"}]}, "pairs.0.label"),
        ({"pairs": [{"query": "q", "answer": "a", "label": "pass"}]}, "pairs.0.ground_truth"),
        ({"pairs": [{"query": "q", "answer": "a", "ground_truth": "g", "label": "pass", "score": 1}]}, "pairs.0.score"),
        (
            {
                "pairs": [{"query": "q", "answer": "a", "ground_truth": "g", "label": "pass"}],
                "config": {"threshold": "0.7"},
            },
            "config.threshold",
        ),
        (
            {
                "pairs": [{"query": "q", "answer": "a", "ground_truth": "g", "label": "pass"}],
                "config": {"threshold": 1.5},
            },
            "config.threshold",
        ),
    ]
    for extra, field in bad_cases:
        with pytest.raises(ValidationError) as caught:
            CalibrationRequest.model_validate(base | extra)
        assert field in {".".join(map(str, e["loc"])) for e in caught.value.errors()}, extra


def test_format_report_shows_every_figure_and_the_unscored() -> None:
    text = format_report(hand_made_report())
    assert "12 labelled pairs, 9 scored, 3 unscored; threshold 0.7" in text
    assert "agreement         77.8%  (7/9; 95% CI" in text
    assert "TPR               80.0%  (4/5;" in text
    assert "false-pass rate   25.0%  (1/4;" in text
    assert "unscored               1           2   (not counted above)" in text
    assert "#10 (none): unparseable judge output after 3 attempts" in text
    assert "#9 names: human fail, judge 0.85" in text


def starter_pairs() -> list[LabelledPair]:
    return [LabelledPair.model_validate(json.loads(line)) for line in STARTER.read_text().splitlines()]


def test_the_starter_set_is_varied_and_about_half_pass() -> None:
    pairs = starter_pairs()
    assert 55 <= len(pairs) <= 70
    passes = sum(p.label == "pass" for p in pairs)
    assert 0.4 <= passes / len(pairs) <= 0.6
    categories = {p.category for p in pairs}
    assert None not in categories and len(categories) >= 10
    assert len({(p.query, p.answer) for p in pairs}) == len(pairs)


def test_the_offline_judge_on_the_starter_set_through_the_judge_path() -> None:
    report = calibrate_sync(starter_pairs(), ReferenceJudge(), config=CalibrationConfig())
    # The offline judge abstains where its rules cannot decide: those pairs are unscored, never counted.
    assert report.scored + report.unscored == len(starter_pairs()) and report.unscored <= 10
    assert {u.error for u in report.unscored_pairs} <= {"the offline judge cannot decide this turn"}
    assert report.agreement is not None and report.agreement.value >= 0.75
    # The figures are the confusion table's, whatever the judge's current rules give.
    c = report.confusion
    assert report.agreement.successes == c.judge_pass_human_pass + c.judge_fail_human_fail
    assert report.kappa == pytest.approx(
        textbook_kappa(
            c.judge_pass_human_pass, c.judge_pass_human_fail, c.judge_fail_human_pass, c.judge_fail_human_fail
        )
    )


def test_identical_pairs_are_judged_once_and_reported_each() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    model = FakeListChatModel(responses=['```json\n{"score": 0.9, "reasoning": "fine"}\n```'] * 3)
    pairs = [pair("pass"), pair("fail"), pair("pass", query="other")]
    report = calibrate_sync(pairs, model)
    assert [r.score for r in report.results] == [0.9, 0.9, 0.9]
    assert model.i == 2  # two distinct requests, two calls
    assert report.confusion.judge_pass_human_fail == 1


def test_nothing_scored_raises() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    model = FakeListChatModel(responses=["no verdict here"])
    with pytest.raises(NoPairScored, match="no pair could be scored: 1× unparseable"):
        calibrate_sync([pair("pass")], model)


def test_every_two_by_two_table_up_to_four_agrees_with_the_textbook() -> None:
    for cells in itertools.product(range(4), repeat=4):
        n = sum(cells)
        if n == 0:
            continue
        counts = Counts(*cells)
        p_e = ((cells[0] + cells[1]) * (cells[0] + cells[2]) + (cells[2] + cells[3]) * (cells[1] + cells[3])) / n / n
        if p_e == 1:
            assert cohens_kappa(counts) is None
        else:
            assert cohens_kappa(counts) == pytest.approx(textbook_kappa(*cells), abs=1e-12)
