"""`template.yaml` as data: CloudFormation's short forms (!Ref, !Sub, …) read as their long forms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent


class _CfnLoader(yaml.SafeLoader):
    """Reads CloudFormation's short forms (!Ref, !Sub, ...) as {"Ref": ...}, {"Fn::Sub": ...}."""


def _intrinsic(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    name = suffix if suffix == "Ref" else f"Fn::{suffix}"
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _intrinsic)


def template() -> dict[str, Any]:
    return dict(yaml.load((ROOT / "template.yaml").read_text(), Loader=_CfnLoader))  # a SafeLoader
