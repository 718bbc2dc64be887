"""What the operator's environment says about judges, read once for the service and the CLI alike.

`FAIR_FORGE_EXTRA_CONNECTORS` (comma-separated class paths the allowlist adds),
`FAIR_FORGE_ALLOWED_ENDPOINT_NETWORKS` (CIDR ranges a caller's endpoint may resolve into),
`FAIR_FORGE_SERVER_KEY_MODELS` and `FAIR_FORGE_SERVER_KEY_MAX_TOKENS` (what the server's key
may buy), `FAIR_FORGE_JUDGE_PRICES` (the judge's price table: JSON, or the path of a JSON
file; `fair_forge_core.judges.prices.read_price_table`), `FAIR_FORGE_JUDGE_CACHE` (the judge
cache: a directory, or `s3://bucket/prefix` for the service), and `LLM_API_KEY` (the
server's own key). An empty variable means the default;
a malformed one is a `SettingsError` naming it, without pydantic's copy of the input (the
key is a plain string: nothing about it can be malformed, so it never appears).
`handler.settings.Settings` extends this class with the service's own settings.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from fair_forge_core.connectors.rules import EndpointPolicy

if TYPE_CHECKING:
    from fair_forge_core.judges.prices import PriceTable

ENV_PREFIX = "FAIR_FORGE_"

# A comma-separated list: never JSON, which pydantic-settings would expect for a tuple.
CommaList = Annotated[tuple[str, ...], NoDecode]


def unprefixed(name: str) -> Any:
    """A field read from the variable `name`, without the FAIR_FORGE_ prefix."""
    return Field(default=None, validation_alias=AliasChoices(name))


class SettingsError(ValueError):
    """A malformed environment variable: the message names it and says what is expected."""


class JudgeEnvironment(BaseSettings):
    """The judge's part of the operator's settings (see the module docstring)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, populate_by_name=True, extra="ignore")

    extra_connectors: CommaList = ()
    allowed_endpoint_networks: CommaList = ()
    server_key_models: CommaList = ()
    server_key_max_tokens: int = 1024
    server_api_key_env: str | None = unprefixed("LLM_API_KEY")
    # The raw value; `price_table()` reads it (checked here, so a bad table fails at start).
    judge_prices: str | None = None
    judge_cache: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _blank_is_default(cls, values: Any) -> Any:
        """`FAIR_FORGE_X=` (or only spaces) means "not set": the default applies."""
        if isinstance(values, dict):
            return {k: v for k, v in values.items() if not (isinstance(v, str) and not v.strip())}
        return values

    @field_validator("extra_connectors", "allowed_endpoint_networks", "server_key_models", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        return value

    @field_validator("allowed_endpoint_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        """CIDR ranges, normalised; a malformed one is refused here, not on some later request."""
        return tuple(str(ipaddress.ip_network(item, strict=False)) for item in value)

    @field_validator("judge_prices")
    @classmethod
    def _price_table(cls, value: str | None) -> str | None:
        """The table must read (JSON, or a readable JSON file) now, not on some later request."""
        if value is not None:
            from fair_forge_core.judges.prices import read_price_table

            read_price_table(value)
        return value

    @field_validator("judge_cache")
    @classmethod
    def _cache_location(cls, value: str | None) -> str | None:
        """A directory path, or `s3://<bucket>/<prefix>` (the prefix may be empty)."""
        if value is not None and value.startswith("s3://"):
            bucket = value.removeprefix("s3://").split("/", 1)[0]
            if not bucket:
                raise ValueError("an S3 judge cache is s3://<bucket>/<prefix>")
        return value

    def price_table(self) -> PriceTable | None:
        """The judge's price table (`FAIR_FORGE_JUDGE_PRICES`), or None when unset."""
        if self.judge_prices is None:
            return None
        from fair_forge_core.judges.prices import read_price_table

        return read_price_table(self.judge_prices)

    def endpoint_policy(self, also_allowed: tuple[str, ...] = ()) -> EndpointPolicy:
        """The endpoint policy of these settings; `also_allowed` networks on top (the CLI's loopback)."""
        return EndpointPolicy(
            (*also_allowed, *self.allowed_endpoint_networks), self.server_key_models, self.server_key_max_tokens
        )

    @classmethod
    def variable(cls, field: str) -> str:
        """The environment variable of `field`."""
        alias = cls.model_fields[field].validation_alias
        if isinstance(alias, AliasChoices):
            return str(alias.choices[0])
        return ENV_PREFIX + field.upper()

    @classmethod
    def describe(cls, exc: ValidationError) -> SettingsError:
        """One line per malformed variable, without pydantic's copy of its value (it could be a key)."""
        fields = {cls.variable(field): field for field in cls.model_fields}
        problems = []
        for error in exc.errors(include_input=False, include_url=False):
            location = str(error["loc"][0]) if error["loc"] else ""
            field = location if location in cls.model_fields else fields.get(location.upper(), location)
            variable = cls.variable(field) if field in cls.model_fields else location
            problems.append(f"{variable}: {error['msg']}")
        return SettingsError("Invalid environment variable " + "; ".join(problems))

    @classmethod
    def read(cls) -> JudgeEnvironment:
        """The judge's settings in the environment now; `SettingsError` for a malformed variable."""
        try:
            return cls()
        except ValidationError as exc:
            raise cls.describe(exc) from None
