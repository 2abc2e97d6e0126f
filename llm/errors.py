from core.exceptions import ApplicationError


class ModelError(ApplicationError):
    """A model call failed. `kind` says how, in words an admin can act on:

    config   – the endpoint is not usable as configured (no key in the environment …)
    auth     – the provider refused the key
    quota    – the account is out of credit or over its quota
    timeout  – no complete answer in time, after retries
    server   – the provider kept failing (5xx, 429) after retries
    response – the answer was malformed (bad JSON, failed the schema) after retries
    """

    def __init__(self, message: str, *, kind: str, attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


class RetryableError(Exception):
    """One attempt failed in a way worth retrying; `retry_after` is the server's hint."""

    def __init__(self, message: str, *, kind: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
