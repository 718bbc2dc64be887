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
tool-correctness breakdown by dimension (mean bars, and per conversation); a comparison
of the assistants when there are several; and every conversation with its turns,
failing turns highlighted with the judge's and the tool rubric's reasons.

Every user-supplied string is escaped with `html.escape`. Every number taken from the
result carries `data-field` (its JSON path, as a JSON array of keys) and `data-value`
(the exact JSON value), and its visible text is `format_number(value)`, so tests can
check that the report shows exactly what the JSON says. Numbers the report derives
(mean tool scores) carry `data-mean` and `data-count` instead.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fair_forge_core.schemas import EvaluationResult

Path = tuple[str | int, ...]

# (field of ToolCorrectnessScore, label in the bar chart, column of the per-conversation table)
TOOL_DIMENSIONS: tuple[tuple[str, str, str], ...] = (
    ("tool_selection_correct", "Selection", "Selection"),
    ("parameter_accuracy", "Parameters", "Params"),
    ("sequence_correct", "Sequence", "Sequence"),
    ("result_utilization", "Utilization", "Utilization"),
    ("overall_correctness", "Overall", "Overall"),
    ("f1", "Tool-call F1", "F1"),
)

TIER_LABELS = {
    "reliable": "Reliable",
    "functional": "Functional",
    "inconsistent": "Inconsistent",
    "needs_improvement": "Needs improvement",
}

PASS_AT_COLOUR = "#2563eb"
PASS_POW_COLOUR = "#ea580c"


class ReportError(ValueError):
    """The input is not an evaluation result (for example, an error response)."""


# --------------------------------------------------------------------------- entry point


def render_html(result: EvaluationResult | Mapping[str, Any], *, title: str = "Agent evaluation report") -> str:
    """The report of `result` as one self-contained HTML document.

    `result` is an `EvaluationResult` or its JSON form; a `request_id` key (present in
    `POST /run` responses) is shown, not required. Raises `ReportError` for an error
    response (`"success": false`) and pydantic's `ValidationError`, naming the field,
    for anything else that is not a result.
    """
    data, request_id = _result_data(result)
    agg = data["aggregated_metrics"]
    conversations = data["per_conversation_metrics"]
    body = "\n".join(
        part
        for part in (
            _header(agg, conversations, request_id, title),
            _kpis(agg),
            _warnings(data["warnings"], agg),
            _curve_figure(agg),
            _tool_figure(conversations),
            _assistants(agg, conversations),
            _conversations(conversations),
            _footer(agg, conversations),
        )
        if part
    )
    return _PAGE.format(title=_e(title), css=_CSS, body=body, interpretation=_e(agg["interpretation"] or ""))


def _result_data(result: EvaluationResult | Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The result as validated JSON data, and the request id if the input had one."""
    if isinstance(result, EvaluationResult):
        return result.model_dump(mode="json"), None
    if not isinstance(result, Mapping):
        raise ReportError(f"expected an evaluation result object, got {type(result).__name__}")
    if result.get("success") is False:
        raise ReportError(f"this is an error response, not a result: {str(result.get('error'))[:300]}")
    payload = dict(result)
    request_id = payload.pop("request_id", None)
    payload.pop("job_id", None)  # a job's result.json is the /run response plus its job id
    validated = EvaluationResult.model_validate(payload)
    return validated.model_dump(mode="json"), request_id if isinstance(request_id, str) else None


# --------------------------------------------------------------------------- formatting helpers


def _e(text: object) -> str:
    """`text` escaped for HTML text and attribute values."""
    return html.escape(str(text), quote=True)


def format_number(value: Any) -> str:
    """How the report prints a value: floats with 3 decimals, None as an em dash, the rest as is."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _attrs(path: Path, value: Any) -> str:
    """`data-field` / `data-value` attributes tying an element to a value of the JSON result."""
    return f' data-field="{_e(json.dumps(list(path)))}" data-value="{_e(json.dumps(value))}"'


def _num(path: Path, value: Any, cls: str = "num", tag: str = "span") -> str:
    """An element showing one value of the result, tagged with where it comes from."""
    return f'<{tag} class="{cls}"{_attrs(path, value)}>{_e(format_number(value))}</{tag}>'


def _tier_badge(tier: str | None, path: Path, size: str = "") -> str:
    label = TIER_LABELS.get(tier or "", "Not scored")
    return (
        f'<span class="tier tier-{_e(tier or "none")} {size}"{_attrs(path, tier)}>'
        f'<span class="dot"></span>{_e(label)}</span>'
    )


def _ci(agg: Mapping[str, Any], base: Path, metric: str) -> str:
    """ "90% CrI 0.912 – 0.999" for a Bayesian estimate, empty otherwise."""
    low, high = agg.get(f"{metric}_ci_low"), agg.get(f"{metric}_ci_high")
    if low is None or high is None:
        return ""
    level = agg.get("ci_level")
    label = f"{_percent(level)} CrI " if isinstance(level, float) else "CrI "
    return (
        f'<span class="ci">{_e(label)}{_num((*base, f"{metric}_ci_low"), low)}'
        f" – {_num((*base, f'{metric}_ci_high'), high)}</span>"
    )


def _percent(level: float) -> str:
    """A credible level as a percentage: 0.9 → "90%", 0.975 → "97.5%"."""
    return f"{level * 100:.4g}%"


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def _score_colour(score: float) -> str:
    """A light background from red (0) through amber to green (1)."""
    hue = round(120 * min(max(score, 0.0), 1.0))
    return f"hsl({hue} 70% 88%)"


def _status(conversation: Mapping[str, Any]) -> tuple[str, str]:
    """(css class, label) of a conversation: pass, fail or unscored."""
    if not conversation["is_scored"]:
        return "unscored", "Unscored"
    return ("pass", "Pass") if conversation["is_fully_correct"] else ("fail", "Fail")


def _turn_state(conversation: Mapping[str, Any], index: int) -> str:
    """pass, fail or unscored for turn `index`, from the per-turn detail or, without it, the scores."""
    interactions = conversation.get("interactions")
    if interactions is not None:
        correct = interactions[index]["is_correct"]
        return "unscored" if correct is None else ("pass" if correct else "fail")
    if conversation["correctness_scores"][index] is None:
        return "unscored"
    return "pass" if index in conversation["correct_indices"] else "fail"


# --------------------------------------------------------------------------- sections


def _header(
    agg: Mapping[str, Any], conversations: Sequence[Mapping[str, Any]], request_id: str | None, title: str
) -> str:
    k = agg["k"]
    assistants = sorted({c["assistant_id"] for c in conversations})
    mode = agg["statistical_mode"]
    mode_text = f"Bayesian, {_percent(agg['ci_level'])} credible intervals" if mode == "bayesian" else "frequentist"
    facts = [
        f"{len(conversations)} conversation{'s' if len(conversations) != 1 else ''}",
        f"{len(assistants)} assistant{'s' if len(assistants) != 1 else ''}",
        f"k = {k}",
        mode_text,
    ]
    if request_id:
        facts.append(f"request {request_id}")
    conservative = ""
    if agg.get("conservative_interpretation"):
        conservative = (
            '<p class="conservative">On the lower credible bounds: '
            f"{_tier_badge(agg['conservative_interpretation'], ('aggregated_metrics', 'conservative_interpretation'), 'small')}"
            "</p>"
        )
    explanation = agg.get("interpretation_explanation") or "No conversation could be scored."
    return f"""<header id="summary" class="card hero">
  <div class="hero-text">
    <p class="eyebrow">Fair-Forge Agentic</p>
    <h1>{_e(title)}</h1>
    <p class="facts">{" · ".join(_e(f) for f in facts)}</p>
  </div>
  <div class="hero-tier" id="tier">
    <p class="eyebrow">Readiness tier</p>
    {_tier_badge(agg["interpretation"], ("aggregated_metrics", "interpretation"), "large")}
    <p class="explanation"{_attrs(("aggregated_metrics", "interpretation_explanation"), agg.get("interpretation_explanation"))}>{_e(explanation)}</p>
    {conservative}
  </div>
</header>"""


def _tile(label: str, value_html: str, sub: str = "", tile_id: str = "", accent: str = "") -> str:
    ident = f' id="{tile_id}"' if tile_id else ""
    style = f' style="--accent:{accent}"' if accent else ""
    sub_html = f'<div class="kpi-sub">{sub}</div>' if sub else ""
    return (
        f'<div class="kpi"{ident}{style}><div class="kpi-label">{label}</div>'
        f'<div class="kpi-value">{value_html}</div>{sub_html}</div>'
    )


def _kpis(agg: Mapping[str, Any]) -> str:
    base: Path = ("aggregated_metrics",)
    k = agg["k"]
    n, c = agg["total_conversations"], agg["fully_correct_conversations"]
    mean_note = " (posterior mean)" if agg["statistical_mode"] == "bayesian" else ""
    tiles = [
        _tile(
            f"pass@{k}{mean_note}",
            _num((*base, "pass_at_k"), agg["pass_at_k"]),
            _ci(agg, base, "pass_at_k") or f"at least one success in {k} attempts",
            "kpi-pass-at-k",
            PASS_AT_COLOUR,
        ),
        _tile(
            f"pass^{k}{mean_note}",
            _num((*base, "pass_pow_k"), agg["pass_pow_k"]),
            _ci(agg, base, "pass_pow_k") or f"all {k} attempts succeed",
            "kpi-pass-pow-k",
            PASS_POW_COLOUR,
        ),
        _tile(
            "Conversation success rate",
            _num((*base, "conversation_success_rate"), agg["conversation_success_rate"]),
            f"{_num((*base, 'fully_correct_conversations'), c)} of {_num((*base, 'total_conversations'), n)} "
            "scored conversations fully correct",
            "kpi-success-rate",
            "#16a34a",
        ),
        _tile(
            "Unscored conversations",
            _num((*base, "unscored_conversations"), agg["unscored_conversations"]),
            "left out of n and c" if agg["unscored_conversations"] else "every conversation was scored",
            "kpi-unscored",
            "#64748b",
        ),
    ]
    minor = [
        _tile(
            f"Unbiased pass@{k} / pass^{k}",
            f"{_num((*base, 'pass_at_k_unbiased'), agg['pass_at_k_unbiased'])}"
            f'<span class="sep">/</span>{_num((*base, "pass_pow_k_unbiased"), agg["pass_pow_k_unbiased"])}',
            "1 − C(n−c,k)/C(n,k) and C(c,k)/C(n,k); — when k > n",
            "kpi-unbiased",
        )
    ]
    per_task = agg.get("per_task")
    if per_task:
        task_base = (*base, "per_task")
        minor.append(
            _tile(
                f'Per task (<span class="keep-case">τ</span>-bench) pass@{k} / pass^{k}',
                f"{_num((*task_base, 'pass_at_k'), per_task['pass_at_k'])}"
                f'<span class="sep">/</span>{_num((*task_base, "pass_pow_k"), per_task["pass_pow_k"])}',
                f"{_num((*task_base, 'tasks_with_k_attempts'), per_task['tasks_with_k_attempts'])} of "
                f"{_num((*task_base, 'tasks'), per_task['tasks'])} tasks have ≥ {k} attempts",
                "kpi-per-task",
            )
        )
    return f"""<section id="kpis" class="kpis">
  {"".join(tiles)}
</section>
<section id="kpis-minor" class="kpis minor">
  {"".join(minor)}
</section>"""


def _warnings(warnings: Sequence[str], agg: Mapping[str, Any]) -> str:
    items = [*warnings]
    if agg.get("sample_size_warning"):
        items.append(agg["sample_size_warning"])
    if not items:
        return ""
    lis = "".join(f"<li>{_e(w)}</li>" for w in items)
    return f'<section id="warnings" class="card warnings"><h2>Read with care</h2><ul>{lis}</ul></section>'


# --------------------------------------------------------------------------- figure 1: pass@K and pass^K


def _nice_step(span: int, target: int = 10) -> int:
    raw = max(span / target, 1.0)
    magnitude = 10 ** math.floor(math.log10(raw))
    return int(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))


def _curve_svg(agg: Mapping[str, Any]) -> str:
    curve = agg["curve"]
    width, height = 760, 340
    left, right, top, bottom = 56, 24, 24, 48
    plot_w, plot_h = width - left - right, height - top - bottom
    k_max = curve[-1]["k"]

    def x(k: int) -> float:
        return left + (k - 1) / max(k_max - 1, 1) * plot_w

    def y(v: float) -> float:
        return top + (1 - v) * plot_h

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="pass@K and pass^K for K = 1 to {k_max}">'
    ]
    for v in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(f'<line class="grid" x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}"/>')
        parts.append(f'<text class="tick" x="{left - 10}" y="{y(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    step = 1 if k_max <= 20 else _nice_step(k_max)
    for k in sorted({1, *range(step, k_max + 1, step)}):
        parts.append(f'<text class="tick" x="{x(k):.1f}" y="{height - bottom + 20}" text-anchor="middle">{k}</text>')
    parts.append(
        f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{height - 8}" text-anchor="middle">attempts K</text>'
    )
    parts.append(
        f'<text class="axis-label" transform="translate(16 {top + plot_h / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">probability</text>'
    )
    k_conf = agg["k"]
    if 1 <= k_conf <= k_max:
        parts.append(
            f'<line class="guide" x1="{x(k_conf):.1f}" x2="{x(k_conf):.1f}" y1="{top}" y2="{top + plot_h}"/>'
            f'<text class="guide-label" x="{x(k_conf) + 6:.1f}" y="{top + plot_h - 8}">k = {k_conf}</text>'
        )
    series = (("pass_at_k", "pass@", PASS_AT_COLOUR, ""), ("pass_pow_k", "pass^", PASS_POW_COLOUR, "7 5"))
    for metric, _, colour, _ in series:
        lows = [p[f"{metric}_ci_low"] for p in curve]
        highs = [p[f"{metric}_ci_high"] for p in curve]
        if all(v is not None for v in lows + highs):
            outline = [(x(p["k"]), y(v)) for p, v in zip(curve, lows, strict=True)]
            outline += [(x(p["k"]), y(v)) for p, v in reversed(list(zip(curve, highs, strict=True)))]
            points = " ".join(f"{px:.1f},{py:.1f}" for px, py in outline)
            parts.append(
                f'<polygon class="band" data-series="{metric}" data-low="{_e(json.dumps(lows))}" '
                f'data-high="{_e(json.dumps(highs))}" points="{points}" fill="{colour}"/>'
            )
    markers = len(curve) <= 40
    for metric, symbol, colour, dash in series:
        points = " ".join(f"{x(p['k']):.1f},{y(p[metric]):.1f}" for p in curve)
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(f'<polyline class="line" data-series="{metric}" points="{points}" stroke="{colour}"{dash_attr}/>')
        for index, point in enumerate(curve):
            path = ("aggregated_metrics", "curve", index, metric)
            # Every point keeps its element (and its numbers); past 40 points only k's is drawn.
            radius = 4.5 if point["k"] == k_conf else (3.2 if markers else 0)
            parts.append(
                f'<circle class="point" data-series="{metric}" data-k="{point["k"]}"{_attrs(path, point[metric])} '
                f'cx="{x(point["k"]):.1f}" cy="{y(point[metric]):.1f}" r="{radius}" fill="{colour}">'
                f"<title>{symbol}{point['k']} = {format_number(point[metric])}</title></circle>"
            )
    for metric, _, colour, _ in series:
        at_k = next((p for p in curve if p["k"] == k_conf), None)
        if at_k is not None:
            value = at_k[metric]
            dy = -10 if metric == "pass_at_k" else 20
            anchor_x = x(k_conf) + 8
            parts.append(
                f'<text class="point-label" x="{anchor_x:.1f}" y="{y(value) + dy:.1f}" fill="{colour}">'
                f"{format_number(value)}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


def _legend(bayesian: bool, ci_level: float | None) -> str:
    def swatch(colour: str, dash: str) -> str:
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        return (
            f'<svg width="30" height="10" aria-hidden="true"><line x1="1" y1="5" x2="29" y2="5" '
            f'stroke="{colour}" stroke-width="3"{dash_attr}/></svg>'
        )

    items = [
        f"<li>{swatch(PASS_AT_COLOUR, '')}<b>pass@K</b> — at least one of K attempts succeeds</li>",
        f"<li>{swatch(PASS_POW_COLOUR, '6 4')}<b>pass^K</b> — all K attempts succeed</li>",
    ]
    if bayesian:
        level = f"{_percent(ci_level)} " if ci_level else ""
        items.append(f'<li><span class="band-swatch"></span>shaded: {_e(level)}credible interval</li>')
    return f'<ul class="legend">{"".join(items)}</ul>'


def _curve_table(agg: Mapping[str, Any]) -> str:
    curve = agg["curve"]
    shown = [i for i, p in enumerate(curve) if p["k"] <= 10 or p["k"] == agg["k"]]
    head = "".join(f"<th>{curve[i]['k']}</th>" for i in shown)
    rows = []
    for metric, label in (
        ("pass_at_k", "pass@K"),
        ("pass_pow_k", "pass^K"),
        ("pass_at_k_unbiased", "pass@K unbiased"),
        ("pass_pow_k_unbiased", "pass^K unbiased"),
    ):
        cells = "".join(_num(("aggregated_metrics", "curve", i, metric), curve[i][metric], tag="td") for i in shown)
        rows.append(f"<tr><th>{label}</th>{cells}</tr>")
    return f'<table class="curve-table"><thead><tr><th>K</th>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _curve_figure(agg: Mapping[str, Any]) -> str:
    bayesian = agg["statistical_mode"] == "bayesian"
    if not agg["curve"]:
        content = '<p class="empty">No conversation was scored: there is no curve to draw.</p>'
    else:
        content = f"{_legend(bayesian, agg.get('ci_level'))}{_curve_svg(agg)}{_curve_table(agg)}"
    note = "posterior means, " if bayesian else ""
    return f"""<section id="fig-pass-curves" class="card figure" data-bands="{"true" if bayesian else "false"}">
  <h2>Figure 1 · pass@K and pass^K</h2>
  <p class="caption">pass@K (solid) and pass^K (dashed) for K = 1…{agg["curve"][-1]["k"] if agg["curve"] else 10}
  ({note}n = {agg["total_conversations"]} scored conversations). The wider the gap, the less consistent the agent:
  it may succeed within a few attempts, yet rarely every time.</p>
  {content}
</section>"""


# --------------------------------------------------------------------------- figure 2: tool correctness


def _tool_scores(conversation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [s for s in conversation["tool_correctness_scores"] if s is not None]


def _bars_svg(means: Sequence[tuple[str, str, float, int]]) -> str:
    width, row, left, right = 440, 38, 104, 56
    height = row * len(means) + 8
    track = width - left - right
    parts = [
        f'<svg class="chart bars" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="Mean tool-correctness score by dimension">'
    ]
    for i, (key, label, mean, count) in enumerate(means):
        top = 4 + i * row
        overall = key in ("overall_correctness",)
        colour = "#4338ca" if overall else "#6366f1"
        parts.append(
            f'<g class="bar" data-dimension="{key}" data-mean="{_e(json.dumps(mean))}" data-count="{count}">'
            f'<text class="bar-label{" strong" if overall else ""}" x="{left - 12}" y="{top + 21}" '
            f'text-anchor="end">{_e(label)}</text>'
            f'<rect class="track" x="{left}" y="{top + 6}" width="{track}" height="20" rx="6"/>'
            f'<rect x="{left}" y="{top + 6}" width="{max(mean * track, 0):.1f}" height="20" rx="6" fill="{colour}"/>'
            f'<text class="bar-value" x="{width - right + 10}" y="{top + 21}">{format_number(mean)}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _tool_figure(conversations: Sequence[Mapping[str, Any]]) -> str:
    scores = [s for c in conversations for s in _tool_scores(c)]
    header = """<section id="fig-tool-breakdown" class="card figure">
  <h2>Figure 2 · Tool correctness by dimension</h2>"""
    if not scores:
        return (
            f'{header}<p class="empty">No turn has <code>ground_truth_agentic</code>: '
            "tool correctness was not evaluated.</p></section>"
        )
    means = [(key, label, _mean(s[key] for s in scores) or 0.0, len(scores)) for key, label, _ in TOOL_DIMENSIONS]
    correct = sum(1 for s in scores if s["is_correct"])
    rows = []
    for index, conversation in enumerate(conversations):
        own = _tool_scores(conversation)
        if not own:
            continue
        cells = []
        for key, _, _ in TOOL_DIMENSIONS:
            mean = _mean(s[key] for s in own) or 0.0
            cells.append(
                f'<td class="heat" style="background:{_score_colour(mean)}" data-dimension="{key}" '
                f'data-mean="{_e(json.dumps(mean))}">{format_number(mean)}</td>'
            )
        rows.append(
            f'<tr data-conversation="{index}"><th scope="row" title="{_e(conversation["session_id"])}">'
            f"{_e(conversation['session_id'])}</th><td>{len(own)}</td>{''.join(cells)}</tr>"
        )
    heads = "".join(f"<th>{_e(column)}</th>" for _, _, column in TOOL_DIMENSIONS)
    return f"""{header}
  <p class="caption">Mean over the {len(scores)} turns with expected tools
  ({correct} of them with correct tools). Selection: multiset Jaccard of tool names; parameters: share of agreeing
  arguments; sequence: order of the paired calls; utilization: the answer uses the tool results.</p>
  <div class="tool-grid">
    <div>{_bars_svg(means)}</div>
    <div class="scroll"><table class="heatmap" id="tool-by-conversation">
      <thead><tr><th>Conversation</th><th>Turns</th>{heads}</tr></thead>
      <tbody>{"".join(rows)}</tbody>
    </table></div>
  </div>
</section>"""


# --------------------------------------------------------------------------- assistants


def _meter(value: float | None, colour: str) -> str:
    width = 0.0 if value is None else max(min(value, 1.0), 0.0) * 100
    return f'<span class="meter"><span style="width:{width:.1f}%;background:{colour}"></span></span>'


def _assistants(agg: Mapping[str, Any], conversations: Sequence[Mapping[str, Any]]) -> str:
    by_assistant = agg.get("by_assistant")
    if not by_assistant:
        return ""
    k = agg["k"]
    rows = []
    for name, sub in by_assistant.items():
        base: Path = ("aggregated_metrics", "by_assistant", name)
        tool_mean = _mean(
            s["overall_correctness"] for c in conversations if c["assistant_id"] == name for s in _tool_scores(c)
        )
        rows.append(
            f'<tr data-assistant="{_e(name)}"><th scope="row">{_e(name)}</th>'
            f"<td>{_tier_badge(sub['interpretation'], (*base, 'interpretation'), 'small')}</td>"
            f"<td>{_num((*base, 'fully_correct_conversations'), sub['fully_correct_conversations'])} / "
            f"{_num((*base, 'total_conversations'), sub['total_conversations'])}</td>"
            f"<td>{_num((*base, 'conversation_success_rate'), sub['conversation_success_rate'])}</td>"
            f"<td>{_meter(sub['pass_at_k'], PASS_AT_COLOUR)}{_num((*base, 'pass_at_k'), sub['pass_at_k'])}"
            f"{_ci(sub, base, 'pass_at_k')}</td>"
            f"<td>{_meter(sub['pass_pow_k'], PASS_POW_COLOUR)}{_num((*base, 'pass_pow_k'), sub['pass_pow_k'])}"
            f"{_ci(sub, base, 'pass_pow_k')}</td>"
            f'<td><span class="num" data-mean="{_e(json.dumps(tool_mean))}">{format_number(tool_mean)}</span></td>'
            "</tr>"
        )
    return f"""<section id="assistants" class="card">
  <h2>Assistants compared</h2>
  <div class="scroll"><table class="data" id="assistants-table">
    <thead><tr><th>Assistant</th><th>Tier</th><th>Fully correct</th><th>Success rate</th>
    <th>pass@{k}</th><th>pass^{k}</th><th>Mean tool score</th></tr></thead>
    <tbody>{"".join(rows)}</tbody>
  </table></div>
</section>"""


# --------------------------------------------------------------------------- conversations


def _chips(conversation: Mapping[str, Any], index: int) -> str:
    chips = []
    for turn, score in enumerate(conversation["correctness_scores"]):
        state = _turn_state(conversation, turn)
        path = ("per_conversation_metrics", index, "correctness_scores", turn)
        chips.append(
            f'<span class="chip chip-{state}"{_attrs(path, score)} title="turn {turn + 1}: {state}">'
            f"{_e(format_number(score))}</span>"
        )
    return "".join(chips)


def _turn_rows(conversation: Mapping[str, Any], index: int) -> str:
    interactions = conversation.get("interactions")
    if interactions is None:
        return '<p class="empty">Per-turn detail was left out of this result.</p>'
    rows = []
    base: Path = ("per_conversation_metrics", index)
    for turn, interaction in enumerate(interactions):
        state = _turn_state(conversation, turn)
        tool = conversation["tool_correctness_scores"][turn]
        tool_cell = "—"
        if tool is not None:
            tool_cell = (
                f'<span class="mark mark-{"pass" if tool["is_correct"] else "fail"}">'
                f"{'✓' if tool['is_correct'] else '✗'}</span> "
                + _num((*base, "tool_correctness_scores", turn, "overall_correctness"), tool["overall_correctness"])
            )
        answer_mark = {True: "✓", False: "✗", None: "?"}[interaction["answer_correct"]]
        answer_state = {True: "pass", False: "fail", None: "unscored"}[interaction["answer_correct"]]
        reasons = []
        if interaction.get("observation"):
            reasons.append(f'<p class="reason"><b>Observation:</b> {_e(interaction["observation"])}</p>')
        if interaction.get("error"):
            reasons.append(f'<p class="reason error"><b>Unscored:</b> {_e(interaction["error"])}</p>')
        if interaction.get("judge_reasoning"):
            reasons.append(f'<p class="reason"><b>Judge:</b> {_e(interaction["judge_reasoning"])}</p>')
        if tool is not None and tool.get("reasoning"):
            reasons.append(f'<p class="reason"><b>Tools:</b> {_e(tool["reasoning"])}</p>')
        rows.append(
            f'<tr class="turn turn-{state}" data-turn="{turn}" data-failing="{"true" if state == "fail" else "false"}">'
            f'<td class="qa">{_e(interaction["qa_id"])}</td>'
            f'<td><span class="mark mark-{answer_state}">{answer_mark}</span> '
            f"{_num((*base, 'interactions', turn, 'answer_score'), interaction['answer_score'])}</td>"
            f"<td>{tool_cell}</td>"
            f'<td class="reasons">{"".join(reasons) or "—"}</td></tr>'
        )
    return (
        '<table class="turns"><colgroup><col class="c-turn"><col class="c-answer"><col class="c-tools"><col></colgroup><thead><tr><th>Turn</th><th>Answer</th><th>Tools</th><th>Reasons</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _conversations(conversations: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for index, conversation in enumerate(conversations):
        base: Path = ("per_conversation_metrics", index)
        state, label = _status(conversation)
        failing = sum(
            1 for t in range(len(conversation["correctness_scores"])) if _turn_state(conversation, t) != "pass"
        )
        summary = f"{conversation['total_interactions']} turn{'s' if conversation['total_interactions'] != 1 else ''}"
        if failing:
            summary += f" · {failing} not passing"
        opened = " open" if state != "pass" else ""
        rows.append(
            f'<tr class="conv conv-{state}" data-session="{_e(conversation["session_id"])}" data-index="{index}">'
            f'<td><span class="pill pill-{state}">{label}</span></td>'
            f'<td class="sid">{_e(conversation["session_id"])}</td>'
            f"<td>{_e(conversation['assistant_id'])}</td>"
            f"<td>{_e(conversation['task_id'] or '—')}</td>"
            f"<td>{_num((*base, 'correct_interactions'), conversation['correct_interactions'])} / "
            f"{_num((*base, 'total_interactions'), conversation['total_interactions'])}</td>"
            f'<td class="chips">{_chips(conversation, index)}</td>'
            f"<td>{_num((*base, 'pass_at_k'), conversation['pass_at_k'])}</td>"
            f"<td>{_num((*base, 'pass_pow_k'), conversation['pass_pow_k'])}</td></tr>"
            f'<tr class="detail detail-{state}"><td colspan="8"><details{opened}><summary>{_e(summary)}</summary>'
            f"{_turn_rows(conversation, index)}</details></td></tr>"
        )
    k = conversations[0]["k"] if conversations else ""
    passed = sum(1 for c in conversations if c["is_fully_correct"])
    return f"""<section id="conversations" class="card">
  <h2>Conversations</h2>
  <p class="caption">{passed} of {len(conversations)} pass: a conversation passes only if every turn passes.
  Failing conversations are expanded; failing turns are highlighted with the judge's and the tool rubric's reasons.
  Per-conversation pass@{k} / pass^{k} count turns.</p>
  <div class="scroll"><table class="data" id="conversations-table">
    <thead><tr><th>Status</th><th>Session</th><th>Assistant</th><th>Task</th><th>Turns correct</th>
    <th>Answer scores</th><th>pass@{k}</th><th>pass^{k}</th></tr></thead>
    <tbody>{"".join(rows)}</tbody>
  </table></div>
</section>"""


def _footer(agg: Mapping[str, Any], conversations: Sequence[Mapping[str, Any]]) -> str:
    thresholds = sorted({c["threshold"] for c in conversations})
    threshold = ", ".join(format_number(t) for t in thresholds) or "—"
    return (
        f"<footer>Answer threshold {_e(threshold)} · k = {agg['k']} · {_e(agg['statistical_mode'])} statistics · "
        "pass@K = 1 − (1 − p)^K, pass^K = p^K with p = fully correct ÷ scored conversations. "
        "Generated by Fair-Forge Agentic; this file is self-contained and works offline.</footer>"
    )


# --------------------------------------------------------------------------- page

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="generator" content="fair-forge-agentic">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<main id="report" data-interpretation="{interpretation}">
{body}
</main>
</body>
</html>
"""

_CSS = """
:root { --ink:#0f172a; --muted:#64748b; --line:#e2e8f0; --bg:#f4f6fb; --card:#fff;
  --pass:#16a34a; --fail:#dc2626; --warn:#d97706; --radius:14px; }
* { box-sizing:border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
  font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; }
main { max-width:1180px; margin:0 auto; padding:28px 24px 40px; }
h1 { font-size:26px; line-height:1.2; margin:2px 0 6px; letter-spacing:-0.01em; }
h2 { font-size:16px; margin:0 0 6px; letter-spacing:-0.005em; }
code { font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; background:#f1f5f9; padding:1px 4px;
  border-radius:4px; }
.card { background:var(--card); border:1px solid var(--line); border-radius:var(--radius); padding:20px 22px;
  margin-bottom:18px; box-shadow:0 1px 2px rgba(15,23,42,.04),0 4px 16px rgba(15,23,42,.04); }
.eyebrow { text-transform:uppercase; letter-spacing:.08em; font-size:11px; font-weight:600; color:var(--muted);
  margin:0; }
.hero { display:flex; gap:24px; justify-content:space-between; align-items:flex-start;
  background:linear-gradient(135deg,#ffffff 0%,#eef2ff 100%); }
.hero-text .facts { color:var(--muted); margin:0; }
.hero-tier { max-width:470px; text-align:right; }
.hero-tier .explanation { color:#334155; margin:10px 0 0; }
.conservative { margin:8px 0 0; color:var(--muted); font-size:13px; }
.tier { display:inline-flex; align-items:center; gap:8px; border-radius:999px; font-weight:650;
  padding:4px 12px; font-size:13px; border:1px solid transparent; white-space:nowrap; }
.tier .dot { width:8px; height:8px; border-radius:50%; background:currentColor; }
.tier.large { font-size:22px; padding:8px 20px; margin-top:6px; }
.tier.large .dot { width:12px; height:12px; }
.tier.small { font-size:12px; padding:2px 10px; }
.tier-reliable { color:#15803d; background:#dcfce7; border-color:#bbf7d0; }
.tier-functional { color:#1d4ed8; background:#dbeafe; border-color:#bfdbfe; }
.tier-inconsistent { color:#b45309; background:#fef3c7; border-color:#fde68a; }
.tier-needs_improvement { color:#b91c1c; background:#fee2e2; border-color:#fecaca; }
.tier-none { color:#475569; background:#f1f5f9; border-color:#e2e8f0; }
.kpis { display:grid; grid-template-columns:repeat(4,1fr); gap:14px; margin-bottom:14px; }
.kpis.minor { grid-template-columns:repeat(2,1fr); margin-bottom:18px; }
.kpi { background:var(--card); border:1px solid var(--line); border-radius:var(--radius); padding:14px 16px;
  border-top:4px solid var(--accent,#94a3b8); box-shadow:0 1px 2px rgba(15,23,42,.04); }
.kpis.minor .kpi { border-top-width:1px; padding:10px 16px; }
.kpi-label { color:var(--muted); font-size:12px; font-weight:600; text-transform:uppercase; letter-spacing:.04em; }
.kpi-value { font-size:32px; font-weight:700; letter-spacing:-0.02em; font-variant-numeric:tabular-nums;
  margin:2px 0; }
.kpis.minor .kpi-value { font-size:20px; }
.kpi-value .sep { color:#cbd5e1; margin:0 8px; font-weight:400; }
.kpi-sub { color:var(--muted); font-size:12.5px; }
.ci { color:var(--muted); font-size:12px; white-space:nowrap; }
td .ci { display:block; }
.warnings { background:#fffbeb; border-color:#fde68a; padding:14px 20px; }
.warnings h2 { color:#92400e; font-size:14px; }
.warnings ul { margin:0; padding-left:18px; color:#78350f; }
.caption { color:var(--muted); margin:0 0 12px; max-width:900px; }
.legend { list-style:none; display:flex; flex-wrap:wrap; gap:22px; padding:0; margin:4px 0 6px; color:#334155; }
.legend li { display:flex; align-items:center; gap:8px; }
.band-swatch { display:inline-block; width:28px; height:12px; border-radius:3px;
  background:linear-gradient(90deg,rgba(37,99,235,.22),rgba(234,88,12,.22)); }
.chart { width:100%; height:auto; display:block; }
.chart .grid { stroke:#e2e8f0; stroke-width:1; }
.chart .tick { fill:#64748b; font-size:12px; }
.chart .axis-label { fill:#475569; font-size:12px; font-weight:600; }
.chart .guide { stroke:#94a3b8; stroke-dasharray:3 4; }
.chart .guide-label { fill:#475569; font-size:12px; font-weight:600; }
.chart .band { opacity:.16; stroke:none; }
.chart .line { fill:none; stroke-width:3; stroke-linejoin:round; stroke-linecap:round; }
.chart .point { stroke:#fff; stroke-width:1.5; }
.chart .point-label { font-size:13px; font-weight:700; paint-order:stroke; stroke:#fff; stroke-width:4px; }
.chart .track { fill:#eef2ff; }
.chart .bar-label { fill:#334155; font-size:13px; }
.chart .bar-label.strong { font-weight:700; fill:#0f172a; }
.chart .bar-value { fill:#0f172a; font-size:13px; font-weight:700; font-variant-numeric:tabular-nums; }
#fig-pass-curves .chart { max-width:900px; margin:0 auto; }
.curve-table { border-collapse:collapse; margin-top:8px; font-size:12.5px; font-variant-numeric:tabular-nums;
  width:100%; }
.curve-table th, .curve-table td { padding:4px 8px; text-align:right; border-bottom:1px solid var(--line); }
.curve-table th:first-child { text-align:left; color:var(--muted); font-weight:600; }
.curve-table thead th { color:var(--muted); }
.tool-grid { display:grid; grid-template-columns:minmax(0,0.8fr) minmax(0,1.45fr); gap:28px; align-items:start; }
.keep-case { text-transform:none; }
.scroll { overflow-x:auto; }
table.heatmap, table.data { border-collapse:separate; border-spacing:0; width:100%; font-size:13px; }
.heatmap th, .heatmap td { padding:5px 6px; text-align:center; border-bottom:1px solid #fff; }
.heatmap thead th { color:var(--muted); font-size:11.5px; font-weight:600; border-bottom:1px solid var(--line); }
.heatmap tbody th { text-align:left; font-weight:500; max-width:190px; overflow:hidden; text-overflow:ellipsis;
  white-space:nowrap; }
.heatmap td.heat { font-variant-numeric:tabular-nums; border-left:2px solid #fff; border-radius:4px; }
table.data th, table.data td { padding:9px 10px; text-align:left; border-bottom:1px solid var(--line);
  vertical-align:middle; }
table.data thead th { color:var(--muted); font-size:11.5px; font-weight:600; text-transform:uppercase;
  letter-spacing:.04em; background:#f8fafc; }
table.data .num { font-variant-numeric:tabular-nums; }
.meter { display:inline-block; width:70px; height:8px; background:#f1f5f9; border-radius:99px; margin-right:8px;
  vertical-align:middle; overflow:hidden; }
.meter span { display:block; height:100%; border-radius:99px; }
.pill { display:inline-block; font-size:11.5px; font-weight:700; padding:2px 10px; border-radius:99px;
  letter-spacing:.03em; text-transform:uppercase; }
.pill-pass { background:#dcfce7; color:#15803d; }
.pill-fail { background:#fee2e2; color:#b91c1c; }
.pill-unscored { background:#fef3c7; color:#b45309; }
tr.conv-fail td { background:#fffafa; }
tr.conv td.sid { font-weight:600; white-space:nowrap; }
.chips { white-space:nowrap; }
.chip { display:inline-block; min-width:42px; text-align:center; font-size:12px; font-weight:600;
  padding:1px 6px; margin-right:4px; border-radius:6px; font-variant-numeric:tabular-nums; }
.chip-pass { background:#dcfce7; color:#166534; }
.chip-fail { background:#fecaca; color:#991b1b; }
.chip-unscored { background:#fef3c7; color:#92400e; }
table.data tr.conv td { border-bottom:none; padding-bottom:2px; }
tr.detail > td { padding:0 10px 10px 34px; }
tr.detail-pass > td { padding-bottom:6px; }
details summary { cursor:pointer; color:var(--muted); font-size:12.5px; padding:2px 0; }
table.turns { width:100%; border-collapse:collapse; margin:6px 0 4px; font-size:12.5px; table-layout:fixed; }
.turns col.c-turn { width:150px; } .turns col.c-answer { width:96px; } .turns col.c-tools { width:96px; }
.turns th { text-align:left; color:var(--muted); font-weight:600; padding:4px 8px; border-bottom:1px solid var(--line); }
.turns td { padding:6px 8px; border-bottom:1px solid #f1f5f9; vertical-align:top; }
.turns td.qa { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; overflow-wrap:anywhere; }
tr.turn-fail td { background:#fef2f2; }
tr.turn-fail td:first-child { box-shadow:inset 3px 0 0 var(--fail); }
tr.turn-unscored td { background:#fffbeb; }
tr.turn-unscored td:first-child { box-shadow:inset 3px 0 0 var(--warn); }
.mark { font-weight:800; }
.mark-pass { color:var(--pass); }
.mark-fail { color:var(--fail); }
.mark-unscored { color:var(--warn); }
.reason { margin:0 0 2px; color:#334155; }
.reason.error { color:#92400e; }
.empty { color:var(--muted); font-style:italic; }
footer { color:var(--muted); font-size:12px; text-align:center; margin-top:8px; }
@media (max-width: 900px) {
  .kpis { grid-template-columns:repeat(2,1fr); }
  .hero, .tool-grid { display:block; }
  .hero-tier { text-align:left; margin-top:12px; }
}
@media print { body { background:#fff; } .card, .kpi { box-shadow:none; } details { display:block; } }
"""
