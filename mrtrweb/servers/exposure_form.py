"""One tool's row on the operators' exposure page: whether end users may start it, and who
answers its rounds."""

from __future__ import annotations

import hashlib
from typing import Any, cast

from django import forms
from django.contrib.auth.models import Group
from django.utils.translation import gettext_lazy as _

from .models import Routing, ToolExposure
from .routing_fields import RouteUserField, apply_routing

__all__ = ["EXPOSURE_ROUTING", "ExposureForm"]


EXPOSURE_ROUTING = [("", "as the connection says"), *Routing.choices]


class ExposureForm(forms.ModelForm):
    """One tool's row on the exposure page."""

    required_css_class = "required"

    tool = forms.CharField(widget=forms.HiddenInput, max_length=2000)
    route_user = RouteUserField()

    class Meta:
        model = ToolExposure
        fields = ["exposed", "routing", "route_group"]
        labels = {
            "exposed": "End users may start it",
            "routing": "Who answers",
            "route_group": "Group",
        }

    def __init__(self, *args: Any, tool_name: str, **kwargs: Any) -> None:
        digest = hashlib.sha256(tool_name.encode("utf-8")).hexdigest()[:10]
        kwargs.setdefault("auto_id", f"tool-{digest}-%s")
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.tool_name = tool_name
        self.row_id = f"tool-{digest}"
        self.initial["tool"] = tool_name
        self.initial.setdefault("route_user", self.instance.route_user)
        cast(forms.ChoiceField, self.fields["routing"]).choices = EXPOSURE_ROUTING
        self.fields["routing"].required = False
        route_group = cast(forms.ModelChoiceField, self.fields["route_group"])
        route_group.queryset = Group.objects.order_by("name")
        self.fields["route_group"].required = False

    def clean_tool(self) -> str:
        if self.cleaned_data["tool"] != self.tool_name:
            raise forms.ValidationError(_("The form is for another tool."), code="tool")
        return self.tool_name

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        apply_routing(self, cleaned)
        return cleaned
