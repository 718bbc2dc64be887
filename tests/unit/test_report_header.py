"""One header (#33 item 3): the HTML report's header shows readiness alone, and a tier's colour
only when readiness is `sufficient` — no green element in the header of a preliminary run.

The issue's case, counted by hand: 3 tasks × 3 attempts, one task right 2 of 3 (8 of 9
conversations fully correct), k = 3. Per task pass@3 = 1 and pass^3 = (1 + 1 + 0)/3 = 2/3, in
[0.50, 0.70]: `functional`, preliminary (3 tasks, fewer than 30). Pooled, pass@3 = 1 − (1/9)^3
and pass^3 = (8/9)^3 = 0.702 > 0.70: the seeds' tier is `reliable`, "ready for production",
which the header showed as a green chip beside the grey "Functional · preliminary" badge.

The colours are the ones the page's own stylesheet gives the header's elements: every rule of
report.css whose last compound selector matches an element of the header (its tag, classes and
id; pseudo-classes and ancestors ignored, so more rules count than a browser would apply, never
fewer), `var(--x)` read from `:root`, and the elements' inline styles.
"""

from __future__ import annotations

import colorsys
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from fair_forge_core.evaluate import evaluate_sync
from fair_forge_core.judges import ReferenceJudge
from fair_forge_core.report import render_html
from fair_forge_core.schemas import EvaluationConfig
from fair_forge_testing.builders import conversation, datasets, turn
from tests.report_html import Element, parse

CSS = Path(__file__).resolve().parents[2] / "fair_forge_core" / "report" / "templates" / "report.css"
COLOUR = re.compile(r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b|rgba?\([^)]*\)")
NAMED_GREENS = {"green", "lime", "limegreen", "forestgreen", "seagreen", "darkgreen", "mediumseagreen", "springgreen"}


def evaluated(pattern: Sequence[tuple[bool, ...]]) -> str:
    """The report of one attempt per entry of `pattern` (task i, answered right where True)."""
    conversations = [
        conversation(
            f"s{task}-{attempt}",
            [
                turn(
                    f"q{task}-{attempt}",
                    f"What is {task} plus 7?",
                    f"It is {task + 7}." if right else "No idea.",
                    str(task + 7),
                )
            ],
            task_id=f"task-{task}",
        )
        for task, outcomes in enumerate(pattern)
        for attempt, right in enumerate(outcomes)
    ]
    result = evaluate_sync(datasets(*conversations), ReferenceJudge(), EvaluationConfig(k=3))
    return render_html(result)


def header(page: str) -> list[Element]:
    start = page.index('<header id="summary"')
    return parse(page[start : page.index("</header>", start) + len("</header>")])


def rules() -> list[tuple[str, str]]:
    """(selector, declarations) of every rule of report.css, those inside @media included."""
    text = re.sub(r"/\*.*?\*/", "", CSS.read_text(), flags=re.DOTALL)
    return [(selector.strip(), body) for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", text)]


def variables() -> dict[str, str]:
    root = next(body for selector, body in rules() if selector == ":root")
    return {name.strip(): value.strip() for name, value in re.findall(r"(--[\w-]+)\s*:\s*([^;]+)", root)}


def matches(compound: str, element: Element) -> bool:
    """Whether a compound selector (`span.tier.large`, `.dot`, `#tier`, `h1`) matches `element`,
    its pseudo-classes and attribute selectors ignored."""
    compound = re.sub(r"::?[\w-]+(\([^)]*\))?|\[[^\]]*\]", "", compound)
    tag = re.match(r"^[a-zA-Z][\w-]*|^\*", compound)
    if tag and tag.group(0) not in ("*", element.tag):
        return False
    ids = re.findall(r"#([\w-]+)", compound)
    if any(element.attrs.get("id") != ident for ident in ids):
        return False
    return set(re.findall(r"\.([\w-]+)", compound)) <= element.classes and bool(tag or ids or "." in compound)


def colours(elements: list[Element]) -> list[tuple[str, str]]:
    """(where, colour) of every colour the stylesheet and the inline styles give `elements`."""
    found = []
    names = variables()
    for element in elements:
        declarations = [
            body for selector, body in rules() for one in selector.split(",") if matches(one.split()[-1], element)
        ]
        declarations.append(element.attrs.get("style", ""))
        for body in declarations:
            body = re.sub(r"var\((--[\w-]+)\)", lambda m: names.get(m.group(1), ""), body)
            where = f"<{element.tag} class='{' '.join(sorted(element.classes))}'>"
            found += [(where, colour) for colour in COLOUR.findall(body)]
            found += [(where, word) for word in re.findall(r"[a-z]+", body.lower()) if word in NAMED_GREENS]
    return found


def is_green(colour: str) -> bool:
    """A named green, or a colour whose hue is green (75°–175°) and not a near-grey."""
    if colour in NAMED_GREENS:
        return True
    if colour.startswith("#"):
        digits = colour[1:] if len(colour) == 7 else "".join(c * 2 for c in colour[1:])
        red, green, blue = (int(digits[i : i + 2], 16) for i in (0, 2, 4))
    else:
        red, green, blue = (int(float(x)) for x in re.findall(r"[\d.]+", colour)[:3])
    if max(red, green, blue) - min(red, green, blue) < 16:
        return False
    hue, _, _ = colorsys.rgb_to_hsv(red / 255, green / 255, blue / 255)
    return 75 <= hue * 360 <= 175


def test_the_green_detector_knows_the_stylesheets_greens() -> None:
    assert is_green("#15803d") and is_green("#dcfce7") and is_green("#16a34a") and is_green("green")
    assert not any(is_green(c) for c in ("#334155", "#f8fafc", "#64748b", "#eef2ff", "#1d4ed8", "#c2410c"))


ISSUE_RUN = [(True, True, True), (True, True, True), (True, True, False)]


@pytest.fixture(scope="module")
def preliminary() -> str:
    return evaluated(ISSUE_RUN)


def test_the_issues_run_is_functional_preliminary_with_a_reliable_pooled_tier(preliminary: str) -> None:
    main = next(e for e in parse(preliminary) if e.tag == "main")
    assert main.attrs["data-interpretation"] == "reliable"  # (8/9)^3 = 0.702 > 0.70
    badge = next(e for e in header(preliminary) if e.attrs.get("id") == "readiness")
    assert badge.attrs["data-status"] == "preliminary" and badge.text.strip() == "Functional · preliminary"


def test_the_header_of_a_preliminary_run_has_no_green_element(preliminary: str) -> None:
    elements = header(preliminary)
    assert [c for c in colours(elements) if is_green(c[1])] == []
    text = " ".join(e.text for e in elements if e.tag == "header")
    assert "Reliable" not in text and "ready for production" not in text  # readiness alone
    assert not any(cls.startswith("tier") for e in elements for cls in e.classes)


def test_the_tier_over_conversations_is_outside_the_header_and_neutral_when_preliminary(preliminary: str) -> None:
    tier = next(
        e for e in parse(preliminary) if e.attrs.get("data-field") == '["aggregated_metrics", "interpretation"]'
    )
    assert tier.text.strip() == "Reliable" and "tier-neutral" in tier.classes
    assert [c for c in colours([tier]) if is_green(c[1])] == []


def test_a_sufficient_reliable_run_has_its_green_in_the_header() -> None:
    """The check can fail: 30 tasks all right 3 of 3 is `reliable`, `sufficient`, in green."""
    page = evaluated([(True, True, True)] * 30)
    badge = next(e for e in header(page) if e.attrs.get("id") == "readiness")
    assert badge.attrs["data-status"] == "sufficient" and "readiness-reliable" in badge.classes
    assert any(is_green(colour) for _, colour in colours(header(page)))
