"""Langfuse v4 observations pages (`GET /api/public/v2/observations`) → Langfuse traces.

Langfuse v4 reads a trace as its observations: `GET /api/public/traces/{traceId}` is deprecated
for `GET /api/public/v2/observations?traceId=…` (or `sessionId=…`), and the trace's input and
output are its root observation's. A page is the SDK's `ObservationsV2Response`: ``{"data":
[ObservationV2, …], "meta": {"cursor"?}}``, an observation ``{"id", "traceId", "startTime",
"endTime", "projectId", "parentObservationId", "type", "isRootObservation", "name", "level",
"statusMessage", "sessionId", "userId", "environment", "version", "input", "output",
"metadata", "model", "usageDetails", "costDetails", "totalCost", "latency", "traceName",
"tags", "release", …}`` (only the field groups asked for with `fields`; `input` and `output`
are always raw text). This module turns such pages into the trace objects `langfuse` reads
(`GET /api/public/traces/{traceId}`'s shape), each with its observations, so that both reads
share every rule after this one. The input, exactly:

- one page (an object whose `data` is a list of observations: objects with `type` and
  `startTime` and no `observations`), or a list of pages (what the SDK's
  `iter_observation_pages` yields; empty pages are fine, only empty pages an error naming
  `pages`); a page is told by its first row; fields are named ``data[k]…`` and
  ``pages[p].data[k]…``. A page as the SDK's pydantic `model_dump` writes it (snake_case:
  `trace_id`, `start_time`, `parent_observation_id`, …) is read the same: a snake_case key is
  read as its camelCase name when that name is absent;
- observations are grouped into traces by `traceId` (a non-empty string, else an error naming
  it), traces in the order their first observation comes; an observation whose `id` its trace
  already has (pages may repeat a row: the SDK does not deduplicate) is left out, said;
- when no observation has an `input` or `output` key (the endpoint's default field groups,
  `core` and `basic`, leave them out), that is an error saying to ask for the `io` group;
- `input` and `output` text that holds JSON (an object, a list or a string: text starting with
  ``{``, ``[`` or ``"``) is read as that JSON, other text as it is;
- a trace's root is its first observation (in `startTime` order; unreadable times: input
  order) with `isRootObservation` true, else its first without a `parentObservationId` in the
  trace, else its first. The trace is: `id` its `traceId`; `timestamp` the root's `startTime`;
  `name` the root's `traceName`, else its `name`; `input`, `output` and `metadata` the root's;
  `sessionId`, `userId`, `environment`, `release`, `version` and `tags` the first observation's
  that has one (Langfuse writes them on every observation); `totalCost` the sum of its
  observations' `totalCost` (None when none has one); `latency` the root's `latency`, else its
  `endTime` − `startTime` in seconds (None when either is unreadable).

Metadata values over 200 characters come truncated unless asked for with `expandMetadata`
(Langfuse's default): what the page holds is what is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from datetime import UTC, datetime
from typing import Any

from fair_forge_core.importers.trace import TraceError, parse_json_text

Item = tuple[dict[str, Any], str]  # an object of the input and its field path
_SNAKE = re.compile(r"_([a-z0-9])")
_TRACE_FIELDS = ("sessionId", "userId", "environment", "release", "version", "tags")


@dataclass
class Trace:
    """A trace to read: its fields (`langfuse`'s legacy shape), its path, its observations with
    their paths (None: the trace's own `observations`), the field of its time, and what was
    decided in building it (`warnings`)."""

    fields: dict[str, Any]
    where: str
    observations: list[Item] | None = None
    clock: str = "timestamp"
    warnings: list[str] = dataclass_field(default_factory=list)


def is_observation(value: Any) -> bool:
    """Whether `value` is a v2 observation (camelCase or snake_case), not a legacy trace."""
    if not isinstance(value, dict) or "observations" in value or "type" not in value:
        return False
    return "startTime" in value or "start_time" in value


def observation_pages(data: Any) -> list[tuple[list[Any], str]] | None:
    """`(observations, path of the list)` of each page of `data` when it is one v2 observations
    page or a list of them (module docstring), else None (it is a legacy trace input)."""
    if _is_page(data, empty=False):
        return [(data["data"], "data")]
    if isinstance(data, list) and data and all(_is_page(page, empty=True) for page in data):
        return [(page["data"], f"pages[{n}].data") for n, page in enumerate(data)]
    return None


def _is_page(value: Any, *, empty: bool) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("data"), list):
        return False
    items = value["data"]
    return (empty and not items) or (bool(items) and is_observation(items[0]))


def traces_of_pages(pages: list[tuple[list[Any], str]]) -> list[Trace]:
    """The traces the observations of `pages` make (module docstring)."""
    items = [(raw, f"{root}[{n}]") for observations, root in pages for n, raw in enumerate(observations)]
    if not items:  # only a list of pages gets here without a row: every page is empty
        raise TraceError("pages", "holds no observation (every page's data is empty)")
    traces = traces_of_observations(items)
    if not any("input" in o or "output" in o for trace in traces for o, _ in trace.observations or []):
        # the endpoint's default field groups are core and basic: no content at all
        raise TraceError(
            pages[0][1], "no observation has input or output: fetch them with fields=core,basic,io,metadata,usage"
        )
    return traces


def traces_of_observations(items: list[tuple[Any, str]]) -> list[Trace]:
    """The traces of the observations `items` (each with its field path): checked, read as
    camelCase, grouped by `traceId` with repeated rows left out (module docstring); also what
    `langfuse_otlp` hands its observations to."""
    grouped: dict[str, list[Item]] = {}
    seen: dict[str, set[Any]] = {}
    repeated: dict[str, list[str]] = {}
    for raw, here in items:
        if not isinstance(raw, dict):
            raise TraceError(here, "an observation is an object")
        observation = _camel(raw)
        trace_id = observation.get("traceId")
        if not isinstance(trace_id, str) or not trace_id:
            raise TraceError(f"{here}.traceId", "must be a non-empty string (the trace the observation is in)")
        key = observation.get("id")
        if key is not None and key in seen.setdefault(trace_id, set()):
            repeated.setdefault(trace_id, []).append(f"{here}: the observation {key!r} again; left out")
            continue
        seen[trace_id].add(key)
        grouped.setdefault(trace_id, []).append((observation, here))
    return [_trace(trace_id, items, repeated.get(trace_id, [])) for trace_id, items in grouped.items()]


def _camel(observation: dict[str, Any]) -> dict[str, Any]:
    """`observation` with each snake_case key also under its camelCase name (when absent) and
    `input` / `output` JSON text read as JSON (module docstring)."""
    camel = dict(observation)
    for key, value in observation.items():
        if "_" in key:
            camel.setdefault(_SNAKE.sub(lambda m: m.group(1).upper(), key), value)
    for key in ("input", "output"):
        if key in camel:
            camel[key] = _parsed(camel[key])
    return camel


def _parsed(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "[", '"'):
        return parse_json_text(value, value)
    return value


def utc_time(value: Any) -> datetime | None:
    """An ISO 8601 time in UTC (without an offset: UTC), or None when it is not one."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except (ValueError, OverflowError):
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def in_time_order(items: list[Item], field: str) -> tuple[list[Item], str | None]:
    """`items` sorted by the time in `field` (stable), or as they are with the path of the first
    that has no readable time."""
    times = [utc_time(item.get(field)) for item, _ in items]
    missing = next((where for (_, where), moment in zip(items, times, strict=True) if moment is None), None)
    if missing is not None:
        return items, missing
    order = sorted(range(len(items)), key=lambda n: times[n] or datetime.min.replace(tzinfo=UTC))
    return [items[n] for n in order], None


def _root(items: list[Item]) -> Item:
    ids = {observation.get("id") for observation, _ in items}
    flagged = [item for item in items if item[0].get("isRootObservation") is True]
    parentless = [item for item in items if item[0].get("parentObservationId") not in ids]
    return (flagged or parentless or items)[0]


def _trace(trace_id: str, items: list[Item], warnings: list[str]) -> Trace:
    ordered, _ = in_time_order(items, "startTime")  # unreadable times: input order (`langfuse` says so)
    root, where = _root(ordered)
    fields: dict[str, Any] = {
        "id": trace_id,
        "timestamp": root.get("startTime"),
        "name": root.get("traceName") or root.get("name"),
        "input": root.get("input"),
        "output": root.get("output"),
        "metadata": root.get("metadata"),
        "totalCost": _total_cost(ordered),
        "latency": _latency(root),
    }
    for name in _TRACE_FIELDS:
        fields[name] = next((o[name] for o, _ in ordered if o.get(name) not in (None, "", [])), None)
    return Trace(fields, where, items, "startTime", warnings)


def _total_cost(items: list[Item]) -> float | None:
    costs = [o["totalCost"] for o, _ in items if _is_number(o.get("totalCost"))]
    return sum(costs) if costs else None


def _latency(root: dict[str, Any]) -> float | None:
    if _is_number(root.get("latency")):
        return float(root["latency"])
    start, end = utc_time(root.get("startTime")), utc_time(root.get("endTime"))
    return (end - start).total_seconds() if start is not None and end is not None else None


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
