"""The 2026-07-28 wire shapes of a form's ``requestedSchema`` and its properties.

``mcp_types`` exports ``requestedSchema`` only as a plain dict (``ElicitRequestedSchema``);
its strict per-property models live in a private per-version package. These are the same
shapes written against pydantic alone, so an upgrade of ``mcp_types`` cannot change them
unseen. Unknown keys are ignored here, as there: :mod:`.schema` holds every property to an
allow-list of keywords itself.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "BooleanSchema",
    "LegacyTitledEnumSchema",
    "NumberSchema",
    "RequestedSchema",
    "StringSchema",
    "TitledMultiSelectEnumSchema",
    "TitledSingleSelectEnumSchema",
    "UntitledMultiSelectEnumSchema",
    "UntitledSingleSelectEnumSchema",
]


class Wire(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore")


class RequestedSchema(Wire):
    schema_: Annotated[str | None, Field(alias="$schema")] = None
    properties: dict[str, Any]
    required: list[str] | None = None
    type: Literal["object"]


class Described(Wire):
    title: str | None = None
    description: str | None = None


class BooleanSchema(Described):
    default: bool | None = None
    type: Literal["boolean"]


class StringSchema(Described):
    default: str | None = None
    format: Literal["date", "date-time", "email", "uri"] | None = None
    max_length: Annotated[int | None, Field(alias="maxLength")] = None
    min_length: Annotated[int | None, Field(alias="minLength")] = None
    type: Literal["string"]


class NumberSchema(Described):
    default: int | float | None = None
    maximum: int | float | None = None
    minimum: int | float | None = None
    type: Literal["integer", "number"]


class UntitledSingleSelectEnumSchema(Described):
    default: str | None = None
    enum: list[str]
    type: Literal["string"]


class LegacyTitledEnumSchema(Described):
    default: str | None = None
    enum: list[str]
    enum_names: Annotated[list[str] | None, Field(alias="enumNames")] = None
    type: Literal["string"]


class TitledOption(Wire):
    const: str
    title: str


class TitledSingleSelectEnumSchema(Described):
    default: str | None = None
    one_of: Annotated[list[TitledOption], Field(alias="oneOf")]
    type: Literal["string"]


class TitledItems(Wire):
    any_of: Annotated[list[TitledOption], Field(alias="anyOf")]


class UntitledItems(Wire):
    enum: list[str]
    type: Literal["string"]


class MultiSelect(Described):
    default: list[str] | None = None
    max_items: Annotated[int | None, Field(alias="maxItems")] = None
    min_items: Annotated[int | None, Field(alias="minItems")] = None
    type: Literal["array"]


class TitledMultiSelectEnumSchema(MultiSelect):
    items: TitledItems


class UntitledMultiSelectEnumSchema(MultiSelect):
    items: UntitledItems
