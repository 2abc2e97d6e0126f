from django import forms

from accounts.models import Role


class MemberAddForm(forms.Form):
    identifier = forms.CharField(label="User name or email", max_length=254,
                                 help_text="An account a site administrator has made. It gets the role you choose.")
    role = forms.ChoiceField(label="Role", choices=Role.choices, initial=Role.AUTHOR)
