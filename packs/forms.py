from django import forms

from packs.formats import FORMAT_CHOICES


class PackForm(forms.Form):
    name = forms.CharField(max_length=120, initial="pack")
    submissions = forms.TypedMultipleChoiceField(coerce=int, choices=[])
    formats = forms.MultipleChoiceField(choices=FORMAT_CHOICES, required=False)

    def __init__(self, *args, approved=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["submissions"].choices = [(s.pk, f"{s.title} v{s.number}") for s in approved]


class PackImportForm(forms.Form):
    file = forms.FileField(label="Pack zip (built by Taskwright, with its own format)")
    again = forms.BooleanField(required=False, label="Import again even if this pack was imported here before (makes a second copy)")
