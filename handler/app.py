"""`lambda_handler`: API Gateway REST proxy events → the API's routes.

The resolver includes one Powertools `Router` per route group: `handler.routes.run`
(`POST /run`, `GET /health`, `GET /schema`), `handler.routes.jobs` (`POST /jobs`,
`GET /jobs/{id}`) and `handler.routes.calibrate` (`POST /calibrate`).
What is the same for every route lives here: the error handlers (`handler.responses`
has the error contract) and the invocation's clock and garbage-collection pause.

Import cost matters (cold start): LangChain, the providers, the evaluation core and
boto3 are imported on the first request that needs them, not here.
"""

from __future__ import annotations

import re
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, CORSConfig, Response
from aws_lambda_powertools.event_handler.api_gateway import Route
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.typing import LambdaContext

from handler.invocation import gc_paused, invocation_clock
from handler.judged_run import JudgedRunFailed
from handler.observability import invocation_secrets, logger, metrics
from handler.responses import error_response, request_id
from handler.routes import calibrate, jobs, run
from handler.settings import Settings
from handler.validation import RequestError

_settings = Settings.from_env()
app = APIGatewayRestResolver(
    cors=CORSConfig(allow_origin=_settings.cors_allow_origin) if _settings.cors_allow_origin else None
)
app.include_router(run.router)
app.include_router(jobs.router)
app.include_router(calibrate.router)


@app.exception_handler(RequestError)
def handle_request_error(exc: RequestError) -> Response:
    logger.info("request refused", extra={"status": exc.status, "reason": exc.message})
    return error_response(exc.status, exc.message, request_id(app), exc.details)


@app.exception_handler(JudgedRunFailed)
def handle_judged_run_failed(exc: JudgedRunFailed) -> Response:
    """A judging that gave no result (the provider refused, nothing scored: `handler.judged_run`): a 502."""
    logger.error(f"{exc.what} failed", extra={"reason": str(exc.cause)})
    return error_response(502, str(exc), request_id(app))


@app.exception_handler(Exception)
def handle_defect(exc: Exception) -> Response:
    # The traceback is what makes a defect fixable; the formatter masks the invocation's secrets in it.
    logger.error("internal error", exc_info=exc, extra={"error_type": type(exc).__name__})
    return error_response(500, f"Agentic evaluation failed: internal error ({type(exc).__name__})", request_id(app))


def routes() -> list[tuple[str, str]]:
    """Every route of the API as `(method, path)`, in the order the routers declare them, a path
    parameter written `{name}` as API Gateway writes it (`GET /jobs/{job_id}`). Read from the
    resolver's own route table (Powertools has no public accessor), so that the 404, the 405
    and the local API's banner cannot drift from what is served; a test compares it with the
    methods `template.yaml` declares."""
    return [(route.method, _api_gateway_path(route.path)) for route in _route_table()]


def _api_gateway_path(path: str) -> str:
    """A Powertools route path (`/jobs/<job_id>`) as API Gateway writes it (`/jobs/{job_id}`)."""
    return re.sub(r"<(\w+)>", r"{\1}", path)


def _route_table() -> list[Route]:
    return [*app._static_routes, *app._dynamic_routes]


def describe_routes() -> str:
    """The routes as a person reads them: `POST /run, GET /health, …`."""
    return ", ".join(f"{method} {path}" for method, path in routes())


@app.not_found
def handle_not_found(_: Exception) -> Response:
    # Powertools calls this for a path it does not know and for a known path with another
    # method: the second is a 405 naming the methods the path takes (RFC 9110 §15.5.6).
    path = app.current_event.path
    matched = [route for route in _route_table() if route.rule.match(path)]
    if matched:
        allowed = sorted({route.method for route in matched})
        return error_response(
            405,
            f"Method not allowed: {_api_gateway_path(matched[0].path)} takes {', '.join(allowed)}",
            request_id(app),
            headers={"Allow": ", ".join(allowed)},
        )
    return error_response(404, f"Not found: the API has {describe_routes()}", request_id(app))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST, clear_state=True)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The Lambda entry point (`CMD ["handler.app.lambda_handler"]`)."""
    metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    with invocation_clock(), invocation_secrets(), gc_paused():
        return app.resolve(event, context)
