from django import forms

from reviews.models import Decision


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices)
    comment = forms.CharField(required=False, max_length=20_000, widget=forms.Textarea(attrs={"rows": 5}))
