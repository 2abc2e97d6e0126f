"""API request throttling (REST_FRAMEWORK's DEFAULT_THROTTLE_CLASSES and _RATES).

Counted in the default cache: Redis when REDIS_URL or CACHE_URL is set, so every web process
on every host counts against one limit. One counter per client and window, raised with the
cache's atomic increment (Redis INCR): DRF's own throttles keep a list of timestamps that each
process reads, appends to and writes back, so concurrent requests on several processes
overwrite each other's and count too few. A fixed window admits at most twice the rate across
a window's edge; for a limit meant to stop runaway loops, not to meter, that is fine.

Over the limit, DRF answers 429 with `Retry-After` (the seconds left in the window) and a
JSON body (core.apis.exception_handler).
"""

import hashlib
import math

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest
from rest_framework.settings import api_settings
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle


def client_address(request: HttpRequest) -> str:
    """The client's address as the sign-in limits and the throttles see it: REMOTE_ADDR, or with
    NUM_PROXIES trusted proxies in front, the address the outermost of them saw."""
    return BaseThrottle().get_ident(request) or "unknown"


class _WindowRateThrottle(SimpleRateThrottle):
    cache_format = "throttle:%(scope)s:%(ident)s"

    def get_rate(self) -> str | None:
        # Read per request rather than once at import (as DRF does), so a settings change
        # (tests, an override) applies.
        try:
            return api_settings.DEFAULT_THROTTLE_RATES[self.scope]
        except KeyError:
            raise ImproperlyConfigured(f"No throttle rate set for scope {self.scope!r} in DEFAULT_THROTTLE_RATES.") from None

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        ident_key = self.get_cache_key(request, view)
        if ident_key is None:
            return True
        now = self.timer()
        window = int(now // self.duration)
        key = f"{ident_key}:{window}"
        self.cache.add(key, 0, self.duration + 1)
        try:
            count = self.cache.incr(key)
        except ValueError:  # expired between add and incr
            self.cache.set(key, 1, self.duration + 1)
            count = 1
        self._seconds_left = (window + 1) * self.duration - now
        return count <= self.num_requests

    def wait(self) -> float:
        return max(1, math.ceil(self._seconds_left))


class TokenRateThrottle(_WindowRateThrottle):
    """Requests per API token; a browser session (no token) counts as its user's."""

    scope = "token"

    def get_cache_key(self, request, view) -> str | None:
        if not (request.user and request.user.is_authenticated):
            return None
        key = getattr(request.auth, "key", None)
        # A digest, not the token: cache keys show up in Redis's monitoring.
        ident = f"t{hashlib.sha256(key.encode()).hexdigest()[:32]}" if isinstance(key, str) else f"u{request.user.pk}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class AddressRateThrottle(_WindowRateThrottle):
    """Requests per client address before sign-in (the token endpoint, the schema)."""

    scope = "address"

    def get_cache_key(self, request, view) -> str | None:
        if request.user and request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
