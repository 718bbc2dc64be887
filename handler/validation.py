"""From an HTTP body to a validated `RunRequest`, or a `RequestError` naming what is wrong.

Checks run in this order, so each case gets the source README's message:
size (413) → JSON → object → connector → class_path → datasets → turns → limits
(413) → field-by-field validation (400, with `details`). Validation messages name
the field (`datasets[0].conversation[1].query`) and never echo the value, which
could be a key.
"""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

import fair_forge_core.checks  # noqa: F401  (loads the checks, plug-ins included, that validate config.checks)

# The request model and the error paths are the core's, shared with the CLI.
from fair_forge_core.schemas import (
    MAX_CONNECTORS,
    ConnectorSpec,
    RunRequest,
    TracesRunRequest,
    describe_json_error,
    error_message,
    field_path,
    loads_json,
)
from fair_forge_core.sharing import share_repeated_values
from fair_forge_core.stats import CURVE_MIN_K
from handler.settings import Settings

__all__ = [
    "ConnectorSpec",
    "RequestError",
    "RunRequest",
    "check_connector",
    "check_shape",
    "datasets_body_from_traces",
    "decode_body",
    "field_path",
    "parse_run_request",
    "validation_details",
]


@dataclass
class RequestError(Exception):
    """A client error: HTTP `status`, a one-line `message`, optional per-field `details`."""

    status: int
    message: str
    details: list[dict[str, str]] = field(default_factory=list)


def decode_body(body: str | None, is_base64: bool, settings: Settings) -> dict[str, Any]:
    """The JSON object in a proxy event's body: 413 when too large, 400 when not a JSON object."""
    raw = body or ""
    if is_base64:
        try:
            data = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError):
            raise RequestError(400, "Invalid base64 body") from None
    else:
        data = raw.encode("utf-8", errors="surrogatepass")
    if len(data) > settings.max_body_bytes:
        raise RequestError(413, f"Request body too large: {len(data)} bytes (limit {settings.max_body_bytes})")
    try:
        parsed = loads_json(data)
    except ValueError as exc:  # JSONDecodeError (with its line and column), NonFiniteNumber, bad UTF-8
        raise RequestError(400, f"Invalid JSON body: {describe_json_error(exc)}") from None
    except RecursionError:
        raise RequestError(400, "Invalid JSON body: nested too deeply") from None
    if not isinstance(parsed, dict):
        raise RequestError(400, f"Request body must be a JSON object, got {type(parsed).__name__}")
    return parsed


def check_connector(body: dict[str, Any], *, ensemble: bool = True) -> None:
    """The source's first checks of `connector`: present, an object with a class path; or,
    where an `ensemble` is taken (`POST /run`), a list of up to `MAX_CONNECTORS` of them."""
    connector = body.get("connector")
    if connector is None or connector == {} or connector == []:
        raise RequestError(400, "No connector configuration provided")
    if ensemble and isinstance(connector, list):
        if len(connector) > MAX_CONNECTORS:
            message = f"an ensemble has at most {MAX_CONNECTORS} connectors, got {len(connector)}"
            raise RequestError(400, f"connector: {message}", [{"field": "connector", "message": message}])
        for i, item in enumerate(connector):
            _check_one_connector(item, f"connector[{i}]", "an object")
        return
    _check_one_connector(connector, "connector", "an object or a list of objects" if ensemble else "an object")


def _check_one_connector(connector: Any, where: str, expected: str) -> None:
    if not isinstance(connector, dict):
        raise RequestError(400, f"{where} must be {expected}", [{"field": where, "message": f"not {expected}"}])
    if not connector.get("class_path"):
        raise RequestError(400, f"{where}.class_path is required")


def _check_presence(body: dict[str, Any]) -> None:
    check_connector(body)
    datasets = body.get("datasets")
    if datasets is None or datasets == []:
        raise RequestError(400, "No datasets provided")
    if not isinstance(datasets, list):
        raise RequestError(400, "datasets must be a list", [{"field": "datasets", "message": "not a list"}])
    turns = [d.get("conversation") for d in datasets if isinstance(d, dict)]
    if not any(isinstance(t, list) and t for t in turns):
        raise RequestError(400, "No qa_ids found in datasets")


def _check_limits(body: dict[str, Any], settings: Settings) -> None:
    datasets = body["datasets"]
    if len(datasets) > settings.max_conversations:
        raise RequestError(
            413, f"Too many conversations: {len(datasets)} (limit {settings.max_conversations} per request)"
        )
    turns = sum(
        len(d["conversation"]) for d in datasets if isinstance(d, dict) and isinstance(d.get("conversation"), list)
    )
    if turns > settings.max_turns:
        raise RequestError(413, f"Too many turns: {turns} (limit {settings.max_turns} per request)")
    check_shape(body, settings)  # first: the work limits walk values, which must not be nested too deeply
    _check_work_limits(datasets, settings)


def check_shape(body: dict[str, Any], settings: Settings) -> None:
    """413 for a string longer than the limit, 400 for nesting deeper than the limit."""
    longest, depth = _measure(body)
    if longest > settings.max_string_chars:
        raise RequestError(
            413, f"A text field in the request has {longest} characters (limit {settings.max_string_chars})"
        )
    if depth > settings.max_nesting_depth:
        raise RequestError(400, f"The request is nested {depth} levels deep (limit {settings.max_nesting_depth})")


def _check_work_limits(datasets: list[Any], settings: Settings) -> None:
    """413 when the deterministic work would be unbounded: tool calls per turn (each list), tool
    calls in all, distinct assistants, the options of one ``$any_of`` and the rule work
    (`_rule_work`). Read from the raw JSON, before any model is built."""
    total = rule_work = 0
    assistants: set[Any] = set()
    lists = (("agentic", "tools_used"), ("ground_truth_agentic", "expected_tools"))
    for d, dataset in enumerate(datasets):
        if not isinstance(dataset, dict):
            continue
        if isinstance(dataset.get("assistant_id"), str):
            assistants.add(dataset["assistant_id"])
        if dataset.get("expected_state") is not None:
            rule_work += _rule_work(dataset["expected_state"], 1, f"datasets[{d}].expected_state", settings)
        conversation = dataset.get("conversation")
        for t, batch in enumerate(conversation if isinstance(conversation, list) else []):
            if not isinstance(batch, dict) or ("agentic" not in batch and "ground_truth_agentic" not in batch):
                continue  # most turns: no tools at all
            rule_work += _turn_rule_work(batch, f"datasets[{d}].conversation[{t}]", settings)
            for container, name in lists:
                trace = batch.get(container)
                calls = trace.get(name) if isinstance(trace, dict) else None
                if not isinstance(calls, list):
                    continue
                if len(calls) > settings.max_tool_calls_per_turn:
                    raise RequestError(
                        413,
                        f"Too many tool calls in datasets[{d}].conversation[{t}].{container}.{name}: {len(calls)} "
                        f"(limit {settings.max_tool_calls_per_turn} per turn)",
                    )
                total += len(calls)
    if total > settings.max_tool_calls:
        raise RequestError(413, f"Too many tool calls: {total} (limit {settings.max_tool_calls} per request)")
    if rule_work > settings.max_rule_work:
        raise RequestError(
            413,
            f"Too much rule work: {rule_work} (limit {settings.max_rule_work} per request): each expected "
            "call's argument rules count once for every used call of its tool in the turn (docs/limits.md)",
        )
    if len(assistants) > settings.max_assistants:
        raise RequestError(
            413, f"Too many assistants: {len(assistants)} distinct assistant_id (limit {settings.max_assistants})"
        )


def _turn_rule_work(batch: dict[str, Any], where: str, settings: Settings) -> int:
    """The rule work of one turn: for each expected call, its parameters' `rule_cost` work times
    the used calls of its tool (the pairs the rubric and the trajectory match compare)."""
    truth, trace = batch.get("ground_truth_agentic"), batch.get("agentic")
    expected = truth.get("expected_tools") if isinstance(truth, dict) else None
    if not isinstance(expected, list):
        return 0
    used = trace.get("tools_used") if isinstance(trace, dict) else None
    used_names = Counter(  # a name that is no string is refused field by field later; unhashable here
        call["tool_name"]
        for call in (used if isinstance(used, list) else [])
        if isinstance(call, dict) and isinstance(call.get("tool_name"), str)
    )
    work = 0
    for i, call in enumerate(expected):
        if not isinstance(call, dict) or not isinstance(call.get("tool_name"), str):
            continue  # refused field by field later
        pairs = used_names.get(call["tool_name"], 0)
        parameters = f"{where}.ground_truth_agentic.expected_tools[{i}].parameters"
        work += _rule_work(call.get("parameters"), pairs, parameters, settings)
    return work


def _rule_work(expected: Any, comparisons: int, where: str, settings: Settings) -> int:
    """`comparisons` × the `rule_cost` work of the expected value at `where`; 413 naming `where`
    when one of its ``$any_of`` has more options than the limit."""
    from fair_forge_core.tools.rules import rule_cost

    cost = rule_cost(expected)
    if cost.widest_any_of > settings.max_any_of_options:
        raise RequestError(
            413,
            f"Too many $any_of options in {where}: {cost.widest_any_of} "
            f"(limit {settings.max_any_of_options} per $any_of)",
        )
    return cost.work * comparisons


def _measure(value: Any) -> tuple[int, int]:
    """The longest string and the deepest nesting in a JSON value, without recursion.

    Depth is bounded because tool parameters are compared recursively: an
    arbitrarily deep value must be refused here rather than overflow the stack later.
    """
    longest, depth, level = 0, 0, [value]
    while level:  # one nesting level at a time: no (value, depth) pair per item, ~3x faster
        depth += 1
        children: list[Any] = []
        strings: list[str] = []  # the level's strings and keys, measured in one `max` at the end
        for item in level:
            kind = type(item)  # the exact types json.loads makes first; isinstance for their subclasses
            if kind is str:
                strings.append(item)
            elif kind is dict:
                children += item.values()
                strings += item
            elif kind is list:
                children += item
            elif isinstance(item, str):
                strings.append(item)
            elif isinstance(item, dict):
                children += item.values()
                strings += item
            elif isinstance(item, list):
                children += item
        if strings:
            longest = max(longest, max(map(len, strings)))
        level = children
    return longest, depth


MAX_IMPORT_WARNINGS = 20
"""Import warnings a response carries; more are counted in one last line (the CLI prints all)."""


def datasets_body_from_traces(body: dict[str, Any], settings: Settings) -> tuple[dict[str, Any], list[str]]:
    """A body with `traces` (`TracesRunRequest`) as the body with the `datasets` they give,
    and the import's warnings; any other body as it is, with none.

    The traces body is checked like any other (connector first, nesting and string
    lengths, then field by field); a trace or reference that cannot be read is a 400
    naming it (`traces.items[2].messages[5].tool_call_id`); an attempt that cannot be joined
    to the references is a conversation unscored with its cause (`Dataset.unscored`, counted in
    the first warning and in `aggregated_metrics.unscored_by_cause`), and a 400 when no trace
    was joined; the datasets are then checked by `parse_run_request`, limits included.
    """
    if "traces" not in body:
        return body, []
    if "datasets" in body:
        raise RequestError(400, "Send datasets or traces, not both")
    check_connector(body)
    check_shape(body, settings)
    try:
        request = TracesRunRequest.model_validate(body)
    except ValidationError as exc:
        raise _invalid_request(exc, TracesRunRequest) from None
    from fair_forge_core.importers import TraceError, datasets_from_traces, request_field, unjoined_causes

    try:
        datasets, warnings, _ = datasets_from_traces(
            request.traces.format, request.traces.items, request.references, task_key=request.task_key
        )
    except TraceError as exc:
        where = request_field(exc.field)
        raise RequestError(
            400, f"Invalid traces: {where}: {exc.problem}", [{"field": where, "message": exc.problem}]
        ) from None
    if len(datasets) == sum(unjoined_causes(datasets).values()):  # none joined: nothing to judge
        raise RequestError(
            400,
            "No trace could be evaluated (none matched a task of the references with every turn's "
            "reference and the end state its task expects): nothing to evaluate",
            [{"field": "references", "message": warning} for warning in warnings[:MAX_IMPORT_WARNINGS]],
        )
    if len(warnings) > MAX_IMPORT_WARNINGS:
        warnings = [
            *warnings[:MAX_IMPORT_WARNINGS],
            f"… and {len(warnings) - MAX_IMPORT_WARNINGS} more import warnings",
        ]
    expanded = {"connector": body["connector"], "datasets": datasets, "config": body.get("config", {})}
    return expanded, warnings


def validation_details(error: ValidationError, model: type[BaseModel]) -> list[dict[str, str]]:
    """Pydantic errors of validating `model` as `{"field", "message"}` pairs, without the
    offending values; an unknown key's message names the nearest accepted key (`error_message`)."""
    return [
        {"field": field_path(e["loc"]) or "body", "message": error_message(model, e)}
        for e in error.errors(include_input=False)
    ]


def parse_run_request(body: dict[str, Any], settings: Settings, *, share_repeated: bool = False) -> RunRequest:
    """A validated `RunRequest`, or a `RequestError` (see the module docstring for the order).

    With `share_repeated`, once the limits hold, `body`'s repeated turn data is shared in place
    before validation (`fair_forge_core.sharing.share_repeated_values`): the same request, fewer
    objects, but a body that then holds models, no longer JSON data: only for a caller that lets
    go of it afterwards (`POST /run`; `POST /jobs` stores its body)."""
    _check_presence(body)
    _check_limits(body, settings)
    if share_repeated:
        # Repeated turn data (attempts of one task, a shared test set) validated into one object
        # each: the copies are never built, and the tool rubric finds repeats by identity.
        share_repeated_values(body["datasets"])
    try:
        request = RunRequest.model_validate(body)
    except ValidationError as exc:
        raise _invalid_request(exc, RunRequest) from None
    _check_curve_points(request, settings)
    _check_compared_assistants(request)
    return request


def check_judge_batch(request: RunRequest, *, on_jobs: bool, agent_job: bool = False) -> None:
    """400 naming the field when `config.judge_batch` cannot be honoured: anywhere but a datasets
    job of `POST /jobs` (a batch takes up to 24 hours; an agent job judges its attempts as they
    run), or with a connector whose provider has no batch API here (`judges.batch.batch_refusal`)."""
    if not request.config.judge_batch:
        return
    field = "config.judge_batch"
    message = None
    if not on_jobs:
        message = "batch judging takes up to 24 hours: send this request to POST /jobs, or leave judge_batch out"
    elif agent_job:
        message = "a job that runs the agent judges its attempts as they run: judge_batch is for a job of datasets"
    if message is None:
        from fair_forge_core.judges.batch import batch_refusal

        listed = isinstance(request.connector, list)
        for number, connector in enumerate(request.connectors):
            refusal = batch_refusal(connector.class_path, connector.params)
            if refusal is not None:
                field, message = f"connector{f'[{number}]' if listed else ''}.class_path", refusal
                break
    if message is not None:
        raise RequestError(400, f"Invalid request: {field}: {message}", [{"field": field, "message": message}])


def _check_compared_assistants(request: RunRequest) -> None:
    """400 when `config.compare` names an assistant no conversation has (a typo would
    otherwise compare nothing)."""
    if request.config.compare is None:
        return
    present = sorted({d.assistant_id for d in request.datasets})
    for side in ("baseline", "candidate"):
        name = getattr(request.config.compare, side)
        if name not in present:
            field = f"config.compare.{side}"
            message = f"no conversation has assistant_id {name!r} (assistant_id values: {', '.join(present[:10])})"
            raise RequestError(400, f"Invalid request: {field}: {message}", [{"field": field, "message": message}])


def _invalid_request(error: ValidationError, model: type[BaseModel]) -> RequestError:
    details = validation_details(error, model)
    first = details[0]
    more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
    return RequestError(400, f"Invalid request: {first['field']}: {first['message']}{more}", details)


def _check_curve_points(request: RunRequest, settings: Settings) -> None:
    """413 when the curves would be too long: max(k, 10) points for the aggregate and, with
    several assistants, for each of them (each point is computed and sent)."""
    assistants = len({d.assistant_id for d in request.datasets})
    curves = 1 + (assistants if assistants > 1 else 0)
    points = curves * max(request.config.k, CURVE_MIN_K)
    if points > settings.max_curve_points:
        raise RequestError(
            413,
            f"Too many curve points: {curves} curve(s) × max(k, {CURVE_MIN_K}) = {points} "
            f"(limit {settings.max_curve_points}); lower config.k or send fewer assistants",
        )
