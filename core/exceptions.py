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
