"""Result models built from values that are already what validation would make of them, without
validating them again: what an evaluation of 50,000 turns makes tens of thousands of times
(`metrics`: a repeated turn's `InteractionResult`, each `ConversationMetrics`).

`trusted(kind, fields)` builds an instance as pydantic's `model_construct` does (its `__dict__`,
its fields set, no extra, no private values), without `model_construct`'s look-up of each field's
default and alias, holding the one fields set shared by every instance of `kind` given every field
(`schemas.base.with_shared_fields_set`). The caller guarantees the values: each of its field's
type as validation would give it (a float field a float, not an int), every field given, in the
class's field order. A missing or unknown field is a ValueError; a class with private attributes
or a post-init, which `trusted` would leave unset, is a TypeError.
"""

from __future__ import annotations

from typing import Any, TypeVar

from fair_forge_core.schemas.base import ResultModel, with_shared_fields_set

R = TypeVar("R", bound=ResultModel)


def trusted(kind: type[R], fields: dict[str, Any]) -> R:
    """An instance of the result model `kind` holding `fields` (module docstring)."""
    every = fields_of(kind)
    if fields.keys() != every:
        raise ValueError(f"{kind.__name__} needs every field and no other: {sorted(fields.keys() ^ every)}")
    return made(kind, fields, every)


def made(kind: type[R], fields: dict[str, Any], every: set[str]) -> R:
    """`trusted` of `fields` known to hold every field of `kind` (`every`, its `fields_of`), such as
    a copy of another instance's `__dict__`: not checked, for a caller that builds one per turn."""
    instance = _new(kind)
    _set(instance, "__dict__", fields)
    _set(instance, "__pydantic_fields_set__", every)
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


_set = object.__setattr__  # what `model_construct` sets an instance's slots with (a model's own is frozen)
_new = object.__new__


def fields_of(kind: type[ResultModel]) -> set[str]:
    """The one fields set `with_shared_fields_set` shares among the instances of `kind` given every
    field (module docstring: the TypeError)."""
    found = _FIELDS_SETS.get(kind)
    if found is None:
        if kind.__private_attributes__ or kind.__pydantic_post_init__:
            raise TypeError(f"{kind.__name__} has private attributes or a post-init: build it by model_construct")
        probe = with_shared_fields_set(kind.model_construct(**dict.fromkeys(kind.model_fields)))
        found = _FIELDS_SETS[kind] = probe.__pydantic_fields_set__
    return found


_FIELDS_SETS: dict[type[ResultModel], set[str]] = {}
