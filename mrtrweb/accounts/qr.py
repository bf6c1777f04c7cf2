"""The enrolment QR code: an SVG as a data: URI, so the page needs no script, no inline style
and no request to anywhere (the CSP allows data: images)."""

from __future__ import annotations

import base64

import qrcode
from qrcode.image.svg import SvgPathFillImage


def svg_data_uri(text: str) -> str:
    # A white background of its own, so the code scans on any page colour.
    image = qrcode.make(text, image_factory=SvgPathFillImage, box_size=10, border=4)
    svg: bytes = image.to_string()
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")
