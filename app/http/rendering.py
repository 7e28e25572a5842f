"""JSON responses built by hand: the features splice stored JSON in verbatim
(app.sessions.rendering), without a parse and re-encode per value."""

from fastapi.responses import Response

from ..core import json_codec

JSON_MEDIA_TYPE = "application/json"


def etag(revision: int) -> str:
    return f'"{revision}"'


def json_response(body: object) -> Response:
    return Response(json_codec.dumps(body), media_type=JSON_MEDIA_TYPE)
