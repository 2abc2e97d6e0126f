"""Forms of the verifier panel and the batch quality page. They parse; the services decide."""

from django import forms
from django.conf import settings

from authoring.services.tasks import MAX_JUDGE_SAMPLES
from llm.forms import EndpointChoiceField
from llm.selectors import endpoint_list_usable
from verification.services import MAX_CHEATS_PER_KIND


class RubricSettingsForm(forms.Form):
    revision_of = "authoring.rubricversion"  # the object whose revision the form carries (core.views)
    pass_threshold = forms.FloatField(
        label="Pass threshold (0–1)", min_value=0, max_value=1, widget=forms.NumberInput(attrs={"step": "0.05"})
    )
    all_must_pass = forms.BooleanField(label="All must pass: every positive criterion met and no pitfall", required=False)
    judge_samples = forms.IntegerField(
        label=f"Judge samples per criterion (1–{MAX_JUDGE_SAMPLES})", min_value=1, max_value=MAX_JUDGE_SAMPLES
    )
    revision = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("auto_id", "q-settings-%s")
        super().__init__(*args, **kwargs)


class ProbeRunForm(forms.Form):
    """The run's settings start from PROBE_CHEATS_PER_KIND and PROBE_FLAG_SCORE; the run keeps
    what it ran with. Left out of a request (the API, an older page), they take those defaults."""

    judge_endpoint = EndpointChoiceField(queryset=endpoint_list_usable(), label="Judge model", empty_label=None)
    cheat_endpoint = EndpointChoiceField(
        queryset=endpoint_list_usable(), label="Model that writes cheats aimed at the rubric (optional)", required=False,
        empty_label="None: only the built-in probes",
    )
    cheats_per_kind = forms.IntegerField(
        label=f"Cheats per kind (0–{MAX_CHEATS_PER_KIND})", min_value=0, max_value=MAX_CHEATS_PER_KIND, required=False
    )
    flag_score = forms.FloatField(label="Flag a probe scoring at least", min_value=0.05, max_value=1, required=False,
                                  widget=forms.NumberInput(attrs={"step": "0.05"}))

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("auto_id", "q-probes-%s")
        super().__init__(*args, **kwargs)
        self.fields["cheats_per_kind"].initial = settings.PROBE_CHEATS_PER_KIND
        self.fields["flag_score"].initial = settings.PROBE_FLAG_SCORE
        # Evaluated per form, not once at import: endpoints are added while the site runs.
        self.fields["judge_endpoint"].queryset = endpoint_list_usable()
        self.fields["cheat_endpoint"].queryset = endpoint_list_usable()


class QualityQueryForm(forms.Form):
    """?rubric=<version number>&vs=<version number> on the batch quality page."""

    rubric = forms.IntegerField(min_value=1, required=False)
    vs = forms.IntegerField(min_value=1, required=False)
    criterion = forms.IntegerField(min_value=1, required=False)

    def value(self, name: str) -> int | None:
        return self.cleaned_data.get(name) if self.is_valid() else None


VERDICTS = {"met": True, "not_met": False, "judge": None}


class ExpertVerdictForm(forms.Form):
    rollout = forms.IntegerField(min_value=1)
    criterion = forms.IntegerField(min_value=1)
    verdict = forms.ChoiceField(choices=[("met", "Met"), ("not_met", "Not met"), ("judge", "Agree with the judge")])
    note = forms.CharField(required=False, max_length=2000)

    def met(self) -> bool | None:
        return VERDICTS[self.cleaned_data["verdict"]]


class RankingForm(forms.Form):
    """The ranking as the page sends it: `order` (rollout ids, best first, as shown), and
    either `move` ("<id>:up" / "<id>:down", the buttons) or `position_<id>` numbers (the
    plain form: items are sorted by the numbers typed, ties kept in the shown order)."""

    move = forms.RegexField(regex=r"^\d+:(up|down)$", required=False)

    def __init__(self, data, *args, **kwargs) -> None:
        super().__init__(data, *args, **kwargs)
        self.raw = data

    def order(self) -> list[int]:
        try:
            shown = [int(pk) for pk in self.raw.getlist("order")]
        except ValueError:
            raise forms.ValidationError("The ranking names a trajectory that is not in this batch.") from None
        move = self.cleaned_data.get("move")
        if move:
            pk, direction = move.split(":")
            if int(pk) not in shown:
                raise forms.ValidationError("That trajectory is not in the ranking.")
            i = shown.index(int(pk))
            j = i - 1 if direction == "up" else i + 1
            if 0 <= j < len(shown):
                shown[i], shown[j] = shown[j], shown[i]
            return shown
        positions = {}
        for i, pk in enumerate(shown):
            raw = (self.raw.get(f"position_{pk}") or "").strip()
            try:
                positions[pk] = (int(raw) if raw else i + 1, i)
            except ValueError:
                raise forms.ValidationError(f"Positions are whole numbers; {raw[:20]!r} is not.") from None
        return sorted(shown, key=lambda pk: positions[pk])
