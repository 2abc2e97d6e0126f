from core.exceptions import ApplicationError


def reject_unstorable(value: object, *, label: str) -> None:
    """Refuse text a database cannot store (NUL characters, lone surrogates), anywhere in
    a JSON-like value, with a clear message instead of a database error."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ApplicationError(f"{label} contains a NUL character, which cannot be stored.")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ApplicationError(f"{label} contains invalid Unicode.") from None
    elif isinstance(value, dict):
        for key, item in value.items():
            reject_unstorable(key, label=label)
            reject_unstorable(item, label=label)
    elif isinstance(value, list | tuple):
        for item in value:
            reject_unstorable(item, label=label)
