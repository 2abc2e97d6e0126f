from django import forms

from authoring.models import CriterionTag, DeliverableKind, DocumentFormat, DocumentKind

METADATA_FIELDS = ["from", "to", "cc", "date", "subject", "channel", "attendees", "start", "end", "location"]


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

    def metadata_from(self, data) -> dict:
        return {key: data.get(f"meta_{key}", "").strip() for key in METADATA_FIELDS if data.get(f"meta_{key}", "").strip()}


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
