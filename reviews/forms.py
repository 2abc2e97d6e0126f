from django import forms

from reviews.models import Decision, ReviewPolicy
from reviews.services import ChecklistMark


class DecisionForm(forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices)
    comment = forms.CharField(required=False, max_length=20_000, widget=forms.Textarea(attrs={"rows": 5}))


def checklist_marks(data, items) -> tuple[list[ChecklistMark], dict[int, dict]]:
    """The reviewer's answers from the form (`check-<item id>` = pass|fail, `note-<item id>`),
    and what they typed per item so a refused form shows it again."""
    marks, typed = [], {}
    for item in items:
        answer = data.get(f"check-{item.pk}", "")
        note = data.get(f"note-{item.pk}", "")
        typed[item.pk] = {"answer": answer, "note": note}
        if answer in ("pass", "fail"):
            marks.append(ChecklistMark(item_id=item.pk, passed=answer == "pass", note=note))
    return marks, typed


class AdjudicationForm(forms.Form):
    decision = forms.ChoiceField(choices=Decision.choices)
    note = forms.CharField(max_length=20_000, widget=forms.Textarea(attrs={"rows": 4}))


class ReviewPolicyForm(forms.ModelForm):
    class Meta:
        model = ReviewPolicy
        fields = ["approvals_required", "gate_graded_rollouts", "min_graded_rollouts", "gate_probes", "gate_difficulty",
                  "pass1_ceiling", "passk_floor", "queue_alert_threshold"]
        labels = {
            "approvals_required": "Approvals needed from distinct reviewers",
            "gate_graded_rollouts": "Require graded trial rollouts on the current rubric",
            "min_graded_rollouts": "How many graded rollouts",
            "gate_probes": "Require the reward-hacking probes, with every flagged probe explained",
            "gate_difficulty": "Require a learnable difficulty",
            "pass1_ceiling": "pass@1 must be below (0–1)",
            "passk_floor": "pass@k must be above (0–1)",
            "queue_alert_threshold": "Tell reviewers when this many submissions wait (0: never)",
        }
        help_texts = {"approvals_required": "With 2 or more, reviewers who disagree send the task to an admin."}
