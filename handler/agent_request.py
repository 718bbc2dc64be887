"""The body of a `POST /jobs` that runs an agent (docs/jobs.md "Run the agent from a job"): the
agent, its tasks and how many attempts, instead of recorded `datasets`.

    {"connector": ..., "config": ...,
     "agent": {"kind": "http", "url": "https://agent.example/turn", "assistant_id": "my-agent",
               "credential": {"secret": "fair-forge/agents/my-agent", "header": "Authorization",
                              "prefix": "Bearer "}},
     "tasks": [...TASKS file tasks...],
     "attempts": 5}                    # or {"until_decided": "pass_pow_k>=0.8", "max_attempts": 20, "round_size": 5}

The rules (each refusal a 400 naming its field; docs/agent-contract.md "In the service"):

- exactly one of `datasets` and `tasks`;
- `agent.kind` is `http` (`fair_forge_core.agents.SERVICE_KINDS`: a request never names code to run);
- `agent.url` obeys the judge's endpoint rules (`fair_forge_core.connectors.rules.check_endpoint`:
  resolves only to public addresses, or to `FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS`) and is `https`,
  unless its host is one of the operator's `FAIR_FORGE_AGENT_HOSTS` (exact names);
- the request never carries the credential: `agent.credential` names a Secrets Manager secret
  under the operator's `FAIR_FORGE_AGENT_SECRET_PREFIX`, read by the attempts Lambda only; a key
  that would hold a value (`agent.headers`, `agent.token`, `agent.credential.value`, …) is refused
  by name, and so is a URL carrying a user, a password or a secret-named query parameter;
- an attempt at its worst (turns × tries × `timeout_s`, with the backoffs) fits one attempts Lambda
  (`FAIR_FORGE_JOBS_MAX_ATTEMPT_S`), and the attempts asked for at most (tasks × `attempts`, or ×
  `max_attempts`) are within `FAIR_FORGE_JOBS_MAX_ATTEMPTS` (a 413).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal
from urllib.parse import parse_qsl, urlsplit

from pydantic import AfterValidator, Field, ValidationError, field_validator

from fair_forge_core.agents import AgentSpec, TaskSpec
from fair_forge_core.agents.tasks import unique_task_ids
from fair_forge_core.connectors import ConnectorError
from fair_forge_core.connectors.rules import check_endpoint
from fair_forge_core.schemas.base import RequestModel
from handler.settings import Settings
from handler.validation import RequestError, validation_details

AGENT_FIELDS = frozenset({"kind", "url", "assistant_id", "timeout_s", "retries", "credential"})
CREDENTIAL_FIELDS = frozenset({"secret", "header", "prefix"})
_SECRET_WORDS = ("key", "token", "secret", "password", "credential", "auth", "header", "bearer", "cookie")
NO_INLINE_CREDENTIAL = (
    "a credential is never sent in a request: store it in Secrets Manager and name the secret in "
    'agent.credential.secret (docs/how-to/jobs.md "Run the agent from a job")'
)
_RESERVED_HEADERS = frozenset({"content-type", "content-length", "host", "transfer-encoding", "connection"})


class AgentCredential(RequestModel):
    """Where the agent's credential is (never what it is): the Secrets Manager secret's `name`, the
    header it is sent in, and a scheme word put before it (`"Bearer "`)."""

    secret: str = Field(min_length=1, max_length=512, pattern=r"^[A-Za-z0-9/_+=.@-]+$")
    header: str = Field("Authorization", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9-]+$")
    # A scheme word and a space at most: a longer prefix could be the credential itself.
    prefix: str = Field("", max_length=16, pattern=r"^([A-Za-z][A-Za-z-]* ?)?$")

    @field_validator("header")
    @classmethod
    def _not_a_header_the_runner_sets(cls, value: str) -> str:
        if value.lower() in _RESERVED_HEADERS:
            raise ValueError(f"the runner sets {value} itself")
        return value


class ServiceAgent(RequestModel):
    """The agent of a job: the `http` kind only, its URL, the `assistant_id` its attempts are
    recorded under, the call's timeout and retries (`AgentSpec`'s), and its credential's secret."""

    kind: Literal["http"]
    url: str = Field(pattern=r"^https?://", max_length=2048)
    assistant_id: str = Field("agent", min_length=1, max_length=200)
    timeout_s: float = Field(60.0, gt=0, le=900)
    retries: int = Field(2, ge=0, le=5)
    credential: AgentCredential | None = None

    def spec(self, header_variable: str) -> AgentSpec:
        """The library's `AgentSpec`, its credential read from `header_variable` of the environment
        the attempts Lambda builds it with (`build_agent(environ=...)`), never from the process's."""
        headers = {self.credential.header: header_variable} if self.credential is not None else {}
        return AgentSpec(
            kind="http",
            assistant_id=self.assistant_id,
            url=self.url,
            headers_from_env=headers,
            timeout_s=self.timeout_s,
            retries=self.retries,
        )

    def worst_attempt_s(self, turns: int, backoff_s: float) -> float:
        """The longest an attempt of `turns` turns may take: every try of every turn timing out,
        with the doubling backoffs between tries (`fair_forge_core.agents.kinds.with_retries`)."""
        backoffs = backoff_s * (2**self.retries - 1)
        return turns * (self.timeout_s * (self.retries + 1) + backoffs)


class UntilDecided(RequestModel):
    """Adaptive attempts (docs/statistics.md "Adaptive attempts"): rounds of `round_size` attempts of
    each undecided task until its confidence sequence decides `until_decided` or it has
    `max_attempts`."""

    until_decided: str = Field(min_length=1, max_length=100)
    max_attempts: int = Field(ge=1, le=1000)
    round_size: int = Field(1, ge=1, le=1000)

    @field_validator("until_decided")
    @classmethod
    def _a_question(cls, value: str) -> str:
        from fair_forge_core.adaptive import parse_question

        parse_question(value, k=1)  # the form only: the job reads it again with config.k
        return value


class AgentJobBody(RequestModel):
    """The agent's side of the body (the module docstring); `connector` and `config` are read as
    `POST /run` reads them."""

    agent: ServiceAgent
    tasks: Annotated[list[TaskSpec], Field(min_length=1), AfterValidator(unique_task_ids)]
    attempts: Annotated[int, Field(ge=1, le=1000)] | UntilDecided


@dataclass(frozen=True)
class AgentJob:
    """A validated agent job: its body's agent side, and the placeholder `datasets` body (one
    conversation per task, empty answers) that `POST /run`'s validation and plan are run on."""

    body: AgentJobBody
    evaluation_body: dict[str, Any]

    @property
    def attempts_per_task(self) -> int:
        """The most attempts any task can get."""
        attempts = self.body.attempts
        return attempts if isinstance(attempts, int) else attempts.max_attempts


def _refuse(field: str, message: str, status: int = 400) -> RequestError:
    return RequestError(status, f"Invalid request: {field}: {message}", [{"field": field, "message": message}])


def _looks_secret(name: str) -> bool:
    return any(word in name.lower() for word in _SECRET_WORDS)


def refuse_inline_credentials(body: dict[str, Any]) -> None:
    """A 400 naming the first place where the body would carry a credential itself (module
    docstring): a secret-named key of `agent` or `agent.credential` that is not one of theirs, a
    `credential` that is not an object naming a secret, and a URL with a user, a password or a
    secret-named query parameter. Checked before the models, so the message says why."""
    agent = body.get("agent")
    if not isinstance(agent, dict):
        return  # the model names it
    for name in sorted(set(agent) - AGENT_FIELDS):
        if _looks_secret(str(name)):
            raise _refuse(f"agent.{name}", NO_INLINE_CREDENTIAL)
    credential = agent.get("credential")
    if credential is not None and not isinstance(credential, dict):
        raise _refuse("agent.credential", NO_INLINE_CREDENTIAL)
    for name in sorted(set(credential or {}) - CREDENTIAL_FIELDS):
        raise _refuse(f"agent.credential.{name}", NO_INLINE_CREDENTIAL)
    url = agent.get("url")
    if isinstance(url, str):
        try:
            parts = urlsplit(url)
            has_user = parts.username is not None or parts.password is not None
        except ValueError:
            return  # the endpoint check names it
        if has_user or any(_looks_secret(name) for name, _ in parse_qsl(parts.query, keep_blank_values=True)):
            raise _refuse("agent.url", NO_INLINE_CREDENTIAL)


def check_agent_url(url: str, settings: Settings) -> None:
    """A 400 naming `agent.url` unless it may be called (module docstring): a host of
    `FAIR_FORGE_AGENT_HOSTS` is allowed as it is (http too: the operator's own network); any other
    must be https and pass the judge's endpoint rules. Resolved again by the attempts Lambda
    before its first call, so a name that changed its address since is refused there too."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host and host in settings.agent_hosts:
        return
    if parts.scheme.lower() != "https":
        raise _refuse("agent.url", "must be an https URL (the operator allows other hosts by FAIR_FORGE_AGENT_HOSTS)")
    try:
        check_endpoint("base_url", url, settings.allowed_endpoint_networks)
    except ConnectorError as exc:
        message = str(exc).replace("connector.params.base_url", "agent.url").replace("a judge endpoint", "an agent")
        raise _refuse("agent.url", message.removeprefix("agent.url").lstrip(" :")) from None


def check_secret_name(credential: AgentCredential | None, settings: Settings) -> None:
    """A 400 naming `agent.credential.secret` unless the secret is under the operator's prefix."""
    if credential is None:
        return
    prefix = settings.agent_secret_prefix
    if not prefix:
        raise _refuse(
            "agent.credential.secret",
            "this deployment reads no agent credential (the operator sets FAIR_FORGE_AGENT_SECRET_PREFIX)",
        )
    if not credential.secret.startswith(prefix) or ".." in credential.secret:
        raise _refuse(
            "agent.credential.secret", f"must name a secret under {prefix!r}, the prefix this deployment reads"
        )


def parse_agent_job(body: dict[str, Any], settings: Settings) -> AgentJob:
    """The validated agent job of `body` (module docstring), or the `RequestError` of its first
    fault. Its `evaluation_body` is what `POST /run`'s validation reads next."""
    if "datasets" in body:
        raise _refuse("tasks", "a job takes datasets or tasks, not both")
    refuse_inline_credentials(body)
    agent_side = {name: body[name] for name in ("agent", "tasks", "attempts") if name in body}
    try:
        parsed = AgentJobBody.model_validate(agent_side)
    except ValidationError as exc:
        details = validation_details(exc, AgentJobBody)
        first = details[0]
        more = f" (and {len(details) - 1} more)" if len(details) > 1 else ""
        raise RequestError(400, f"Invalid request: {first['field']}: {first['message']}{more}", details) from None
    check_agent_url(parsed.agent.url, settings)
    check_secret_name(parsed.agent.credential, settings)
    longest = max(len(task.turns) for task in parsed.tasks)
    worst = parsed.agent.worst_attempt_s(longest, AgentSpec.model_fields["retry_backoff_s"].default)
    if worst > settings.jobs_max_attempt_s:
        raise _refuse(
            "agent.timeout_s",
            f"an attempt of {longest} turn(s) could take {worst:g} s at worst (turns × {parsed.agent.retries + 1} "
            f"tries × timeout_s), more than one attempts Lambda runs ({settings.jobs_max_attempt_s:g} s): "
            "lower agent.timeout_s or agent.retries",
        )
    job = AgentJob(parsed, evaluation_body(body, parsed))
    total = job.attempts_per_task * len(parsed.tasks)
    if total > settings.jobs_max_attempts:
        raise RequestError(
            413,
            f"Too many attempts: {len(parsed.tasks)} tasks × {job.attempts_per_task} = {total} "
            f"(limit {settings.jobs_max_attempts} a job): send fewer tasks or attempts",
        )
    return job


def evaluation_body(body: dict[str, Any], parsed: AgentJobBody) -> dict[str, Any]:
    """The body `POST /run`'s validation and plan read for an agent job: its connector and config,
    and one placeholder conversation per task (`TaskSpec.dataset`, empty answers), so the checks,
    the config's rules and the judge are refused now, not after the agent has run."""
    datasets = [
        task.dataset(
            session_id=f"placeholder-{index}",
            assistant_id=parsed.agent.assistant_id,
            answers=[""] * len(task.turns),
            final_state={},  # as `TaskSpec` checks itself: a task with an expected state needs one
        ).model_dump(mode="json", exclude_none=True)
        for index, task in enumerate(parsed.tasks)
    ]
    return {
        **{name: body[name] for name in ("connector", "config") if name in body},
        "datasets": datasets,
    }
