"""The HTML report of an evaluation: one self-contained page a team can open, share and archive.

`render_html(result)` takes an `EvaluationResult` (or its JSON form: the CLI's output
or the body of `POST /run`) and returns one HTML document. It is pure — the same
result always gives the same bytes, no clock, no I/O — and self-contained: inline CSS
and inline SVG charts drawn here, no script, no font, no image, no network request (a
Content-Security-Policy of `default-src 'none'` says so to the browser too).

What it shows, in order: the readiness tier and its explanation; KPI tiles (pass@k,
pass^k with credible intervals in Bayesian mode, the success rate, the unbiased and
per-task estimators); the warnings; the white paper's two figures — pass@K (solid) and
pass^K (dashed) for k = 1…max(k, 10) with credible bands in Bayesian mode, and the
tool-correctness breakdown by dimension (mean bars, and per conversation); with
`aggregated_metrics.judge_corrected` (the judge's measured error, issue #36), the corrected figures'
tile beside the observed ones (their intervals, the calibration's counts and source, or under
"identity" that the figures are today's) and, from its `curve`, the corrected pass@K and pass^K
drawn over Figure 1 (posterior bands and mean lines, `charts.corrected_series`); with
`aggregated_metrics.judge_noise`, its one line (`headline.judge_noise_line`); a comparison
of the assistants when there are several; when the result has
`aggregated_metrics.comparison` (`config.compare`), the baseline-vs-candidate section —
the verdict and its explanation, the confidence, shared tasks, P(candidate better), the
minimum detectable effect (and tasks needed when inconclusive or not tested), how the two
sides were judged differently, a forest plot of each metric's difference with its
interval (`charts.forest_plot`), a per-metric table, the tasks and conversations left
unpaired and the notes; when some task has 2 or more scored attempts, the task stability
section — each such task labelled stable, flaky or failing (`flakiness.task_stability` of the
conversations, as `fair-forge evaluate` lists them, whether or not the result carries
`task_stability`), with its passes and its Clopper–Pearson interval; and every conversation with its
turns, failing turns highlighted, each turn and conversation with its check results
(`ConversationMetrics.checks`, docs/checks.md) in one loop: a check with a partial of its own,
`templates/checks/<name>.html.j2`, is written by it (the rich view of its detail: the judge's
reasoning and votes, the tool rubric's reasoning, the broken tool-policy rules, the end state's
differing keys, the goal's verdict), any other (a plug-in check's) by `checks/_generic.html.j2`:
its name, outcome (and cause), score and reason (`view.CheckView`). Without
a comparison the page is exactly what it was before the section existed (its CSS is
written only with it).

The page is written by Jinja2 templates (`templates/`) with autoescaping: every value
from the result is escaped when written, only the templates' own markup is not. What
is shown is read from the result in `view`, the charts' geometry is computed in
`charts`, and `render` holds the Jinja2 environment. Every number taken from the
result carries `data-field` (its JSON path, as a JSON array of keys) and `data-value`
(the exact JSON value), and its visible text is `format_number(value)` — or, when the
element has `data-format`, `view.FORMATS[data-format](value)` (signed differences,
p-values, probabilities, percentages, the verdict's word) — so tests can check that the
report shows exactly what the JSON says. Numbers the report derives
carry their exact values in other attributes instead: mean tool scores `data-mean` and
`data-count`, the tasks' rows `data-passed`, `data-attempts`, `data-ci-low`, `data-ci-high`.
"""

from fair_forge_core.report.charts import PASS_AT_COLOUR, PASS_POW_COLOUR
from fair_forge_core.report.render import ReportError, render_html
from fair_forge_core.report.values import TIER_LABELS, TOOL_DIMENSIONS, format_number

__all__ = [
    "PASS_AT_COLOUR",
    "PASS_POW_COLOUR",
    "TIER_LABELS",
    "TOOL_DIMENSIONS",
    "ReportError",
    "format_number",
    "render_html",
]
