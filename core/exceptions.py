class ApplicationError(Exception):
    """A rule of the domain said no. The message is shown to the user as is."""

    def __init__(self, message: str, *, extra: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class StaleEditError(ApplicationError):
    """A save was based on a revision that someone else has since replaced.

    `extra` carries what the user needs to merge by hand: who saved, when, and the
    current values, so nothing the user typed is lost.
    """


class PermissionRefused(ApplicationError):
    """The user's role in the project may not do this (a reviewer editing, an author
    approving, anyone but an admin building a pack).

    Its own class because it answers 403, on the API and on the pages alike: the request
    was well formed, the user may not make it. A rule the request broke stays a 400
    (API) or 422 (pages).
    """
