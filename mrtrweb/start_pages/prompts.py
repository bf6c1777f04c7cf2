"""The arguments form of a prompt: its declared arguments, all strings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django import forms
from django.utils.html import escape

from mrtrweb.elicitation import field_name_for

from .tools import text_or_none


@dataclass(frozen=True)
class PromptArgumentSpec:
    name: str
    required: bool
    title: str | None = None
    description: str | None = None

    @property
    def field_name(self) -> str:
        return field_name_for(self.name)


def prompt_arguments(prompt: Mapping[str, Any]) -> tuple[PromptArgumentSpec, ...]:
    specs = []
    for raw in prompt.get("arguments") or []:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
            continue
        specs.append(
            PromptArgumentSpec(
                name=raw["name"],
                required=raw.get("required") is True,
                title=text_or_none(raw.get("title")),
                description=text_or_none(raw.get("description")),
            )
        )
    return tuple(specs)


class PromptArgumentsForm(forms.Form):
    """A prompt's declared arguments, all strings; empty optional ones are left out."""

    required_css_class = "required"
    error_css_class = "error"

    def __init__(self, specs: Sequence[PromptArgumentSpec], *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("prefix", "arg")
        super().__init__(*args, **kwargs)
        self.specs = tuple(specs)
        for spec in self.specs:
            self.fields[spec.field_name] = forms.CharField(
                label=spec.title or spec.name or "Argument",
                required=spec.required,
                help_text=escape(spec.description) if spec.description else "",
            )

    def arguments(self) -> dict[str, str]:
        return {
            spec.name: self.cleaned_data[spec.field_name]
            for spec in self.specs
            if self.cleaned_data.get(spec.field_name)
        }
