"""The judge's price table: USD per million tokens by model name (`FAIR_FORGE_JUDGE_PRICES`).

Light (pydantic only), so that the settings can check the table at a cold start without
importing LangChain. What the prices are used for is `fair_forge_core.judges.usage`; which
price a judge model has is `price_of`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PRICES_VARIABLE = "FAIR_FORGE_JUDGE_PRICES"

OFFLINE_MODEL_NAME = "fair-forge-reference"
OFFLINE_PRICE_SOURCE = "built-in: the offline judge costs nothing"


class ModelPrice(BaseModel):
    """USD per million tokens of one model: `input` (uncached input), `output`, and
    `cached_input` (input read from the provider's prompt cache; default: `input`)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cached_input: float | None = Field(None, ge=0)


class PriceTable(BaseModel):
    """Prices by model name, and where they came from (`source`, reported as `price_source`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str
    models: dict[str, ModelPrice]


def read_price_table(value: str) -> PriceTable:
    """The price table of `FAIR_FORGE_JUDGE_PRICES`: a JSON object when the value starts
    with `{`, else the path of a file holding one. The object maps a model name to
    `{"input": x, "output": y, "cached_input": z}` (USD per million tokens, `cached_input`
    optional; numbers ≥ 0). Raises `ValueError` saying what is wrong (the settings name
    the variable); the source is `FAIR_FORGE_JUDGE_PRICES`, or `FAIR_FORGE_JUDGE_PRICES (<path>)`."""
    text = value.strip()
    source = PRICES_VARIABLE
    if not text.startswith("{"):
        path = Path(text).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"neither a JSON object nor a readable file: {path}: {exc}") from None
        source = f"{PRICES_VARIABLE} ({path})"
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError("must be a JSON object mapping a model name to its prices")
    models: dict[str, ModelPrice] = {}
    for name, price in data.items():
        try:
            models[name] = ModelPrice.model_validate(price)
        except ValidationError as exc:
            first = exc.errors(include_input=False, include_url=False)[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(
                f"model {name!r}: {where + ': ' if where else ''}{first['msg']} "
                '(expected {"input": USD, "output": USD, "cached_input": USD} per million tokens)'
            ) from None
    return PriceTable(source=source, models=models)


BATCH_PRICE_FACTOR = 0.5
"""A batch call's price relative to the online one where no provider's own is given: OpenAI's and
Azure OpenAI's batch APIs bill half of every token price (input, cached input and output); the
providers' factors are `judges.batch.BATCH_PRICE_FACTORS`."""


def at_batch_price(table: PriceTable | None, factors: Mapping[str, float] | None = None) -> PriceTable | None:
    """`table` with every price times its model's batch factor, its source saying so: the prices
    of batch judging (`config.judge_batch`). The factor of a model name is `factors[name]` (its
    provider's), else `BATCH_PRICE_FACTOR`."""
    if table is None:
        return None
    factors = factors or {}
    models = {
        name: ModelPrice(
            input=price.input * (factor := factors.get(name, BATCH_PRICE_FACTOR)),
            output=price.output * factor,
            cached_input=None if price.cached_input is None else price.cached_input * factor,
        )
        for name, price in table.models.items()
    }
    used = sorted(set(factors.values()) or {BATCH_PRICE_FACTOR})  # the connectors' factors
    shown = "/".join(f"{factor:g}×" for factor in used)
    return PriceTable(source=f"{table.source}, at the batch price ({shown})", models=models)


def price_of(name: str, prices: PriceTable | None) -> tuple[ModelPrice | None, str | None]:
    """The price of the judge model `name` and where it came from: the table's entry for the
    name (source: the table's); else, for the offline judge (`OFFLINE_MODEL_NAME`), a built-in
    zero (`OFFLINE_PRICE_SOURCE`), which a table entry of that name overrides; else (None, None)."""
    if prices is not None and name in prices.models:
        return prices.models[name], prices.source
    if name == OFFLINE_MODEL_NAME:
        return ModelPrice(input=0.0, output=0.0), OFFLINE_PRICE_SOURCE
    return None, None
