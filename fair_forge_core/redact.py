"""Masking secrets out of text before it reaches an error message or a log line."""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[REDACTED]"

# Provider key shapes (OpenAI "sk-…", Groq "gsk_…", Anthropic "sk-ant-…", AWS access
# key ids) and bearer tokens. Providers echo masked keys ("sk-te****1234") in 401
# messages; the partial key is still a secret, so any such token is masked whole.
_KEY_LIKE = re.compile(
    r"(?i)\b(?:sk-[a-z0-9_\-*.]{6,}|gsk_[a-z0-9_\-*.]{6,}|AKIA[0-9A-Z]{12,}|bearer\s+[a-z0-9_\-.=*]{6,})"
)
_KEY_FIELD = re.compile(
    r"(?i)(\"?(?:api_key|apikey|api-key|secret|password|token)\"?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|\S+)"
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every known secret value, key-shaped token and `api_key=…` value masked.

    `secrets` are exact values to mask (the request's and the server's keys);
    values shorter than 4 characters are ignored, as masking them would mangle text.
    """
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    text = _KEY_LIKE.sub(MASK, text)
    return _KEY_FIELD.sub(lambda m: m.group(1) + MASK, text)
