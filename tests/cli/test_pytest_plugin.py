"""The pytest plugin (`fair_forge_core.pytest_plugin`), run by pytest itself (`pytester`): a
generated test module uses the `fair_forge` fixture and each assertion, on requests the offline
judge decides, and every failure message is checked against figures computed here by hand
(Wilson's formula, counts), never read back from the plugin."""

from __future__ import annotations

import json
import math
import statistics
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from fair_forge_core.cli import main
from fair_forge_testing.builders import conversation, turn
from tests.cli.test_cli_readiness import REFERENCE_JUDGE, deliveries, sums

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow  # each generated module runs in a pytest process of its own

PLUGIN = ("-p", "fair_forge_core.pytest_plugin", "-p", "no:cacheprovider")


def wrong(count: int) -> list[dict[str, Any]]:
    """The conversations of `sums(count)` with every answer off by one: the offline judge fails them."""
    return [
        conversation(f"sum-{i}", [turn(f"q{i}", f"What is {i} plus 7?", f"It is {i + 8}.", str(i + 7))])
        for i in range(count)
    ]


def wilson_low(n: int, c: int, level: float = 0.95) -> float:
    """Wilson's score interval's low end, from its formula."""
    z = statistics.NormalDist().inv_cdf((1 + level) / 2)
    p = c / n
    return (p + z * z / (2 * n) - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (1 + z * z / n)


def request(path: Path, datasets: list[dict[str, Any]], **config: Any) -> str:
    path.write_text(json.dumps({"connector": REFERENCE_JUDGE, "datasets": datasets, "config": config}))
    return path.name


@pytest.fixture
def files(pytester: pytest.Pytester) -> pytest.Pytester:
    """The generated tests' inputs in pytester's directory: requests, and a baseline result file
    written by `fair-forge evaluate`."""
    root = pytester.path
    request(root / "right.json", sums(10), k=3)  # 10 of 10 correct
    request(root / "mixed.json", sums(6) + wrong(10)[6:], k=3)  # 6 of 10 correct
    request(root / "unscored.json", sums(8) + deliveries(4), k=3)  # 4 of 12 unscored
    request(root / "baseline.json", sums(12), k=3)
    request(root / "worse.json", wrong(12), k=3)
    code = main(["evaluate", str(root / "baseline.json"), "--out", str(root / "baseline.result.json"), "--quiet"])
    assert code == 0
    return pytester


PASSING = """
from fair_forge_core.pytest_plugin import (
    assert_no_regression, assert_pass_at_k, assert_pass_pow_k, assert_readiness,
)
import json

DATASETS = json.loads(open("datasets.json").read())


def test_a_request_file(fair_forge):
    result = fair_forge.evaluate("right.json")
    assert result.aggregated_metrics.total_conversations == 10
    assert_readiness(result, at_least="reliable")
    assert_pass_pow_k(result, lower_bound_at_least=0.37, at_least=1.0)
    assert_pass_at_k(result, lower_bound_at_least=0.97)


def test_datasets_alone_take_the_offline_judge(fair_forge):
    result = fair_forge.evaluate(DATASETS, config={"k": 3})
    assert result.provenance.judges[0].class_path.endswith("ReferenceJudge")
    assert_readiness(result, at_least="functional")


def test_a_dict_and_a_result_file(fair_forge):
    result = fair_forge.evaluate({"datasets": DATASETS, "config": {"k": 3}})
    assert_readiness("baseline.result.json", at_least="reliable")
    assert assert_no_regression("worse.json", result).verdict == "improved"


def test_no_regression_from_the_baseline_file(fair_forge):
    candidate = fair_forge.evaluate("baseline.json")
    comparison = assert_no_regression("baseline.result.json", candidate)
    assert comparison.verdict == "inconclusive"
"""


def test_the_fixture_and_each_assertion_pass_where_the_figures_allow(files: pytest.Pytester) -> None:
    # right.json: c = n = 10, k = 3: Wilson's low end L = 1/(1 + z²/10) ≈ 0.7225, so the pass^3
    # bound L³ ≈ 0.377 ≥ 0.37 and the pass@3 bound 1 − (1 − L)³ ≈ 0.979 ≥ 0.97.
    low = wilson_low(10, 10)
    assert low**3 >= 0.37 and 1 - (1 - low) ** 3 >= 0.97
    (files.path / "datasets.json").write_text(json.dumps(sums(12)))
    files.makepyfile(test_passing=PASSING)
    files.runpytest_subprocess(*PLUGIN).assert_outcomes(passed=4)


FAILING = """
import pytest
from fair_forge_core.pytest_plugin import assert_no_regression, assert_pass_pow_k, assert_readiness


def test_tier_below(fair_forge):
    assert_readiness(fair_forge.evaluate("mixed.json"), at_least="reliable")


def test_preliminary_is_not_sufficient(fair_forge):
    assert_readiness(fair_forge.evaluate("right.json"), at_least="functional", sufficient=True)


def test_insufficient_evidence_fails_at_any_tier(fair_forge):
    assert_readiness(fair_forge.evaluate("unscored.json"), at_least="needs_improvement")


def test_lower_bound_below(fair_forge):
    assert_pass_pow_k(fair_forge.evaluate("right.json"), lower_bound_at_least=0.5)


def test_point_below(fair_forge):
    assert_pass_pow_k(fair_forge.evaluate("mixed.json"), at_least=0.3)


def test_regressed(fair_forge):
    assert_no_regression("baseline.result.json", fair_forge.evaluate("worse.json"))


def test_not_tested(fair_forge):
    assert_no_regression(
        fair_forge.evaluate({"datasets": %(two_right)s}), fair_forge.evaluate({"datasets": %(two_wrong)s})
    )


def test_bad_request(fair_forge):
    fair_forge.evaluate({"datasets": [{"session_id": "s1", "conversation": []}]})


def test_nothing_scored(fair_forge):
    result = fair_forge.evaluate({"datasets": %(undecidable)s})
    assert result.aggregated_metrics.total_conversations == 0
    assert_readiness(result, at_least="needs_improvement")
"""


@pytest.fixture
def failed(files: pytest.Pytester) -> dict[str, str]:
    """Each generated test's name → its failure report (the longrepr pytest prints)."""
    files.makepyfile(test_failing=FAILING % {"two_right": sums(2), "two_wrong": wrong(2), "undecidable": deliveries(2)})
    # In a process of its own, as a user's pytest runs (numpy cannot be imported twice in one
    # process, and pytester's in-process runs forget the modules they imported). Each test's
    # report is read back from pytest's own JUnit XML: the failure's message and its text.
    files.runpytest_subprocess(*PLUGIN, "--junitxml=failing.xml").assert_outcomes(failed=9)
    reports = {}
    for case in ET.parse(files.path / "failing.xml").getroot().iter("testcase"):
        failure = case.find("failure")
        assert failure is not None, case.attrib["name"]
        reports[case.attrib["name"]] = f"{failure.attrib['message']}\n{failure.text}"
    return reports


def test_every_failure_shows_its_figures(failed: dict[str, str]) -> None:
    assert len(failed) == 9
    # mixed.json: p = 6/10, k = 3: pass@3 = 1 − 0.4³ = 0.936 (≥ 0.70, ≤ 0.95): functional.
    assert 0.70 <= 1 - 0.4**3 <= 0.95 and 0.6**3 < 0.70  # neither needs_improvement nor reliable
    assert "tier functional is below reliable" in failed["test_tier_below"]
    assert "functional on 10 of 10 conversations" in failed["test_tier_below"]
    assert "the evidence is preliminary, not sufficient" in failed["test_preliminary_is_not_sufficient"]
    # unscored.json: 4 of 12 unscored (> 10%): no tier passes, not even the lowest.
    message = failed["test_insufficient_evidence_fails_at_any_tier"]
    assert "not enough evidence" in message and "8 of 12 conversations; 4 unscored" in message
    # right.json: the pass^3 bound is L³ with L Wilson's low end of 10/10.
    bound = wilson_low(10, 10) ** 3
    assert (
        f"lower bound of pass^3 (pooled plug-in) = {bound:.4f} (from the 95% Wilson bound of 10/10 conversations; 95% interval) "
        f"is below 0.5 by {0.5 - bound:.4f}"
    ) in failed["test_lower_bound_below"]
    # mixed.json: pass^3 = 0.6³ = 0.216.
    assert (
        f"pass^3 (pooled plug-in) = {0.6**3:.4f} (over 10 scored conversation(s)) is below 0.3 by {0.3 - 0.6**3:.4f}"
        in failed["test_point_below"]
    )

    # The helpers hide their frames (`__tracebackhide__`): each report points at the test's line.
    for name, report in failed.items():
        assert "pytest_plugin.py" not in report, name
    assert (
        '>       assert_readiness(fair_forge.evaluate("mixed.json"), at_least="reliable")' in failed["test_tier_below"]
    )

    # The comparisons: the message is the comparison's report.
    regressed = failed["test_regressed"]
    assert "the candidate regressed against the baseline" in regressed
    # 12 tasks, one attempt each, the baseline right on all and the candidate on none: McNemar's
    # exact test has b = 12, c = 0 and p = 2 · 0.5¹² ≈ 0.00049.
    assert "baseline-only successes b = 12, candidate-only c = 0, p = <0.001" in regressed
    assert 2 * 0.5**12 < 0.001
    untested = failed["test_not_tested"]
    # Two tasks: the exact test's smallest p-value is 2 · 0.5² = 0.5, never significant.
    assert "not tested: 2 shared task(s) are too few for the attempt-level test" in untested
    assert f"smallest p-value is {2 * 0.5**2:g}" in untested

    # A request the CLI would refuse fails the test with the CLI's message.
    assert "<request>: invalid request: datasets[0].assistant_id: Field required" in failed["test_bad_request"]
    assert "During handling" not in failed["test_bad_request"]  # the message alone, no chained traceback
    # Both conversations' second turn is undecidable: nothing scored, no tier, not even the lowest.
    assert "no tier: nothing was scored, so it is not at least needs_improvement" in failed["test_nothing_scored"]


def test_pytests_own_junit_carries_the_message(files: pytest.Pytester) -> None:
    files.makepyfile(
        test_junit="""
from fair_forge_core.pytest_plugin import assert_readiness

def test_tier(fair_forge):
    assert_readiness(fair_forge.evaluate("mixed.json"), at_least="reliable")
"""
    )
    files.runpytest_subprocess(*PLUGIN, "--junitxml=junit.xml").assert_outcomes(failed=1)
    (case,) = ET.parse(files.path / "junit.xml").getroot().iter("testcase")
    failure = case.find("failure")
    assert failure is not None and "tier functional is below reliable" in failure.attrib["message"]


def test_a_wrong_tier_name_is_a_usage_error() -> None:
    from fair_forge_core.pytest_plugin import assert_readiness

    with pytest.raises(ValueError, match="at_least must be one of needs_improvement, inconsistent, functional"):
        assert_readiness({}, at_least="good")


def test_require_same_judge_fails_on_a_difference_in_judging() -> None:
    from fair_forge_core.pytest_plugin import FairForge, assert_no_regression

    forge = FairForge()
    baseline = forge.evaluate(sums(12), config={"k": 3})
    candidate = forge.evaluate(sums(12), config={"k": 3, "threshold": 0.9})
    with pytest.raises(AssertionError, match=r"not judged alike: .*threshold"):
        assert_no_regression(baseline, candidate, require_same_judge=True)
    # Without it, the same outcomes on 12 tasks are no regression (and no difference either).
    assert assert_no_regression(baseline, candidate).verdict == "inconclusive"
    with pytest.raises(AssertionError, match="inconclusive, and require_conclusive=True"):
        assert_no_regression(baseline, candidate, require_conclusive=True)
