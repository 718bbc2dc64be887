"""The judge's cost ledger, by its old name: every name importers read here, from the modules
that hold them by concern.

- `ledger`: `JudgeLedger` (tokens and money per evaluation, the cap's reservations, the
  judge cache's key and counters) and `total_usage`; the rules are its docstring.
- `identity`: who the judge is (`judge_identity`, `judge_model_name`, `class_path_of`,
  `endpoint_of`, `sampling_parameters`, `prompt_hash` and `RUBRIC_VERSION`, `messages_for_key`).
- `budget`: the cost cap (`CostBudget`, `Budget`, `input_token_bound`, `output_token_bound`,
  `CapNotEnforceable`, `MissingPrice`, `UnboundedOutput`).
- `tokens`: a call's tokens and cost (`TokenUsage`, `usage_of`, `cost_usd`, the LangChain
  callback `UsageCapture`).
- `prices`: the price table and `price_of` (the offline judge's built-in zero).

`RUBRIC_VERSION` is read by `prompt_hash` from `identity`: set it there (a copy here changes nothing).
"""

from __future__ import annotations

from fair_forge_core.judges.budget import (
    MESSAGE_OVERHEAD_TOKENS,
    OUTPUT_TOKEN_FIELDS,
    Budget,
    CapNotEnforceable,
    CostBudget,
    MissingPrice,
    UnboundedOutput,
    input_token_bound,
    output_token_bound,
)
from fair_forge_core.judges.identity import (
    DEPLOYMENT_FIELDS,
    ENDPOINT_FIELDS,
    RUBRIC_VERSION,
    SAMPLING_FIELDS,
    class_path_of,
    endpoint_of,
    judge_identity,
    judge_model_name,
    messages_for_key,
    prompt_hash,
    sampling_parameters,
)
from fair_forge_core.judges.ledger import JudgeLedger, total_usage
from fair_forge_core.judges.prices import OFFLINE_MODEL_NAME, OFFLINE_PRICE_SOURCE
from fair_forge_core.judges.tokens import TokenUsage, UsageCapture, cost_usd, usage_of

__all__ = [
    "DEPLOYMENT_FIELDS",
    "ENDPOINT_FIELDS",
    "MESSAGE_OVERHEAD_TOKENS",
    "OFFLINE_MODEL_NAME",
    "OFFLINE_PRICE_SOURCE",
    "OUTPUT_TOKEN_FIELDS",
    "RUBRIC_VERSION",
    "SAMPLING_FIELDS",
    "Budget",
    "CapNotEnforceable",
    "CostBudget",
    "JudgeLedger",
    "MissingPrice",
    "TokenUsage",
    "UnboundedOutput",
    "UsageCapture",
    "class_path_of",
    "cost_usd",
    "endpoint_of",
    "input_token_bound",
    "judge_identity",
    "judge_model_name",
    "messages_for_key",
    "output_token_bound",
    "prompt_hash",
    "sampling_parameters",
    "total_usage",
    "usage_of",
]
