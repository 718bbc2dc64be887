"""The judge for a request of the service: the core's connector rules plus what only the service has.

The rules (allowlist, refused parameters, when the server's key may be attached)
live in `fair_forge_core.connectors`, which the CLI applies too. This module adds the
operator's settings, the server's key from `LLM_API_KEY` or the Secrets Manager
secret `LLM_API_KEY_SECRET_ARN`, and a pointer to `GET /health` when a class path is
refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from fair_forge_core import connectors as core
from fair_forge_core.connectors import ConnectorError, ConnectorNotAllowed, Judge
from fair_forge_core.plan import JudgeSource, PlanError, RunPlan, build_judges, plan_run
from fair_forge_core.schemas import ConnectorSpec
from handler.observability import logger, secrets_masked
from handler.settings import Settings
from handler.validation import RequestError

__all__ = [
    "ConnectorError",
    "ServerKeyUnavailable",
    "allowed_connectors",
    "build_judge",
    "judge_source",
    "judges_for_job",
    "judges_for_request",
    "plan_for_request",
    "server_api_key",
]

_SEE_HEALTH = "see GET /health for the list"

NO_KEY_MESSAGE = (
    "connector.params.api_key is required: this deployment has no provider key of its own "
    "(the operator can set LLM_API_KEY or LLM_API_KEY_SECRET_ARN)"
)


def allowed_connectors(settings: Settings) -> dict[str, str]:
    """Every accepted spelling → its canonical class path, operator extensions included."""
    return core.allowed_connectors(settings.extra_connectors)


def secret_from_secrets_manager(secret_arn: str, max_age_s: int) -> str:
    """The API key in a Secrets Manager secret: its plain string, or the `api_key` of a JSON one.

    Powertools' parameters utility keeps the value for `max_age_s` seconds
    (`FAIR_FORGE_SECRET_MAX_AGE_S`): each fetch costs latency and money, and a key that
    is rotated must still be picked up by warm containers, which live for hours.
    """
    from aws_lambda_powertools.utilities import parameters  # imports boto3: not at cold start

    value = parameters.get_secret(secret_arn, max_age=max_age_s)
    if isinstance(value, bytes):  # a SecretBinary
        value = value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"the secret is a {type(value).__name__}, not a string")
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, dict) and isinstance(parsed.get("api_key"), str):
        return str(parsed["api_key"])
    return value


def param_secrets(params: dict[str, Any]) -> set[str]:
    """The values of secret-named parameters (`api_key`, a header's token, …), at any depth:
    masked while the judge is built, before it can say which secrets it holds (`Judge.secrets`)."""
    found = core.secret_values(params)
    for value in params.values():
        if isinstance(value, dict):
            found |= param_secrets(value)
    return found


class ServerKeyUnavailable(ConnectorError):
    """The server's key could not be read now (Secrets Manager failed): worth a retry."""


def server_api_key(settings: Settings) -> str | None:
    """The service's own provider key: `LLM_API_KEY`, else the secret `LLM_API_KEY_SECRET_ARN`."""
    if settings.server_api_key_env:
        return settings.server_api_key_env
    if settings.server_api_key_secret_arn:
        try:
            return secret_from_secrets_manager(settings.server_api_key_secret_arn, settings.secret_max_age_s)
        except Exception as exc:
            raise ServerKeyUnavailable(f"the server's API key could not be read ({type(exc).__name__})") from None
    return None


def judge_source(settings: Settings) -> JudgeSource:
    """The service's `fair_forge_core.plan.JudgeSource`: the operator's settings, the server's key
    (`server_api_key`), and the message for a request that needs a key of its own."""
    return JudgeSource(
        extra_connectors=settings.extra_connectors,
        policy=settings.endpoint_policy(),
        server_key=lambda: server_api_key(settings),
        no_key_message=NO_KEY_MESSAGE,
    )


def build_judge(class_path: str, params: dict[str, Any], settings: Settings) -> Judge:
    """The judge's chat model for one stored connector (a job's worker; rules:
    `fair_forge_core.connectors`)."""
    source = judge_source(settings)
    try:
        return core.build_chat_model(
            class_path,
            params,
            extra_connectors=source.extra_connectors,
            server_key=source.server_key,
            no_key_message=source.no_key_message,
            policy=source.policy,
        )
    except ConnectorNotAllowed as exc:
        raise ConnectorNotAllowed(f"{exc}; {_SEE_HEALTH}") from None


def judges_for_job(specs: list[ConnectorSpec], config: Any, settings: Settings) -> list[Judge]:
    """The judges of a job's stored connectors (decrypted), for its worker: built as `/run` builds
    them (`fair_forge_core.plan.build_judges`: one connector, or an ensemble's in order, then
    its check). `ServerKeyUnavailable` propagates (a passing failure, worth a retry); any other
    refusal is a `ConnectorError`, its message as the job's failure shows it (unplaced, as
    `build_judge` words it: a class path not allowed points at `GET /health`)."""
    try:
        return build_judges(specs[0] if len(specs) == 1 else specs, config, judge_source(settings))
    except PlanError as exc:
        cause = exc.cause
        if isinstance(cause, ConnectorNotAllowed):
            raise ConnectorNotAllowed(f"{cause}; {_SEE_HEALTH}") from None
        if isinstance(cause, ConnectorError):
            raise cause from None
        raise ConnectorError(str(exc), exc.field) from None  # the ensemble's check (POST /jobs passed it)


def judges_for_request(connector: ConnectorSpec | list[ConnectorSpec], config: Any, settings: Settings) -> list[Judge]:
    """The judges of a request's `connector` (`fair_forge_core.plan.build_judges`: one, or each of
    a list, an ensemble, then its check), for an HTTP request (`POST /run`, `POST /jobs`,
    `POST /calibrate`). A refused connector is logged and becomes the source's 400 "Failed to
    create LLM connector: …" naming `connector[i]` in an ensemble (a class path not allowed
    points at `GET /health`); an ensemble `check_panel` refuses is a 400 naming its field."""
    specs = connector if isinstance(connector, list) else [connector]
    with secrets_masked(frozenset().union(*(param_secrets(spec.params) for spec in specs))):
        try:
            return build_judges(connector, config, judge_source(settings))
        except PlanError as exc:
            raise _refusal(exc, specs) from None


def plan_for_request(
    request: Any,
    settings: Settings,
    *,
    import_warnings: Sequence[str] = (),
    api_key_id: str | None = None,
    turns: int | None = None,
) -> RunPlan:
    """The `fair_forge_core.plan.RunPlan` of a validated `POST /run` or `POST /jobs` request
    (`plan.plan_run`): its judges, what the server's key may buy (`check_server_key_calls`; for a
    job, `turns` bounds its calls in all), its ledger — the settings' prices, the cap, and the
    judge cache when the request opts in and one is configured, scoped to the API key that made
    the request (`api_key_id`). A refused connector or ensemble is the 400 `_refusal` words; a
    cap without a price or an output bound a 400 naming it; opting in to a cache the service
    does not have a warning."""
    from handler.judge_cache import NO_CACHE_WARNING, open_cache

    cache = None
    warnings: list[str] = []
    if request.config.judge_cache:
        if settings.judge_cache:
            cache = open_cache(settings.judge_cache)
        else:
            warnings.append(NO_CACHE_WARNING)
    specs = request.connectors
    with secrets_masked(frozenset().union(*(param_secrets(spec.params) for spec in specs))):
        try:
            plan = plan_run(
                request,
                judge_source(settings),
                import_warnings=import_warnings,
                prices=settings.price_table(),
                cache=cache,
                api_key_id=api_key_id,
                check_judges=lambda judges: check_server_key_calls(judges, request.config, settings, turns),
            )
        except PlanError as exc:
            if exc.kind == "cap":
                raise RequestError(400, str(exc)) from None
            raise _refusal(exc, specs) from None
    plan.ledger_warnings[:0] = warnings
    return plan


def _refusal(exc: PlanError, specs: list[ConnectorSpec]) -> RequestError:
    """The 400 of a `PlanError` of the judges, worded as the service always has."""
    if exc.kind in ("panel", "judge_error"):
        return RequestError(
            400, f"Invalid request: {exc.field}: {exc}", [{"field": str(exc.field), "message": str(exc)}]
        )
    cause = exc.cause
    if isinstance(cause, ConnectorNotAllowed):
        cause = ConnectorNotAllowed(f"{cause}; {_SEE_HEALTH}")
    index = int(exc.where.removeprefix("connector[").removesuffix("]")) if exc.where != "connector" else 0
    logger.warning("connector refused", extra={"class_path": specs[index].class_path[:200], "connector": exc.where})
    placed = cause.placed(exc.where) if isinstance(cause, ConnectorError) else cause
    field = getattr(placed, "field", None)
    details = [{"field": field, "message": str(placed)}] if field else []
    return RequestError(400, f"{core.REFUSAL_PREFIX}{placed}", details)


def check_server_key_calls(judges: list[Judge], config: Any, settings: Settings, turns: int | None = None) -> None:
    """What a request may buy with the server's key (the operator's bill): at most
    `server_key_max_calls_per_turn` judge calls per turn (`config.judge_samples` for each
    connector that uses the key; a conversation's goal is asked as a turn is), and for a job
    (`turns` given: its turns and goals) at most
    `jobs_max_server_key_calls` judge calls in all. A 400 naming `config.judge_samples`, or a
    413 naming the job's calls; nothing for judges that bring their caller's key."""
    paid = sum(1 for judge in judges if judge.server_key)
    if not paid:
        return
    per_turn = config.judge_samples * paid
    if per_turn > settings.server_key_max_calls_per_turn:
        message = (
            f"with the service's own key a turn may cost at most {settings.server_key_max_calls_per_turn} judge calls, "
            f"and judge_samples {config.judge_samples} × {paid} connector(s) on that key make {per_turn}: "
            "lower config.judge_samples, or bring your own key in connector.params.api_key"
        )
        raise RequestError(
            400,
            f"Invalid request: config.judge_samples: {message}",
            [{"field": "config.judge_samples", "message": message}],
        )
    if turns is not None and turns * per_turn > settings.jobs_max_server_key_calls:
        raise RequestError(
            413,
            f"Too many judge calls on the service's key: {turns} turns and goals × {per_turn} calls = {turns * per_turn} "
            f"(limit {settings.jobs_max_server_key_calls} a job): send fewer turns, or bring your own key",
        )
