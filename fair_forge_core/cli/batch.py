"""`fair-forge evaluate --batch` and `--batch-id ID`: the judge calls through the provider's batch
API, at its batch price (`fair_forge_core.batch_run`; docs/judge.md "Batch judging").

`--batch` writes the batch's state to `--batch-dir` (default `.fair-forge/batches`) as
`<id>.json` when it begins and says the id and how to resume on stderr, runs the submit pass,
writes the state again with what it sent (`STATE_FORMAT`), then waits: it
polls the batches after `--batch-poll-s` seconds (default 30), each wait 1.5 times the last, at
most 600 s, and once every batch has ended it collects and gives the result as `evaluate` does
(every output, the summary, the gates), then deletes the batches' files from the provider.
Interrupted (Ctrl-C, a CI job's time limit), the batches
run on: `--batch-id ID` with the same request resumes the wait and collects (a state left while
submitting first takes the batches that attempt created and sends only the lines they lack:
`batch_api.submit_lines`); a request that is not the one submitted is exit 2. `--batch-deadline-s` (default 90,000: 25 hours, past the
provider's 24-hour window) after the submission, batches still running are cancelled and what
they answered is collected; the rest of the turns are unscored with cause `batch_expired`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fair_forge_core.schemas import EvaluationResult


class BatchStateError(Exception):
    """A batch that cannot be resumed (no state for the id, another request): bad input, exit 2."""


MAX_POLL_S = 600
DEFAULT_DIRECTORY = Path(".fair-forge/batches")
DEFAULT_POLL_S = 30.0
DEFAULT_DEADLINE_S = 90_000.0


@dataclass(frozen=True)
class BatchOptions:
    """What `--batch`, `--batch-id`, `--batch-dir`, `--batch-poll-s` and `--batch-deadline-s` asked."""

    resume_id: str | None
    directory: Path
    poll_s: float
    deadline_s: float


DEFAULT_OPTIONS = BatchOptions(None, DEFAULT_DIRECTORY, DEFAULT_POLL_S, DEFAULT_DEADLINE_S)
"""What a request whose `config.judge_batch` is true gets without `--batch` (or from `run --evaluate`)."""


STATE_FORMAT = "fair-forge-batch-state/1"
"""A batch state file's `format`: `id`, `request_sha256`, `started_at`, and once submitted
`submitted_at` and `submission` (what `--batch-id` resumes)."""


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, got {text}")
    return value


def add_batch_flags(parser: argparse.ArgumentParser) -> None:
    """`evaluate`'s batch judging flags (`fair_forge_core.cli.batch`)."""
    batch = parser.add_mutually_exclusive_group()
    batch.add_argument(
        "--batch",
        action="store_true",
        help=(
            "send the judge calls through the provider's batch API at its batch price (OpenAI's: half the price, "
            "results within 24 hours): submit, then wait and collect (sets config.judge_batch)"
        ),
    )
    batch.add_argument(
        "--batch-id", metavar="ID", help="resume the batch --batch submitted for this request: wait, then collect"
    )
    parser.add_argument(
        "--batch-dir",
        type=Path,
        default=DEFAULT_DIRECTORY,
        metavar="DIR",
        help="where a batch's state is kept, to resume it (default: .fair-forge/batches)",
    )
    parser.add_argument(
        "--batch-poll-s",
        type=_seconds,
        default=DEFAULT_POLL_S,
        metavar="S",
        help="seconds before the first poll of the batch (default: 30); each later wait is 1.5 times the last, at most 600",
    )
    parser.add_argument(
        "--batch-deadline-s",
        type=_seconds,
        default=DEFAULT_DEADLINE_S,
        metavar="S",
        help=(
            "seconds after submission when batches still running are cancelled and what they answered is collected "
            "(default: 90000, past the provider's 24-hour window); the turns left are unscored with cause batch_expired"
        ),
    )


def batch_options(args: Any) -> BatchOptions | None:
    """The batch options of `evaluate`'s `args`; None without `--batch` or `--batch-id`."""
    if not getattr(args, "batch", False) and getattr(args, "batch_id", None) is None:
        return None
    return BatchOptions(args.batch_id, args.batch_dir, args.batch_poll_s, args.batch_deadline_s)


def request_fingerprint(request: Any, models: list[Any]) -> str:
    """sha256 of the request as judged: its datasets and config, and each judge's identity
    (`judges.identity.judge_identity`: class, model, sampling, endpoint, output mode, prompt;
    never a key): what a resumed batch must match, since any of them changes the calls' bodies."""
    from fair_forge_core.judges.identity import judge_identity

    data = request.model_dump(mode="json", exclude={"connector"})
    data["judges"] = [judge_identity(model, request.config) for model in models]
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _state_path(options: BatchOptions, batch_id: str) -> Path:
    if not batch_id.replace("-", "").isalnum():
        raise BatchStateError(f"--batch-id {batch_id!r}: not an id fair-forge gave (letters, digits and -)")
    return options.directory / f"{batch_id}.json"


def _submitted(plan: Any, options: BatchOptions, say: Callable[[str], None]) -> tuple[Any, float]:
    """The submission to wait for: a new one (submitted now, its state written), or the resumed
    one; with its submission time (epoch seconds)."""
    from fair_forge_core.judges.batch import BatchSubmission
    from fair_forge_core.judges.batch_api import CLOCK_SKEW_S

    fingerprint = request_fingerprint(plan.request, plan.models)
    if options.resume_id is not None:
        path = _state_path(options, options.resume_id)
        try:
            state = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BatchStateError(f"--batch-id {options.resume_id}: no batch state at {path} ({exc})") from None
        if state.get("request_sha256") != fingerprint:
            raise BatchStateError(f"--batch-id {options.resume_id}: the request is not the one submitted in that batch")
        if "submission" in state:
            return BatchSubmission.model_validate(state["submission"]), float(state["submitted_at"])
        # It died while submitting: take what it created (`batch_api.submit_lines`), send the rest.
        return _submit(plan, options, state, float(state["started_at"]) - CLOCK_SKEW_S, say)
    batch_id = f"ffb-{uuid.uuid4().hex[:16]}"
    state = {"format": STATE_FORMAT, "id": batch_id, "request_sha256": fingerprint, "started_at": time.time()}
    _write_state(options, state)
    say(
        f"batch {batch_id}: submitting; if interrupted, resume with --batch-id {batch_id} --batch-dir {options.directory}"
    )
    return _submit(plan, options, state, None, say)


def _submit(
    plan: Any, options: BatchOptions, state: dict[str, Any], since: float | None, say: Callable[[str], None]
) -> tuple[Any, float]:
    """Submit `plan`'s request as the batch of `state` (labelled with its id), then write its state
    whole; `since`: an earlier attempt of it may have created batches from then on."""
    from fair_forge_core.batch_run import submit_evaluation
    from fair_forge_core.evaluate import run_sync
    from fair_forge_core.judges.base import RunContext

    batch_id = state["id"]
    context = RunContext(ledger=plan.ledger, secrets=plan.secrets)
    labels = {"fair_forge_batch": batch_id}
    request = plan.request
    submission = run_sync(submit_evaluation(request.datasets, plan.models, request.config, context, labels, since))
    submitted_at = time.time()
    state = state | {
        "submitted_at": submitted_at,
        "submitted": datetime.fromtimestamp(submitted_at, UTC).isoformat(),
        "submission": submission.model_dump(mode="json"),
    }
    path = _write_state(options, state)
    calls = sum(len(part.submitted) for part in submission.models)
    batches = sum(len(part.batch_ids) for part in submission.models)
    say(f"batch {batch_id}: {calls} judge call(s) in {batches} provider batch(es); state in {path}")
    say(f"resume with: fair-forge evaluate <the same request> --batch-id {batch_id} --batch-dir {options.directory}")
    return submission, submitted_at


def _write_state(options: BatchOptions, state: dict[str, Any]) -> Path:
    """Write `state` to its file, whole or not at all (an interrupted write leaves the one before)."""
    path = _state_path(options, state["id"])
    path.parent.mkdir(parents=True, exist_ok=True)
    written = path.with_suffix(".tmp")
    written.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(written, path)
    return path


def judged_in_batch(
    plan: Any, collect_plan: Any, options: BatchOptions, say: Callable[[str], None]
) -> EvaluationResult:
    """The `EvaluationResult` of `plan`'s request judged in batch: submitted (or resumed), waited
    for, then collected with `collect_plan` (a fresh plan of the same request: its ledger counts
    the answers only); what it sent, how to resume and how the batches stand go to `say`."""
    from fair_forge_core.batch_run import answered_counts, delete_submission_files, prepare_collect, wait_for_batches
    from fair_forge_core.evaluate import run_sync
    from fair_forge_core.judges.base import RunContext
    from fair_forge_core.plan import execute

    submission, submitted_at = _submitted(plan, options, say)
    deadline = time.monotonic() + max(0.0, submitted_at + options.deadline_s - time.time())

    def report(states: list[Any]) -> None:
        counts = answered_counts(states)
        say(f"batch: {'/'.join(counts['statuses'])}, {counts['completed']} of {counts['total']} answered")

    run_sync(
        wait_for_batches(
            plan.models,
            submission,
            poll_s=options.poll_s,
            max_poll_s=MAX_POLL_S,
            deadline=deadline,
            on_states=report,
        )
    )
    batch = run_sync(prepare_collect(collect_plan.models, collect_plan.ledger, submission))
    result: EvaluationResult = run_sync(execute(collect_plan, RunContext(batch=batch)))
    run_sync(delete_submission_files(collect_plan.models, submission))
    return result
