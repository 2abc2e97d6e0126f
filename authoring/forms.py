from django import forms

from authoring.models import CriterionTag, DeliverableKind, DocumentFormat, DocumentKind

# The metadata fields the document editor shows for each kind, in order (a field of
# another kind shows too when it has a value, so nothing stored is out of sight).
METADATA_FIELDS = {
    "file": ["author"],
    "email": ["from", "to", "cc", "bcc", "date", "subject", "thread", "attachments"],
    "chat": ["channel", "from", "date", "thread"],
    "event": ["subject", "start", "end", "location", "attendees"],
}
ALL_METADATA_FIELDS = list(dict.fromkeys(key for keys in METADATA_FIELDS.values() for key in keys))


class WorldForm(forms.Form):
    title = forms.CharField(max_length=200)
    outline = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 10}))
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def facts_from(self, data) -> list[dict]:
        keys, values = data.getlist("fact_key"), data.getlist("fact_value")
        return [{"key": k, "value": v} for k, v in zip(keys, values, strict=False)]


class DocumentSkeletonForm(forms.Form):
    path = forms.CharField(max_length=500)
    kind = forms.ChoiceField(choices=DocumentKind.choices, initial=DocumentKind.FILE)
    format = forms.ChoiceField(choices=[("", "from the path"), *DocumentFormat.choices], required=False)
    brief = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    target_size = forms.IntegerField(min_value=0, max_value=100_000, initial=300)
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


class DocumentForm(DocumentSkeletonForm):
    content = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 18}))
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
    title = forms.CharField(max_length=200)
    prompt = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 8}))
    deliverable_kind = forms.ChoiceField(choices=DeliverableKind.choices, label="Deliverable")
    reference_answer = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6}))
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


class CriterionForm(forms.Form):
    text = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), max_length=5000)
    points = forms.IntegerField(min_value=-100, max_value=100, initial=1)
    tag = forms.ChoiceField(choices=CriterionTag.choices, initial=CriterionTag.IMPORTANT)
    explanation = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2}))
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


class MoveForm(forms.Form):
    direction = forms.ChoiceField(choices=[("up", "up"), ("down", "down")])
    revision = forms.IntegerField(required=False)
