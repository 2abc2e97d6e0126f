from django import forms

from core.exceptions import ApplicationError


def form_error(form: forms.Form) -> ApplicationError:
    """The form's first error as the message the user reads ("Label: what is wrong")."""
    field, errors = next(iter(form.errors.items()))
    label = "" if field == "__all__" else f"{form.fields[field].label or field.replace('_', ' ').capitalize()}: "
    return ApplicationError(f"{label}{errors[0]}")
