"""The root of the API layer's own refusals (`ApiError`): what the API itself says no to, before
or besides the use cases (a malformed request, no credential, a rate limit, a closing stream).
`service/api/errors.py` answers each as problem+json."""

from __future__ import annotations


class ApiError(Exception):
    """An API refusal: answered with `status` and `title` unless its class has a handler of
    its own (`service.api.errors.install`)."""

    status = 400
    title = "Bad Request"
