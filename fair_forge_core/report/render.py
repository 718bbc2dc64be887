"""Rendering the report: the result validated, then written by the Jinja2 templates in `templates/`.

Jinja2 is imported on the first render, not with this module: the Lambda imports the
report only for `?format=html`, and its JSON path must not pay for a template engine.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import fair_forge_core.report.charts as charts
from fair_forge_core.report.judge_views import corrected_name
from fair_forge_core.report.values import TOOL_DIMENSIONS, format_number, format_significant, percent, to_json
from fair_forge_core.report.view import STABILITY_PILLS, Report
from fair_forge_core.schemas import EvaluationResult

if TYPE_CHECKING:
    from jinja2 import Environment


class ReportError(ValueError):
    """The input is not an evaluation result (for example, an error response)."""


def render_html(result: EvaluationResult | Mapping[str, Any], *, title: str = "Agent evaluation report") -> str:
    """The report of `result` as one self-contained HTML document.

    `result` is an `EvaluationResult` or its JSON form; a `request_id` key (present in
    `POST /run` responses) is shown, not required. Raises `ReportError` for an error
    response (`"success": false`) and pydantic's `ValidationError`, naming the field,
    for anything else that is not a result.
    """
    data, request_id = _result_data(result)
    report = Report(title=title, request_id=request_id, data=data)
    return _environment().get_template("report.html.j2").render(report=report)


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


@functools.cache
def _environment() -> Environment:
    """The templates' environment, built once per process (warm Lambda invocations reuse it)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined
    from markupsafe import Markup

    def escape(value: Any) -> Any:
        # Autoescaping with html.escape rather than markupsafe's escape: both escape the
        # same five characters, but the report has always spelt quotes `&quot;` and
        # `&#x27;` (markupsafe writes `&#34;` and `&#39;`), and its readers and tests
        # look for that spelling. Template output (macros, blocks) is already Markup
        # and passes through; every other value is escaped here, whatever it is.
        if hasattr(value, "__html__"):
            return value
        return Markup(html.escape(str(value), quote=True))

    environment = Environment(
        loader=PackageLoader("fair_forge_core.report", "templates"),
        autoescape=True,
        finalize=escape,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,  # the templates ship inside the package: no need to stat them on every render
    )
    environment.filters.update(
        number=format_number,
        significant=format_significant,
        json=to_json,
        percent=percent,
        coord=charts.coord,
        points=charts.svg_points,
        heat=charts.heat_colour,
        meter=charts.meter_percent,
    )
    environment.globals.update(
        PASS_AT_COLOUR=charts.PASS_AT_COLOUR,
        PASS_POW_COLOUR=charts.PASS_POW_COLOUR,
        TOOL_DIMENSIONS=TOOL_DIMENSIONS,
        AGGREGATE=("aggregated_metrics",),
        STABILITY_PILLS=STABILITY_PILLS,
        corrected_name=corrected_name,
    )
    return environment
