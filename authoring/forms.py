import regex
from django import forms

from authoring.models import CriterionTag, DeliverableKind, DocumentFormat, DocumentKind, GraderKind
from core.forms import MultilineField

# The metadata fields the document editor shows for each kind, in order (a field of
# another kind shows too when it has a value, so nothing stored is out of sight).
METADATA_FIELDS = {
    "file": ["author"],
    "email": ["from", "to", "cc", "bcc", "date", "subject", "thread", "attachments"],
    "chat": ["channel", "from", "date", "thread"],
    "event": ["subject", "start", "end", "location", "attendees", "all_day", "rrule"],
}
# Each field's label and an example of what it takes (the renderers refuse anything else, and say why).
METADATA_HINTS = {
    "author": ("Author", "Ann Lee"),
    "from": ("From", "Ann Lee <ann@acme.test>"),
    "to": ("To", "Name <name@example.com>, several separated by commas"),
    "cc": ("Cc", "Name <name@example.com>, …"),
    "bcc": ("Bcc", "Name <name@example.com>, …"),
    "date": ("Date", "2026-03-02T09:30:00+00:00"),
    "subject": ("Subject", ""),
    "thread": ("Thread", "the path of the thread's first message, e.g. Mail/01 Kickoff"),
    "attachments": ("Attachments", "paths of files in this world, separated by commas"),
    "channel": ("Channel", "deal-team"),
    "start": ("Start", "2026-03-06T15:00:00+00:00"),
    "end": ("End", "2026-03-06T16:00:00+00:00 (all day: the day after the last)"),
    "location": ("Location", ""),
    "attendees": ("Attendees", "Name <name@example.com>, …"),
    "all_day": ("All day", "true or false"),
    "rrule": ("Repeats (an iCalendar rule)", "FREQ=WEEKLY;COUNT=10"),
}
ALL_METADATA_FIELDS = list(dict.fromkeys(key for keys in METADATA_FIELDS.values() for key in keys))


class WorldForm(forms.Form):
    revision_of = "authoring.world"  # the object whose revision the form carries (core.views)
    title = forms.CharField(max_length=200)
    outline = MultilineField(rows=10)
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def facts_from(self, data) -> list[dict]:
        keys, values = data.getlist("fact_key"), data.getlist("fact_value")
        return [{"key": k, "value": v} for k, v in zip(keys, values, strict=False)]


class DocumentSkeletonForm(forms.Form):
    revision_of = "authoring.document"  # the object whose revision the form carries (core.views)
    path = forms.CharField(max_length=500)
    kind = forms.ChoiceField(choices=DocumentKind.choices, initial=DocumentKind.FILE)
    format = forms.ChoiceField(choices=[("", "from the path"), *DocumentFormat.choices], required=False)
    brief = MultilineField(rows=2)
    target_size = forms.IntegerField(min_value=0, max_value=100_000, initial=300)
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


class DocumentForm(DocumentSkeletonForm):
    content = MultilineField(rows=18)
    locked = forms.BooleanField(required=False, label="Locked (drafting never touches it)")

    def metadata_from(self, data, current: dict) -> dict:
        """A field on the form sets its value (left empty, removes it); a field the form
        did not carry keeps the value it had."""
        kept = {key: value for key, value in current.items() if f"meta_{key}" not in data}
        edited = {key: data.get(f"meta_{key}", "").strip() for key in ALL_METADATA_FIELDS}
        return {**kept, **{key: value for key, value in edited.items() if value}}


class EnvTaskCreateForm(forms.Form):
    title = forms.CharField(max_length=200)


class EnvTaskForm(forms.Form):
    revision_of = "authoring.envtask"  # the object whose revision the form carries (core.views)
    title = forms.CharField(max_length=200)
    prompt = MultilineField(rows=8)
    deliverable_kind = forms.ChoiceField(choices=DeliverableKind.choices, label="Deliverable")
    reference_answer = MultilineField(rows=6)
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


JUDGE_SEES = [("answer", "the final answer"), ("files", "the files it wrote or changed"), ("trajectory", "every step it took")]
# The deterministic checks rollouts.grading.checks runs (authoring sits below rollouts, so
# the list is repeated here; tests/grading/test_pages.py checks that the two agree).
CHECK_KINDS = [
    ("contains", "The answer contains a text"),
    ("not_contains", "The answer does not contain a text"),
    ("regex", "The answer matches a pattern (regular expression)"),
    ("exact", "The answer is exactly a text"),
    ("numeric", "The answer states a number (± tolerance)"),
    ("file_exists", "The agent wrote a file"),
    ("file_contains", "A file the agent wrote contains a text"),
    ("xlsx_cell", "A spreadsheet cell the agent wrote has a value"),
    ("email_sent", "The agent sent an email"),
]
# Which setting each check uses: (form field, config key) → the check kinds; required ones first.
CHECK_SETTINGS = {
    "check_value": ("value", ("contains", "not_contains", "exact", "numeric", "file_contains", "xlsx_cell")),
    "check_pattern": ("pattern", ("regex",)),
    "check_path": ("path", ("file_exists", "file_contains", "xlsx_cell")),
    "check_cell": ("cell", ("xlsx_cell",)),
    "check_to": ("to", ("email_sent",)),
    "check_sheet": ("sheet", ("xlsx_cell",)),
    "check_tolerance": ("tolerance", ("numeric", "xlsx_cell")),
    "check_relative": ("relative", ("numeric",)),
    "check_subject": ("subject_contains", ("email_sent",)),
    "check_match_case": ("case_sensitive", ("contains", "not_contains", "regex")),
}
CHECK_REQUIRED = {"check_value", "check_pattern", "check_path", "check_cell", "check_to"}


class CriterionForm(forms.Form):
    revision_of = "authoring.rubricversion"  # the object whose revision the form carries (core.views)
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)
    points = forms.IntegerField(min_value=-100, max_value=100, initial=1)
    tag = forms.ChoiceField(choices=CriterionTag.choices, initial=CriterionTag.IMPORTANT)
    explanation = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2}))
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)
    # The grader. A form that does not carry grader_kind leaves the criterion's grader as it is.
    grader_kind = forms.ChoiceField(choices=GraderKind.choices, required=False, initial=GraderKind.LLM_JUDGE, widget=forms.RadioSelect)
    judge_sees = forms.MultipleChoiceField(choices=JUDGE_SEES, required=False, initial=["answer"], widget=forms.CheckboxSelectMultiple)
    check = forms.ChoiceField(choices=CHECK_KINDS, required=False)
    check_value = forms.CharField(required=False, max_length=2000, label="Text or value")
    check_pattern = forms.CharField(required=False, max_length=2000, label="Pattern")
    check_path = forms.CharField(required=False, max_length=500, label="File path")
    check_cell = forms.CharField(required=False, max_length=20, label="Cell (e.g. B4)")
    check_to = forms.CharField(required=False, max_length=320, label="Recipient")
    check_sheet = forms.CharField(required=False, max_length=100, label="Sheet (optional)")
    check_tolerance = forms.FloatField(required=False, min_value=0, label="Tolerance")
    check_relative = forms.BooleanField(required=False, label="Tolerance is a fraction of the value")
    check_subject = forms.CharField(required=False, max_length=500, label="Subject contains (optional)")
    check_match_case = forms.BooleanField(required=False, label="Match case")

    def clean(self) -> dict:
        data = super().clean()
        if data.get("grader_kind") != GraderKind.CHECK:
            return data
        kind = data.get("check")
        if not kind:
            raise forms.ValidationError("Choose which check grades this criterion.")
        for name, (_, kinds) in CHECK_SETTINGS.items():
            if kind in kinds and name in CHECK_REQUIRED and data.get(name) in (None, ""):
                self.add_error(name, "This check needs it.")
        if kind == "numeric" and data.get("check_value"):
            try:
                float(data["check_value"].replace(",", ""))
            except ValueError:
                self.add_error("check_value", "A numeric check compares with a number, e.g. 12000000.")
        if kind == "regex" and data.get("check_pattern"):
            try:
                regex.compile(data["check_pattern"])
            except regex.error as error:
                self.add_error("check_pattern", f"Not a valid regular expression: {error}.")
        return data

    def grader(self) -> tuple[str, dict] | None:
        """(grader_kind, grader_config) from a valid form; None when the form carried no grader."""
        data = self.cleaned_data
        if not data.get("grader_kind"):
            return None
        if data["grader_kind"] == GraderKind.LLM_JUDGE:
            return GraderKind.LLM_JUDGE, {"sees": data.get("judge_sees") or ["answer"]}
        kind = data["check"]
        config: dict = {"check": kind}
        for name, (key, kinds) in CHECK_SETTINGS.items():
            value = data.get(name)
            if kind not in kinds or value in (None, "", False):
                continue
            if name == "check_match_case" and kind == "regex":
                continue  # a regex is case-insensitive unless the author asks to match case
            config[key] = float(value.replace(",", "")) if (name == "check_value" and kind == "numeric") else value
        if kind == "regex" and not data.get("check_match_case"):
            config["flags"] = "i"
        if kind == "numeric":
            config.setdefault("tolerance", 0.0)
        return GraderKind.CHECK, config

    @staticmethod
    def grader_initial(grader_kind: str, config: dict) -> dict:
        """The form's initial grader fields for a stored grader."""
        if grader_kind != GraderKind.CHECK:
            return {"grader_kind": GraderKind.LLM_JUDGE, "judge_sees": config.get("sees") or ["answer"]}
        initial = {"grader_kind": GraderKind.CHECK, "check": config.get("check", "")}
        for name, (key, _) in CHECK_SETTINGS.items():
            if key in config:
                initial[name] = config[key]
        initial["check_match_case"] = bool(config.get("case_sensitive")) or (
            config.get("check") == "regex" and "i" not in str(config.get("flags", ""))
        )
        return initial

    def check_settings(self) -> list[tuple]:
        """(bound field, CSS classes naming the checks that use it), for the template."""
        return [(self[name], " ".join(f"q-for-{kind}" for kind in kinds)) for name, (_, kinds) in CHECK_SETTINGS.items()]


class MoveForm(forms.Form):
    direction = forms.ChoiceField(choices=[("up", "up"), ("down", "down")])
    revision = forms.IntegerField(required=False)
