from django import forms


class PackForm(forms.Form):
    name = forms.CharField(max_length=120, initial="pack")
    submissions = forms.TypedMultipleChoiceField(coerce=int, choices=[])

    def __init__(self, *args, approved=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["submissions"].choices = [(s.pk, f"{s.title} v{s.number}") for s in approved]
