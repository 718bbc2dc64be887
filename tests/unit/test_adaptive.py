"""`fair_forge_core.adaptive`: the confidence sequence against an independent mpmath computation and
closed forms, its coverage under continuous monitoring, the decision's edge cases, the question's
parser and the planner (docs/statistics.md "Adaptive attempts")."""

from __future__ import annotations

import itertools
import math
import random

import mpmath
import pytest
from pydantic import ValidationError

from fair_forge_core import adaptive
from fair_forge_core.schemas import AdaptiveTask

# --------------------------------------------------------------------------- the bounds


def mpmath_bounds(successes: int, failures: int, level: float, prior: tuple[float, float]) -> tuple[float, float]:
    """The ends of {p : M_n(p) < 1/level}, independently: mpmath's Beta function, its logarithm and
    its root finder at 50 digits (no lgamma, no bisection)."""
    with mpmath.workdps(50):
        a, b = mpmath.mpf(prior[0]), mpmath.mpf(prior[1])
        limit = mpmath.log(1 / mpmath.mpf(level))
        marginal = mpmath.log(mpmath.beta(a + successes, b + failures) / mpmath.beta(a, b))

        def g(p: mpmath.mpf) -> mpmath.mpf:
            return marginal - successes * mpmath.log(p) - failures * mpmath.log(1 - p) - limit

        n = successes + failures
        if n == 0:
            return 0.0, 1.0
        centre = mpmath.mpf(successes) / n
        tiny = mpmath.mpf(10) ** -45
        lower = 0.0 if successes == 0 else float(mpmath.findroot(g, (tiny, centre), solver="anderson"))
        upper = 1.0 if failures == 0 else float(mpmath.findroot(g, (centre, 1 - tiny), solver="anderson"))
        return lower, upper


COUNTS = (0, 1, 2, 5, 13, 40, 300)


@pytest.mark.parametrize(("level", "prior"), [(0.05, (1.0, 1.0)), (0.05, (0.5, 0.5)), (0.01, (2.0, 3.0))])
def test_bounds_agree_with_mpmath_to_1e_9(level: float, prior: tuple[float, float]) -> None:
    worst = 0.0
    for successes, failures in itertools.product(COUNTS, COUNTS):
        ours = adaptive.confidence_sequence(successes, failures, level, prior)
        theirs = mpmath_bounds(successes, failures, level, prior)
        worst = max(worst, abs(ours[0] - theirs[0]), abs(ours[1] - theirs[1]))
    assert worst <= 1e-9


@pytest.mark.parametrize("n", [1, 2, 5, 20, 100])
def test_all_successes_with_the_uniform_prior_has_a_closed_form(n: int) -> None:
    # Uniform prior, S = n: M_n(p) = 1 / ((n + 1) p^n) < 1/α ⇔ p > (α / (n + 1))^(1/n).
    alpha = 0.05
    exact = (alpha / (n + 1)) ** (1 / n)
    assert adaptive.confidence_sequence(n, 0) == (pytest.approx(exact, abs=1e-11), 1.0)
    assert adaptive.confidence_sequence(0, n) == (0.0, pytest.approx(1 - exact, abs=1e-11))


@pytest.mark.parametrize(("successes", "failures"), [(3, 4), (10, 0), (0, 7), (17, 3)])
def test_log_mixture_is_robbins_closed_form_under_the_uniform_prior(successes: int, failures: int) -> None:
    n = successes + failures
    for p in (0.01, 0.3, 0.5, 0.77, 0.99):
        robbins = -math.log((n + 1) * math.comb(n, successes) * p**successes * (1 - p) ** failures)
        assert adaptive.log_mixture(p, successes, failures) == pytest.approx(robbins, abs=1e-12)


def test_the_set_is_the_interval_between_the_bounds() -> None:
    limit = -math.log(adaptive.DEFAULT_LEVEL)
    for successes, failures in [(1, 1), (7, 2), (30, 30), (2, 40)]:
        lower, upper = adaptive.confidence_sequence(successes, failures)
        inside = [lower + (upper - lower) * i / 50 for i in range(1, 50)]
        assert all(adaptive.log_mixture(p, successes, failures) < limit for p in inside)
        # The reported ends are the bracket's outer ends: excluded, and within 1e-12 of the set.
        assert adaptive.log_mixture(lower, successes, failures) >= limit
        assert adaptive.log_mixture(upper, successes, failures) >= limit
        assert adaptive.log_mixture(lower + 2e-12, successes, failures) < limit
        assert adaptive.log_mixture(upper - 2e-12, successes, failures) < limit


def test_edge_cases_of_the_bounds() -> None:
    assert adaptive.confidence_sequence(0, 0) == (0.0, 1.0)
    assert adaptive.confidence_sequence(0, 3)[0] == 0.0
    assert adaptive.confidence_sequence(3, 0)[1] == 1.0
    for successes, failures in [(1, 1), (5, 9), (200, 1)]:
        lower, upper = adaptive.confidence_sequence(successes, failures)
        assert 0 < lower <= successes / (successes + failures) <= upper < 1
    # A symmetric prior gives mirrored bounds when successes and failures swap.
    lower, upper = adaptive.confidence_sequence(7, 2, prior=(0.5, 0.5))
    mirror = adaptive.confidence_sequence(2, 7, prior=(0.5, 0.5))
    assert mirror == (pytest.approx(1 - upper, abs=1e-11), pytest.approx(1 - lower, abs=1e-11))


def test_bounds_narrow_as_attempts_grow_at_the_same_rate() -> None:
    for successes, failures in [(3, 1), (1, 1), (1, 4)]:
        previous = (0.0, 1.0)
        for scale in (1, 2, 4, 8, 16, 64):
            lower, upper = adaptive.confidence_sequence(successes * scale, failures * scale)
            assert previous[0] < lower and upper < previous[1]
            previous = (lower, upper)


def test_a_smaller_level_or_a_different_prior_moves_the_bounds() -> None:
    wide = adaptive.confidence_sequence(8, 2, level=0.01)
    narrow = adaptive.confidence_sequence(8, 2, level=0.2)
    assert wide[0] < narrow[0] and narrow[1] < wide[1]
    assert adaptive.confidence_sequence(8, 2, prior=(0.5, 0.5)) != adaptive.confidence_sequence(8, 2)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((-1, 2), ValueError),
        ((2, -1), ValueError),
        ((True, 2), TypeError),
        ((2.0, 2), TypeError),
    ],
)
def test_counts_are_checked(args: tuple[object, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        adaptive.confidence_sequence(*args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("level", "prior"), [(0.0, (1.0, 1.0)), (1.0, (1.0, 1.0)), (0.05, (0.0, 1.0))])
def test_level_and_prior_are_checked(level: float, prior: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match=r"level|prior"):
        adaptive.confidence_sequence(3, 3, level, prior)


# --------------------------------------------------------------------------- coverage


def test_a_task_on_the_boundary_is_rarely_decided_under_continuous_monitoring() -> None:
    # Ville: P(some CS_n excludes the true rate) ≤ α at every horizon. 1,000 seeded runs of a task
    # exactly on the boundary, read after every attempt up to 60 attempts: any decision is wrong.
    # (The bound is loose: the rate is near 1 % here; 5 % leaves the Monte Carlo error room.)
    boundary, horizon, runs = 0.7, 60, 1000
    rng = random.Random(35)
    cache: dict[tuple[int, int], str] = {}
    decided = 0
    for _ in range(runs):
        successes = 0
        for n in range(1, horizon + 1):
            successes += rng.random() < boundary
            key = (successes, n - successes)
            if key not in cache:
                cache[key] = adaptive.task_report(*key, boundary).decided
            if cache[key] != "undecided":
                decided += 1
                break
    assert decided / runs <= adaptive.DEFAULT_LEVEL
    assert decided > 0  # the monitoring does see decisions: the check is not vacuous


def test_a_task_off_the_boundary_is_decided_on_its_side() -> None:
    rng = random.Random(7)
    for rate, side in ((0.4, "below"), (0.95, "above")):
        successes = sum(rng.random() < rate for _ in range(400))
        assert adaptive.task_report(successes, 400 - successes, 0.7).decided == side


# --------------------------------------------------------------------------- the decision


@pytest.mark.parametrize("boundary", [0.0, 0.3, 0.8 ** (1 / 5), 0.99, 1.0])
def test_excludes_decides_as_the_bounds_do(boundary: float) -> None:
    # The planner's one-evaluation test and the bounds' decision, on every state up to 40 attempts.
    for n in range(41):
        for successes in range(n + 1):
            report = adaptive.task_report(successes, n - successes, boundary)
            excluded = adaptive.excludes(boundary, successes, n - successes, 0.05, (1.0, 1.0))
            assert excluded == (report.decided != "undecided"), (successes, n - successes)


def test_decide_reads_the_bounds_strictly() -> None:
    assert adaptive.decide(0.5, 0.9, 0.4) == "above"
    assert adaptive.decide(0.5, 0.9, 0.95) == "below"
    assert adaptive.decide(0.5, 0.9, 0.5) == "undecided"  # on a bound decides nothing
    assert adaptive.decide(0.5, 0.9, 0.9) == "undecided"


def test_a_report_with_no_attempts_is_undecided_on_0_1() -> None:
    report = adaptive.task_report(0, 0, 0.5)
    assert (report.decided, report.attempts, report.lower, report.upper) == ("undecided", 0, 0.0, 1.0)
    assert (report.level, report.prior) == (0.05, (1.0, 1.0))


def test_boundaries_at_0_and_1() -> None:
    # p* = 0: only `above`, once the successes push the lower bound above 0 (a single one does).
    assert adaptive.task_report(1, 0, 0.0).decided == "above"
    assert adaptive.task_report(0, 50, 0.0).decided == "undecided"
    # p* = 1: only `below`; a single failure puts the upper bound below 1.
    assert adaptive.task_report(0, 1, 1.0).decided == "below"
    assert adaptive.task_report(500, 0, 1.0).decided == "undecided"
    with pytest.raises(ValueError, match="boundary"):
        adaptive.task_report(1, 1, 1.5)


def test_the_report_round_trips_and_rejects_what_this_version_cannot_write() -> None:
    report = adaptive.task_report(12, 3, 0.9)
    assert AdaptiveTask.model_validate_json(report.model_dump_json()) == report
    fields = report.model_dump()
    for change in ({"successes": 16}, {"lower": 0.99}, {"prior": (0.0, 1.0)}, {"extra": 1}, {"decided": "maybe"}):
        with pytest.raises(ValidationError):
            AdaptiveTask.model_validate({**fields, **change})


# --------------------------------------------------------------------------- the question


@pytest.mark.parametrize(
    ("text", "k", "boundary", "holds_when"),
    [
        ("pass_pow_k>=0.8", 5, 0.8 ** (1 / 5), "above"),
        (" pass_pow_k >= 0.8 ", 3, 0.8 ** (1 / 3), "above"),
        ("pass_pow_k<=.5", 2, math.sqrt(0.5), "below"),
        ("p>=0.9", 5, 0.9, "above"),
        ("p<=1", 4, 1.0, "below"),
        ("p>=0", 4, 0.0, "above"),
        ("pass_pow_k>=1e-2", 2, 0.1, "above"),
    ],
)
def test_parse_question(text: str, k: int, boundary: float, holds_when: str) -> None:
    question = adaptive.parse_question(text, k)
    assert question.boundary == pytest.approx(boundary, rel=1e-15)
    assert question.holds_when == holds_when
    assert question.text == text and question.k == k


def test_the_boundary_is_the_kth_root() -> None:
    for threshold, k in ((0.8, 5), (0.5, 3), (0.99, 10)):
        assert adaptive.boundary_rate(threshold, k) ** k == pytest.approx(threshold, rel=1e-14)
    assert adaptive.boundary_rate(0.0, 7) == 0.0 and adaptive.boundary_rate(1.0, 7) == 1.0
    # A larger k asks more of each attempt.
    assert adaptive.boundary_rate(0.8, 1) < adaptive.boundary_rate(0.8, 2) < adaptive.boundary_rate(0.8, 5)


@pytest.mark.parametrize(
    "text",
    ["pass_pow_k>0.8", "pass@k>=0.8", "pass^k>=0.8", "p=0.8", "p>=", "", "p>=0.8 and more", "p>=-0.1", "p>=nan"],
)
def test_parse_question_names_the_text_it_cannot_read(text: str) -> None:
    with pytest.raises(ValueError, match="cannot read the question " + repr(text).replace("^", r"\^")):
        adaptive.parse_question(text, 5)


def test_parse_question_refuses_a_threshold_above_1_and_a_k_below_1() -> None:
    with pytest.raises(ValueError, match=r"'p>=1\.5'.*above 1"):
        adaptive.parse_question("p>=1.5", 5)
    with pytest.raises(ValueError, match="k must be at least 1"):
        adaptive.parse_question("pass_pow_k>=0.8", 0)


# --------------------------------------------------------------------------- the planner

BOUNDARY = 0.8 ** (1 / 5)


def brute_force_chance(successes: int, failures: int, max_attempts: int, boundary: float) -> float:
    """The chance of a decision within the budget: the sum, over every sequence of the remaining
    attempts, of its Pólya-urn probability under the uniform prior when some prefix of it reaches
    a decided state (independent of `decision_chance`'s dynamic programming)."""
    total = 0.0
    for outcomes in itertools.product((True, False), repeat=max_attempts - successes - failures):
        s, f, probability, decided = successes, failures, 1.0, False
        for outcome in outcomes:
            win = (1 + s) / (2 + s + f)
            probability *= win if outcome else 1 - win
            s, f = (s + 1, f) if outcome else (s, f + 1)
            decided = decided or adaptive.task_report(s, f, boundary).decided != "undecided"
        total += probability if decided else 0.0
    return total


@pytest.mark.parametrize(("successes", "failures", "max_attempts"), [(3, 2, 12), (6, 0, 14), (0, 0, 8), (8, 1, 18)])
def test_decision_chance_is_the_exact_chance(successes: int, failures: int, max_attempts: int) -> None:
    report = adaptive.task_report(successes, failures, BOUNDARY)
    expected = brute_force_chance(successes, failures, max_attempts, BOUNDARY)
    assert adaptive.decision_chance(report, max_attempts) == pytest.approx(expected, abs=1e-12)


def test_decision_chance_is_0_exactly_when_no_outcome_decides() -> None:
    for successes, failures in [(n - f, f) for n in range(1, 16) for f in range(n + 1)]:
        report = adaptive.task_report(successes, failures, BOUNDARY)
        if report.decided != "undecided":
            assert adaptive.decision_chance(report, 16) == 1.0
            continue
        reachable = any(
            adaptive.task_report(successes + more_s, failures + more_f, BOUNDARY).decided != "undecided"
            for more_s in range(16 - successes - failures + 1)
            for more_f in range(16 - successes - failures - more_s + 1)
        )
        assert (adaptive.decision_chance(report, 16) > 0) == reachable


def test_the_first_round_gives_every_task_its_round() -> None:
    tasks = {name: adaptive.task_report(0, 0, BOUNDARY) for name in ("a", "b", "c")}
    assert adaptive.next_round(tasks, max_attempts=20, round_size=5) == {"a": 5, "b": 5, "c": 5}
    assert adaptive.next_round(tasks, max_attempts=3, round_size=5) == {"a": 3, "b": 3, "c": 3}


def test_later_rounds_go_only_to_open_tasks_with_attempts_left() -> None:
    tasks = {
        "decided below": adaptive.task_report(2, 8, BOUNDARY),
        "open": adaptive.task_report(3, 2, BOUNDARY),
        "open, near the cap": adaptive.task_report(14, 4, BOUNDARY),  # one more failure decides it
        "at the cap": adaptive.task_report(17, 3, BOUNDARY),
        "hopeless": adaptive.task_report(14, 0, BOUNDARY),
    }
    assert tasks["decided below"].decided == "below"
    assert adaptive.decision_chance(tasks["hopeless"], 20) < adaptive.DEFAULT_FUTILITY
    assert adaptive.next_round(tasks, max_attempts=20, round_size=5) == {"open": 5, "open, near the cap": 2}
    # futility 0: only a task that no outcome can decide stops early; "hopeless" still can (6 failures).
    assert adaptive.next_round(tasks, 20, 5, futility=0.0) == {"open": 5, "open, near the cap": 2, "hopeless": 5}


def test_next_round_checks_its_arguments() -> None:
    tasks = {"a": adaptive.task_report(0, 0, 0.5)}
    for args in ((0, 1, 0.0), (5, 0, 0.0), (5, 1, 1.0), (5, 1, -0.1)):
        with pytest.raises(ValueError):
            adaptive.next_round(tasks, *args)


def test_a_run_through_the_planner_ends_and_spends_at_most_the_budget() -> None:
    rng = random.Random(3)
    rates = {f"t{i}": rng.betavariate(4, 1) for i in range(20)}
    reports = {name: adaptive.task_report(0, 0, BOUNDARY) for name in rates}
    rounds = 0
    while plan := adaptive.next_round(reports, max_attempts=20, round_size=2):
        rounds += 1
        for name, more in plan.items():
            wins = sum(rng.random() < rates[name] for _ in range(more))
            old = reports[name]
            reports[name] = adaptive.task_report(
                old.successes + wins, old.attempts - old.successes + more - wins, BOUNDARY
            )
    assert rounds <= 10
    assert all(report.attempts <= 20 for report in reports.values())
    assert sum(report.attempts for report in reports.values()) < 20 * 20  # some task stopped early
