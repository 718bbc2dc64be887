"""`POST /run` (a synchronous evaluation), `GET /health` and `GET /schema`.

Thin: the request is validated (`handler.validation`), the judge built
(`handler.connectors`), and the evaluation run by `fair_forge_core.evaluate`.

Import cost matters (cold start): LangChain, the providers and the evaluation
core are imported on the first request that needs them, not here.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router

from fair_forge_core.connectors import connector_loadable
from fair_forge_core.judges.reply_limit import MAX_JUDGE_REPLY_BYTES
from fair_forge_core.schemas import MAX_K as EVALUATION_MAX_K
from handler import __version__
from handler.connectors import allowed_connectors, plan_for_request
from handler.invocation import api_key_id, deadline
from handler.judged_run import judged_run
from handler.observability import log_level, logger, readiness_fields, secrets_masked
from handler.responses import RunResponse, error_response, payload_size, request_id
from handler.settings import Settings
from handler.validation import (
    RequestError,
    check_judge_batch,
    datasets_body_from_traces,
    decode_body,
    parse_run_request,
)

router = Router()


@router.get("/health")
def health() -> dict[str, Any]:
    settings = Settings.from_env()
    connectors = sorted(set(allowed_connectors(settings).values()))
    return {
        "status": "ok",
        "version": __version__,
        "connectors": connectors,
        # Allowed is not installed: an optional provider's package may be absent from this image.
        "connectors_loadable": {class_path: connector_loadable(class_path) for class_path in connectors},
        "limits": {
            "max_body_bytes": settings.max_body_bytes,
            "max_conversations": settings.max_conversations,
            "max_turns": settings.max_turns,
            "max_string_chars": settings.max_string_chars,
            "max_tool_calls_per_turn": settings.max_tool_calls_per_turn,
            "max_tool_calls": settings.max_tool_calls,
            "max_any_of_options": settings.max_any_of_options,
            "max_rule_work": settings.max_rule_work,
            "max_assistants": settings.max_assistants,
            "max_curve_points": settings.max_curve_points,
            "max_calibration_pairs": settings.max_calibration_pairs,
            "max_k": EVALUATION_MAX_K,
            "max_judge_reply_bytes": MAX_JUDGE_REPLY_BYTES,
            "sync_budget_s": settings.sync_budget_s,
        },
        "jobs": {
            "enabled": bool(settings.jobs_bucket and settings.jobs_state_machine_arn),
            "max_conversations": settings.jobs_max_conversations,
            "max_turns": settings.jobs_max_turns,
            "max_tool_calls": settings.jobs_max_tool_calls,
            "max_rule_work": settings.jobs_max_rule_work,
            "shard_size": settings.shard_size,
            "shard_max_turns": settings.shard_max_turns,
        },
    }


@router.get("/schema")
def schema() -> dict[str, Any]:
    """The JSON Schemas of the request and of the 200 response (`handler.api_schema`)."""
    from handler.api_schema import request_schema, response_schema

    return {"request": request_schema(), "response": response_schema()}


@router.post("/run")
def run() -> Response:
    settings = Settings.from_env()
    event = router.current_event
    _response_format()  # an unknown ?format= is refused before any work
    body, import_warnings = datasets_body_from_traces(
        decode_body(event.body, bool(event.is_base64_encoded), settings), settings
    )
    # The decoded JSON is not needed past validation: its repeated turn data is shared into the
    # models (`share_repeated`), and it is freed now rather than held through the evaluation
    # (for 50,000 turns, ~70 MB of dicts and lists, until the response is built).
    request = parse_run_request(body, settings, share_repeated=True)
    check_judge_batch(request, on_jobs=False)
    del body
    verbose = request.config.verbose
    with log_level("DEBUG" if verbose else None):
        # The cache, when asked for, is scoped to the API key that made the request.
        plan = plan_for_request(
            request, settings, import_warnings=import_warnings, api_key_id=api_key_id(router.current_event)
        )
        with secrets_masked(plan.secrets):
            return _evaluate(request, plan, settings)


def _evaluate(request: Any, plan: Any, settings: Settings) -> Response:
    from fair_forge_core.judges.base import RunContext
    from fair_forge_core.plan import execute

    ledger = plan.ledger
    turns = sum(len(d.conversation) for d in request.datasets)
    logger.info(
        "evaluation started",
        extra={
            "conversations": len(request.datasets),
            "turns": turns,
            "class_path": ", ".join(spec.class_path for spec in request.connectors),
            "judge_samples": request.config.judge_samples,
        },
    )
    # The metrics and the 502 of a failed judging (`JudgedRunFailed`, `handler.app`): `handler.judged_run`.
    with judged_run("evaluation", {"Conversations": len(request.datasets), "Turns": turns}, ledger) as judged:
        telemetry = judged.telemetry
        context = RunContext(
            deadline=deadline(settings, router.lambda_context), retry=settings.retry_policy(), telemetry=telemetry
        )
        result = judged.run(execute(plan, context))
    started, elapsed = judged.started, judged.elapsed_s
    usage = ledger.summary()
    response = _result_response(result, settings)
    aggregated = result.aggregated_metrics
    after_judge_s = time.perf_counter() - (telemetry.judging_ended_at or started)
    logger.info(
        "evaluation finished",
        extra={
            "duration_ms": round(elapsed * 1000),
            "judging_ms": round(telemetry.judging_s * 1000),
            "after_judge_ms": round(after_judge_s * 1000),  # aggregation and response: past the deadline
            "judge_calls": telemetry.calls,
            "judge_retries": telemetry.retries,
            "judge_rate_limited": telemetry.rate_limited,
            "judge_errors": telemetry.errors,
            "judge_parse_failures": telemetry.parse_failures,  # replies that did not parse (billed; retried while attempts remain)
            "judge_model": usage.model,
            "judge_input_tokens": usage.input_tokens,
            "judge_output_tokens": usage.output_tokens,
            "judge_cached_input_tokens": usage.cached_input_tokens,
            "judge_calls_without_usage": usage.calls_without_usage,
            "judge_cost_usd": usage.cost_usd,
            "judge_cache_hits": usage.cache_hits,
            "judge_cache_misses": usage.cache_misses,
            "judge_cache_errors": ledger.total_cache_errors,  # failed reads and writes of the store: not in the response
            "cascade_settled_offline": usage.cascade_settled_offline,
            "cascade_sent_to_llm": usage.cascade_sent_to_llm,
            **_consensus_fields(aggregated.judge_consensus),
            "scored_conversations": aggregated.total_conversations,
            "unscored_conversations": aggregated.unscored_conversations,
            "interpretation": aggregated.interpretation,
            **readiness_fields(aggregated.readiness),
        },
    )
    _log_verbose_detail(result.per_conversation_metrics)
    return response


def _consensus_fields(consensus: Any) -> dict[str, Any]:
    """The log fields of `judge_consensus` (none when turns were judged once)."""
    if consensus is None:
        return {}
    return {
        "judge_samples": consensus.samples,
        "judge_members": len(consensus.members),
        "judge_consistency_rate": consensus.consistency_rate,
        "judge_agreement_rate": consensus.agreement_rate,
        "judge_panel_unscored_turns": consensus.unscored_turns,
    }


VERBOSE_LOG_CONVERSATIONS = 100
VERBOSE_LOG_TURNS = 20


def _log_verbose_detail(conversations: list[Any]) -> None:
    """`config.verbose`: each conversation's scores and reasons at DEBUG, bounded so that one
    request cannot flood the log group (reasons are already cut to 1,000 characters each)."""
    for conversation in conversations[:VERBOSE_LOG_CONVERSATIONS]:
        interactions = conversation.interactions or []
        logger.debug(
            "conversation scored",
            extra={
                "session_id": conversation.session_id,
                "scores": conversation.correctness_scores[:VERBOSE_LOG_TURNS],
                "reasons": [i.judge_reasoning for i in interactions[:VERBOSE_LOG_TURNS]],
                "turns_not_logged": max(0, len(conversation.correctness_scores) - VERBOSE_LOG_TURNS),
            },
        )
    if len(conversations) > VERBOSE_LOG_CONVERSATIONS:
        logger.debug("conversations not logged", extra={"count": len(conversations) - VERBOSE_LOG_CONVERSATIONS})


def _result_response(result: Any, settings: Settings) -> Response:
    """The 200 body; per-turn detail is dropped (and a warning added) if it would not fit in 6 MB."""
    if _response_format() == "html":
        return _html_response(result, settings)
    rid = request_id(router)
    body = RunResponse.of(result, rid).body()
    if payload_size(body) > settings.max_response_bytes:
        del body  # not held beside the trimmed one
        trimmed = result.without_interactions("the full response would exceed the 6 MB Lambda limit")
        body = RunResponse.of(trimmed, rid).body()
        if payload_size(body) > settings.max_response_bytes:  # measured again only when trimmed
            return error_response(413, "Response too large even without per-turn detail: send fewer conversations", rid)
    return Response(status_code=200, content_type="application/json", body=body, headers={"Vary": "Accept"})


def _prefers_html(accept: str) -> bool:
    """Whether an `Accept` header ranks `text/html` above JSON (a tie, `*/*` or no header: JSON)."""
    weights: dict[str, float] = {}
    for item in accept.split(","):
        media, *params = (part.strip().lower() for part in item.split(";"))
        quality = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    quality = float(param[2:])
                except ValueError:
                    quality = 0.0
        weights[media] = max(quality, weights.get(media, 0.0))
    html = weights.get("text/html", 0.0)
    return html > 0 and html > max(weights.get("application/json", 0.0), weights.get("application/*", 0.0))


def _response_format() -> str:
    """The response format of the current request, "html" or "json": `?format=` first, else `Accept`."""
    event = router.current_event
    requested = (event.query_string_parameters or {}).get("format")
    if requested is not None:
        if requested.lower() not in ("html", "json"):
            raise RequestError(400, "Unsupported format: use ?format=json (the default) or ?format=html")
        return requested.lower()
    accept = event.headers.get("accept") or ""  # Powertools' headers are case-insensitive
    return "html" if _prefers_html(accept) else "json"


def _html_response(result: Any, settings: Settings) -> Response:
    """The HTML report of the result (`fair_forge_core.report`); per-turn detail is left out if it would not fit."""
    from fair_forge_core.report import render_html

    page = render_html(RunResponse.of(result, request_id(router)).model_dump(mode="json"))
    if payload_size(page) > settings.max_response_bytes:
        trimmed = result.without_interactions("the full report would exceed the 6 MB Lambda limit")
        page = render_html(RunResponse.of(trimmed, request_id(router)).model_dump(mode="json"))
        if payload_size(page) > settings.max_response_bytes:
            return error_response(
                413, "Report too large even without per-turn detail: send fewer conversations", request_id(router)
            )
    return Response(status_code=200, content_type="text/html; charset=utf-8", body=page, headers=HTML_HEADERS)


HTML_HEADERS = {
    "Vary": "Accept",
    "X-Content-Type-Options": "nosniff",
    # The report is one self-contained page: inline CSS and SVG, no script, nothing fetched.
    # Anything else a caller's text might smuggle in would be refused by the browser.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
}
