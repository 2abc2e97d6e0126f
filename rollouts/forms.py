from django import forms

from authoring.models import CriterionTag
from llm.forms import EndpointChoiceField
from llm.selectors import endpoint_list_usable
from rollouts.constants import LIMITS
from rollouts.models import DEFAULT_SYSTEM_PROMPT, BatchMode


class RunTrialsForm(forms.Form):
    """The "Run trials" form. Bounds repeat the service's so the browser helps too;
    the service stays the authority (the API calls it directly)."""

    endpoint = EndpointChoiceField(queryset=endpoint_list_usable(), label="Model", empty_label=None)
    n = forms.IntegerField(label="Number of rollouts", min_value=LIMITS["n"][0], max_value=LIMITS["n"][1], initial=8)
    mode = forms.ChoiceField(label="Mode", choices=BatchMode.choices, initial=BatchMode.TOOLS, widget=forms.RadioSelect)
    temperature = forms.FloatField(label="Temperature", min_value=0, max_value=2, required=False, initial=1.0)
    max_steps = forms.IntegerField(label="Max model steps", min_value=LIMITS["max_steps"][0], max_value=LIMITS["max_steps"][1], initial=20)
    max_output_tokens = forms.IntegerField(
        label="Max output tokens per step", min_value=LIMITS["max_output_tokens"][0], max_value=LIMITS["max_output_tokens"][1], initial=4096
    )
    time_limit_seconds = forms.IntegerField(
        label="Time limit per rollout (seconds)",
        min_value=LIMITS["time_limit_seconds"][0],
        max_value=LIMITS["time_limit_seconds"][1],
        initial=600,
    )
    system_prompt = forms.CharField(
        label="System prompt", initial=DEFAULT_SYSTEM_PROMPT, max_length=20_000, widget=forms.Textarea(attrs={"rows": 4})
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Evaluated per form, not once at import: endpoints are added while the site runs.
        self.fields["endpoint"].queryset = endpoint_list_usable()
        for name, field in self.fields.items():
            field.widget.attrs.setdefault("id", f"trials-{name.replace('_', '-')}")


class StepCommentForm(forms.Form):
    text = forms.CharField(max_length=10_000, widget=forms.Textarea(attrs={"rows": 2}))


class StepCriterionForm(forms.Form):
    revision_of = "authoring.rubricversion"  # the object whose revision the form carries (core.views)
    text = forms.CharField(label="Criterion", max_length=5000, widget=forms.Textarea(attrs={"rows": 3}))
    points = forms.IntegerField(label="Points (negative = penalty)", min_value=-100, max_value=100, initial=1)
    tag = forms.ChoiceField(label="Tag", choices=CriterionTag.choices, initial=CriterionTag.IMPORTANT)
    explanation = forms.CharField(
        label="Why it matters (optional)", required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 2})
    )
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)


class CompareForm(forms.Form):
    """Two rollouts of one batch, by their number in it (1-based, as the page shows them)."""

    a = forms.IntegerField(min_value=1, required=False)
    b = forms.IntegerField(min_value=1, required=False)
