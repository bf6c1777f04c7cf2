"""The flat elicitation vocabulary: ``requestedSchema`` ⇄ Django form ⇄ typed content.

Typical use for one ``elicitation/create`` input request under ``key``::

    request = parse_request(input_request)           # FormRequest | UrlRequest
    spec = classify(request.schema)                  # or UnsupportedSchema: decline/cancel only
    form = build_form(spec, prefix=prefix_for_key(key), data=request_post or None)
    if form.is_valid():
        content = content_from(form)                 # ElicitResult.content

URL mode: ``describe_url(request.url)`` for the consent screen; never fetch the URL.

Answers given as JSON (the API) skip the form: ``clean_content(spec, content)`` is the step
the form fields end with, so both accept the same values and send the same content.
"""

from mrtrweb.elicitation.content import (
    AnswerProblem,
    Content,
    ContentProblem,
    InvalidContent,
    clean_content,
    clean_value,
)
from mrtrweb.elicitation.fields import RADIO_MAX_OPTIONS, control_for, option_index
from mrtrweb.elicitation.forms import (
    ElicitationForm,
    accept_result,
    build_form,
    content_from,
    initial_from_content,
)
from mrtrweb.elicitation.names import (
    field_name_for,
    key_for_prefix,
    prefix_for_key,
    prop_for_field_name,
)
from mrtrweb.elicitation.requests import (
    FormRequest,
    InvalidElicitation,
    UrlRequest,
    answers_match,
    parse_request,
)
from mrtrweb.elicitation.schema import (
    EnumStyle,
    FieldSpec,
    FormSpec,
    Kind,
    Option,
    UnsupportedSchema,
    classify,
)
from mrtrweb.elicitation.url_mode import UrlInfo, UrlWarning, describe_url
from mrtrweb.elicitation.values import value_problem

__all__ = [
    "RADIO_MAX_OPTIONS",
    "AnswerProblem",
    "Content",
    "ContentProblem",
    "ElicitationForm",
    "EnumStyle",
    "FieldSpec",
    "FormRequest",
    "FormSpec",
    "InvalidContent",
    "InvalidElicitation",
    "Kind",
    "Option",
    "UnsupportedSchema",
    "UrlInfo",
    "UrlRequest",
    "UrlWarning",
    "accept_result",
    "answers_match",
    "build_form",
    "classify",
    "clean_content",
    "clean_value",
    "content_from",
    "control_for",
    "describe_url",
    "field_name_for",
    "initial_from_content",
    "key_for_prefix",
    "option_index",
    "parse_request",
    "prefix_for_key",
    "prop_for_field_name",
    "value_problem",
]
