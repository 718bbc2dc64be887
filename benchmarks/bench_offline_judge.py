"""Offline judge: agreement of `ReferenceJudge` with human labels, per split and per category.

Three labelled sets: `tests/data/judge_labels/pairs.jsonl` (287 pairs for the failure classes
of issue #16, split by hash before tuning: `tuning` and `heldout`), `tests/data/judge_labels/
fresh.jsonl` (118 pairs of the same classes written before the abstention rules were tuned, a
second held-out set) and the older `tests/data/judge_agreement.jsonl` (122 pairs). A turn passes at score >= 0.7; an
abstention (score None: the turn would be unscored) is counted apart and left out of
agreement, as an unscored turn is left out of n and c. Figures: agreement on the scored
turns, Cohen's κ, TPR (right answers passed), TNR (wrong answers failed), the false-pass
rate (wrong answers passed, over all wrong answers, abstentions included in the
denominator) and the abstention rate, with Wilson 95 % intervals; and the time a turn.
Targets (held-out and fresh): agreement >= 90 %, false passes <= 5 %, abstentions <= 10 %.

    python -m benchmarks.bench_offline_judge [--by-category]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import ROOT, header, verdict
from fair_forge_core.judges.reference import score_answer
from fair_forge_core.stats import wilson_interval

LABELS = ROOT / "tests" / "data" / "judge_labels" / "pairs.jsonl"
FRESH = ROOT / "tests" / "data" / "judge_labels" / "fresh.jsonl"
OLD_SET = ROOT / "tests" / "data" / "judge_agreement.jsonl"
THRESHOLD = 0.7


@dataclass
class Tally:
    """Counts of one group of pairs: (human label, judge) -> n; judge is pass, fail or abstain."""

    counts: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))

    def add(self, label: str, judged: str) -> None:
        self.counts[(label, judged)] += 1

    def n(self, label: str | None = None, judged: str | None = None) -> int:
        return sum(v for (lab, jud), v in self.counts.items() if label in (None, lab) and judged in (None, jud))

    @property
    def scored(self) -> int:
        return self.n() - self.n(judged="abstain")

    @property
    def agreed(self) -> int:
        return self.n("pass", "pass") + self.n("fail", "fail")

    def kappa(self) -> float | None:
        """Cohen's κ on the scored turns."""
        total = self.scored
        if not total:
            return None
        observed = self.agreed / total
        expected = (
            sum((self.n(side) - self.n(side, "abstain")) * self.n(judged=side) for side in ("pass", "fail")) / total**2
        )
        return None if expected == 1 else (observed - expected) / (1 - expected)


def rate(c: int, n: int) -> str:
    """`c/n = p % [low, high]` with Wilson's 95 % interval."""
    if not n:
        return f"{c}/0"
    low, high = wilson_interval(n, c, 0.95)
    return f"{c}/{n} = {100 * c / n:.1f} % [{100 * low:.1f}, {100 * high:.1f}]"


def judge(rows: list[dict[str, str]]) -> tuple[dict[str, Tally], float]:
    """Tallies by group ("all", "split:...", "category:...") and the mean seconds a turn."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    started = time.perf_counter()
    for row in rows:
        score, _ = score_answer(row["query"], row["answer"], row["ground_truth"])
        judged = "abstain" if score is None else "pass" if score >= THRESHOLD else "fail"
        for group in ("all", f"split:{row.get('split', 'all')}", f"category:{row['category']}"):
            tallies[group].add(row["label"], judged)
    return tallies, (time.perf_counter() - started) / max(1, len(rows))


def report(name: str, tally: Tally) -> str:
    kappa = tally.kappa()
    wrong, right = tally.n("fail"), tally.n("pass")
    return (
        f"   {name}: agreement {rate(tally.agreed, tally.scored)}, κ {'-' if kappa is None else f'{kappa:.2f}'}\n"
        f"      TPR {rate(tally.n('pass', 'pass'), right - tally.n('pass', 'abstain'))}, "
        f"TNR {rate(tally.n('fail', 'fail'), wrong - tally.n('fail', 'abstain'))}\n"
        f"      false passes {rate(tally.n('fail', 'pass'), wrong)}, "
        f"abstentions {rate(tally.n(judged='abstain'), tally.n())}"
    )


def load(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def targets(name: str, tally: Tally) -> None:
    """The three targets of #16 for one held-out set."""
    print(
        "   "
        + verdict(tally.scored > 0 and tally.agreed / tally.scored >= 0.90, f"{name} agreement >= 90 % on scored turns")
    )
    print("   " + verdict(tally.n("fail", "pass") <= 0.05 * tally.n("fail"), f"{name} false passes <= 5 %"))
    print("   " + verdict(tally.n(judged="abstain") <= 0.10 * tally.n(), f"{name} abstentions <= 10 %"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-category", action="store_true", help="also print each category")
    args = parser.parse_args()

    header("offline judge: agreement with human labels (pass at >= 0.7; abstentions apart)")
    tallies, per_turn = judge(load(LABELS))
    fresh, _ = judge(load(FRESH))
    held = tallies["split:heldout"]
    for split in ("heldout", "tuning"):
        print(report(f"judge_labels {split}", tallies[f"split:{split}"]))
    print(report(f"judge_labels fresh ({fresh['all'].n()} pairs, second held-out set)", fresh["all"]))
    old, _ = judge(load(OLD_SET))
    print(report("judge_agreement (122 pairs, older set)", old["all"]))
    if args.by_category:
        for group in sorted(g for g in tallies if g.startswith("category:")):
            print(report(group.removeprefix("category:") + " (both splits)", tallies[group]))
        for group in sorted(g for g in fresh if g.startswith("category:")):
            print(report(group.removeprefix("category:") + " (fresh)", fresh[group]))
    print(f"   time: {1000 * per_turn:.3f} ms a turn (mean over {tallies['all'].n()} pairs)")
    targets("held-out", held)
    targets("fresh", fresh["all"])


if __name__ == "__main__":
    main()
