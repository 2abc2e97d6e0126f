from django import forms


class MultilineField(forms.CharField):
    """Text typed in a textarea, kept as typed except for line ends: browsers send CRLF
    (the HTML standard's form encoding), the API and the models send LF. Normalised here,
    a prompt saved from the page unchanged is the same text as before, and a version diff
    shows no change that is not one (Django's default strip dropped the final newline too)."""

    def __init__(self, *, rows: int = 4, **kwargs) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("strip", False)
        kwargs.setdefault("widget", forms.Textarea(attrs={"rows": rows}))
        super().__init__(**kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        return value.replace("\r\n", "\n").replace("\r", "\n") if isinstance(value, str) else value
