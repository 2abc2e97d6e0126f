"""The reviewer dashboard: queue depth and time in queue, approval rate and throughput per
reviewer, agreement (Cohen's kappa) per checklist item and per pair of reviewers, and the
queue over the last 30 days, for the projects the user reviews or administers
(?project=<id> narrows it to one). The two tables that grow with the team are paged; htmx
asks for one of them with ?part=reviewers|pairs and gets that partial only."""

from django import forms
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from reviews.selectors import stats as selectors
from reviews.views import stats_plots

TEMPLATE = "reviews/review_stats.html"
PAGE_SIZE = 20


class StatsQueryForm(forms.Form):
    project = forms.IntegerField(min_value=1, max_value=2**63 - 1, required=False)
    reviewers_page = forms.CharField(required=False)
    pairs_page = forms.CharField(required=False)


def _reviewers(request: HttpRequest, scope: selectors.StatsScope) -> dict:
    page: Page = Paginator(selectors.reviewer_activity(scope=scope), PAGE_SIZE).get_page(request.GET.get("reviewers_page"))
    rows = selectors.reviewer_rows(scope=scope, activity=list(page.object_list))
    return {"reviewers_page": page, "reviewer_rows": rows, "approval_plot": stats_plots.approval_bars(rows) if rows else None}


def _pairs(request: HttpRequest, scope: selectors.StatsScope) -> dict:
    page: Page = Paginator(selectors.reviewer_pairs(scope=scope), PAGE_SIZE).get_page(request.GET.get("pairs_page"))
    return {"pairs_page": page, "pair_rows": selectors.pair_rows(scope=scope, pairs=list(page.object_list))}


PARTS = {"reviewers": _reviewers, "pairs": _pairs}


@require_GET
def review_stats(request: HttpRequest) -> HttpResponse:
    form = StatsQueryForm(request.GET)
    if not form.is_valid():
        raise Http404("No such project.")
    scope = selectors.review_stats_scope(user=request.user, project_id=form.cleaned_data["project"])
    context = {"scope": scope, "project_query": f"&project={scope.project.pk}" if scope.project else ""}
    part = request.GET.get("part")
    if request.htmx and part in PARTS:
        return render(request, f"{TEMPLATE}#stats-{part}", {**context, **PARTS[part](request, scope)})
    summary = selectors.review_stats_summary(scope=scope)
    days = selectors.queue_over_time(scope=scope)
    context |= {
        "summary": summary,
        "days": days,
        "queue_plot": stats_plots.queue_plot(days) if any(d.submitted or d.decided or d.waiting for d in days) else None,
        "oldest_waiting_label": selectors.duration_label(summary.oldest_waiting_age),
        "wait_median_label": selectors.duration_label(summary.wait_median),
        "wait_p90_label": selectors.duration_label(summary.wait_p90),
    }
    if summary.reviews:
        context |= {**_reviewers(request, scope), **_pairs(request, scope),
                    "item_rows": selectors.checklist_agreement(scope=scope)}
    return render(request, TEMPLATE, context)
