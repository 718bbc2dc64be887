"""`POST /calibrate`: how well a judge agrees with human labels (`fair_forge_core.calibration`).

The body is a `CalibrationRequest`: `connector` (as in `POST /run`, under the same allowlist
and key rules), `pairs` (each `query`, `answer`, `ground_truth`, `label` "pass" or "fail",
optional `category`) and `config` (`threshold`, `max_concurrency`, the judge's output mode).
The pairs are judged through the same judge path as `/run` (same prompt, retries, concurrency
cap and time budget), and the 200 body is the `CalibrationReport` with the `request_id`.

Checks, in this order, in `/run`'s style: body size (413) → JSON object (400) → connector
("No connector configuration provided", "connector.class_path is required") → pairs present
("No pairs provided") → their number (413 beyond `FAIR_FORGE_MAX_CALIBRATION_PAIRS`, default
2,000) → string length (413) and nesting (400) → field by field (400 naming the field, never
echoing its value) → the connector (400 "Failed to create LLM connector: …"). The provider
refusing, or no pair scored, is a 502 "Calibration failed: …".
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import ValidationError

from fair_forge_core.schemas import CalibrationReport, CalibrationRequest
from handler.connectors import judges_for_request
from handler.invocation import deadline
from handler.judged_run import judged_run
from handler.observability import logger, secrets_masked
from handler.responses import error_response, payload_size, request_id
from handler.settings import Settings
from handler.validation import (
    RequestError,
    check_connector,
    check_shape,
    decode_body,
    validation_details,
)

router = Router()


class CalibrationResponse(CalibrationReport):
    """The 200 body of `POST /calibrate`: the report, then the request's id."""

    request_id: str | None = None


def parse_calibration_request(body: dict[str, Any], settings: Settings) -> CalibrationRequest:
    """A validated `CalibrationRequest`, or a `RequestError` (the module docstring gives the order)."""
    check_connector(body, ensemble=False)
    pairs = body.get("pairs")
    if pairs is None or pairs == []:
        raise RequestError(400, "No pairs provided")
    if not isinstance(pairs, list):
        raise RequestError(400, "pairs must be a list", [{"field": "pairs", "message": "not a list"}])
    if len(pairs) > settings.max_calibration_pairs:
        raise RequestError(413, f"Too many pairs: {len(pairs)} (limit {settings.max_calibration_pairs} per request)")
    check_shape(body, settings)
    try:
        return CalibrationRequest.model_validate(body)
    except ValidationError as exc:
        details = validation_details(exc, CalibrationRequest)
        first = details[0]
        more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
        raise RequestError(400, f"Invalid request: {first['field']}: {first['message']}{more}", details) from None


@router.post("/calibrate")
def calibrate() -> Response:
    settings = Settings.from_env()
    event = router.current_event
    body = decode_body(event.body, bool(event.is_base64_encoded), settings)
    request = parse_calibration_request(body, settings)
    (judge,) = judges_for_request(request.connector, request.config.evaluation_config(), settings)
    with secrets_masked(judge.secrets):
        return _calibrate(request, judge.model, settings)


def _calibrate(request: CalibrationRequest, model: Any, settings: Settings) -> Response:
    from fair_forge_core.calibration import calibrate as run_calibration

    logger.info("calibration started", extra={"pairs": len(request.pairs), "class_path": request.connector.class_path})
    # The metrics and the 502 of a failed judging (`JudgedRunFailed`, `handler.app`): `handler.judged_run`.
    with judged_run("calibration", {"CalibrationPairs": len(request.pairs)}) as judged:
        telemetry = judged.telemetry
        report = judged.run(
            run_calibration(
                request.pairs,
                model,
                request.config,
                deadline=deadline(settings, router.lambda_context),
                retry=settings.retry_policy(),
                telemetry=telemetry,
            )
        )
    elapsed = judged.elapsed_s
    logger.info(
        "calibration finished",
        extra={
            "duration_ms": round(elapsed * 1000),
            "judge_calls": telemetry.calls,
            "judge_errors": telemetry.errors,
            "scored": report.scored,
            "unscored": report.unscored,
            "agreement": None if report.agreement is None else round(report.agreement.value, 4),
            "kappa": None if report.kappa is None else round(report.kappa, 4),
        },
    )
    return _report_response(report, settings)


def _report_response(report: CalibrationReport, settings: Settings) -> Response:
    """The 200 body; the judge's per-pair reasoning is dropped (with a warning) if the body
    would not fit in the response limit, and a 413 if it still does not."""
    rid = request_id(router)
    body = CalibrationResponse.model_construct(**dict(report), request_id=rid).model_dump_json()
    if payload_size(body) > settings.max_response_bytes:
        results = [r.model_copy(update={"reasoning": None}) for r in report.results]
        warnings = [*report.warnings, "per-pair reasoning left out: the full response would exceed the limit"]
        trimmed = report.model_copy(update={"results": results, "warnings": warnings})
        body = CalibrationResponse.model_construct(**dict(trimmed), request_id=rid).model_dump_json()
        if payload_size(body) > settings.max_response_bytes:  # measured again only when trimmed
            return error_response(413, "Response too large even without the judge's reasoning: send fewer pairs", rid)
    return Response(status_code=200, content_type="application/json", body=body)
