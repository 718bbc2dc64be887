"""Outputs CI systems read (#26 §2), each a pure function from a result to text; the CLI only
writes the files (`fair-forge evaluate` / `compare` `--junit`, `--markdown`, `--jsonl`,
`--csv`, and the step summary under `GITHUB_STEP_SUMMARY`).

- `cases`: the test cases of a result (a task, or a conversation without a task_id), passed,
  failed or skipped, with the reasons (its check results' `reason`); the rule is its docstring.
- `junit`: JUnit XML of an evaluation (a testsuite per assistant) or a comparison (a case per
  metric, the attempt-level test and the verdict).
- `markdown`: the Markdown summary of an evaluation; `markdown_comparison`: of a comparison.
- `rows`: one row per turn as JSON Lines or CSV, with a column group per check.
"""

from fair_forge_core.exports.cases import Case, cases, failure_reasons, unscored_reasons
from fair_forge_core.exports.junit import EvaluationTiming, junit_comparison, junit_evaluation
from fair_forge_core.exports.markdown import markdown_evaluation
from fair_forge_core.exports.markdown_comparison import markdown_comparison
from fair_forge_core.exports.rows import CHECK_COLUMNS, ROW_FIELDS, csv_rows, jsonl_rows, row_fields, turn_rows

__all__ = [
    "CHECK_COLUMNS",
    "ROW_FIELDS",
    "Case",
    "EvaluationTiming",
    "cases",
    "csv_rows",
    "failure_reasons",
    "jsonl_rows",
    "junit_comparison",
    "junit_evaluation",
    "markdown_comparison",
    "markdown_evaluation",
    "row_fields",
    "turn_rows",
    "unscored_reasons",
]
