"""serve-sim's two errors: one that stops it starting, one that answers a request with a 400."""

from __future__ import annotations

from judgebias.config import ConfigError


class ServeSimError(ConfigError):
    """serve-sim cannot start as asked (e.g. a non-loopback host, a missing key variable).

    A :class:`ConfigError`, so ``judgebias`` reports it as one line and exits 2.
    """


class BadRequest(ValueError):
    """The request body is malformed; answered with a 400 in the provider's format."""
