"""Anchored QA comments. The pages that show a prompt, a rubric criterion, a document or a
trajectory step load the comments on it into a placeholder (GET with ?anchor=…); a POST
adds a comment, replies, resolves or reopens and, from htmx, answers the updated fragment
(the anchor's block, or the thread); a plain form POST is redirected back."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from accounts.models import User
from accounts.selectors import membership_get
from authoring.models import EnvTask
from authoring.selectors import env_task_get_for_user
from core.exceptions import ApplicationError
from core.views import render_error
from reviews.models import CommentAnchor, ReviewComment, Submission
from reviews.selectors.comments import (
    MAX_THREADS,
    CommentFilter,
    anchor_objects_for_task,
    comment_get_for_user,
    comment_threads_for_task,
    comments_resolved_since_previous,
    current_criterion_ids_by_text,
)
from reviews.services import comments as services

TEMPLATE = "reviews/_comments.html"
PAGE = "reviews/task_comments.html"
ANCHOR_NAMES = {CommentAnchor.TASK: "the task", CommentAnchor.PROMPT: "the prompt", CommentAnchor.REFERENCE: "the reference answer",
                CommentAnchor.CRITERION: "this criterion", CommentAnchor.DOCUMENT: "this document", CommentAnchor.STEP: "this step"}


def _id(value: str | None) -> int | None:
    value = (value or "").strip()
    return int(value) if value.isascii() and value.isdigit() and 0 < len(value) < 19 else None


def _safe_next(request: HttpRequest, fallback: str) -> str:
    wanted = request.POST.get("next") or ""
    if wanted and url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}, require_https=request.is_secure()):
        return wanted
    return fallback


def _back_to(request: HttpRequest) -> str:
    """Where a plain form on this fragment sends the user back to: the page it sits on."""
    if request.htmx and request.htmx.current_url_abs_path:
        return request.htmx.current_url_abs_path
    return request.get_full_path()


def _submission(env_task: EnvTask, value: str | None) -> Submission | None:
    pk = _id(value)
    return Submission.objects.filter(pk=pk, env_task_id=env_task.pk).defer("snapshot").first() if pk else None


def _changed(response: HttpResponse) -> HttpResponse:
    response["HX-Trigger"] = "comments-changed"  # the task page's open-comments card refreshes itself
    return response


# --- Where a thread sits, in words and as a link ------------------------------------------

def _where(thread: ReviewComment) -> str:
    if thread.anchor == CommentAnchor.CRITERION:
        return f"Criterion “{thread.criterion_text}”"
    if thread.anchor == CommentAnchor.DOCUMENT:
        return f"Document {thread.document_path}"
    if thread.anchor == CommentAnchor.STEP:
        if thread.step is None:
            return "A trajectory step (since deleted)"
        return f"Step {thread.step.index + 1} of rollout {thread.step.rollout.index + 1}, trial batch {thread.step.rollout.batch_id}"
    return {CommentAnchor.PROMPT: "The prompt", CommentAnchor.REFERENCE: "The reference answer"}.get(thread.anchor, "The task in general")


def _link(thread: ReviewComment, env_task: EnvTask, current: dict[str, int]) -> str:
    task_page = reverse("task-editor", args=[env_task.pk])
    if thread.anchor in (CommentAnchor.PROMPT, CommentAnchor.REFERENCE):
        return task_page + "#task-form"
    if thread.anchor == CommentAnchor.CRITERION and thread.criterion_text in current:
        return task_page + f"#criterion-{current[thread.criterion_text]}"
    if thread.anchor == CommentAnchor.DOCUMENT and thread.document_id:
        return reverse("document-editor", args=[thread.document_id])
    if thread.anchor == CommentAnchor.STEP and thread.step_id:
        return reverse("rollout-detail", args=[thread.step.rollout_id]) + f"#step-{thread.step_id}"
    return reverse("task-comments", args=[env_task.pk]) + f"#comment-{thread.pk}"


def _decorate(threads: list[ReviewComment], user: User, env_task: EnvTask, may_resolve: bool) -> list[ReviewComment]:
    current = current_criterion_ids_by_text(env_task=env_task) if any(t.anchor == CommentAnchor.CRITERION for t in threads) else {}
    for thread in threads:
        thread.where = _where(thread)
        thread.link = _link(thread, env_task, current)
        thread.can_resolve = may_resolve or thread.author_id == user.pk
        thread.earlier_version = (thread.anchor == CommentAnchor.CRITERION and thread.criterion is not None
                                  and current.get(thread.criterion_text) != thread.criterion_id)
    return threads


def _may_resolve(request: HttpRequest, env_task: EnvTask) -> bool:
    return services.can_resolve(membership=membership_get(user=request.user, project_id=env_task.project_id), env_task=env_task)


# --- The anchor's block: its threads and the form to add one --------------------------------

def _filter(env_task: EnvTask, data) -> tuple[CommentFilter, dict]:
    anchor = data.get("anchor") or ""
    if anchor not in CommentAnchor.values:
        return CommentFilter(open_only=bool(data.get("open"))), {}
    objects = anchor_objects_for_task(env_task=env_task, criterion_id=_id(data.get("criterion")), document_id=_id(data.get("document")),
                                      step_id=_id(data.get("step")))
    wanted = {CommentAnchor.CRITERION: "criterion", CommentAnchor.DOCUMENT: "document", CommentAnchor.STEP: "step"}.get(anchor)
    obj = objects[wanted] if wanted else None
    where = CommentFilter(anchor=anchor, open_only=bool(data.get("open")), **({wanted: obj} if wanted else {}))
    return where, {"anchor": anchor, "anchor_object": obj, "anchor_field": wanted}


def _block_context(request: HttpRequest, env_task: EnvTask, data, **extra) -> dict:
    where, anchor = _filter(env_task, data)
    if not anchor:
        anchor = {"anchor": CommentAnchor.TASK, "anchor_object": None, "anchor_field": None}
    obj = anchor["anchor_object"]
    may_resolve = _may_resolve(request, env_task)
    threads = [] if anchor["anchor_field"] and obj is None else list(
        comment_threads_for_task(user=request.user, env_task=env_task, where=where)[:MAX_THREADS])
    _decorate(threads, request.user, env_task, may_resolve)
    return {
        "env_task": env_task,
        **anchor,
        "anchor_name": ANCHOR_NAMES[anchor["anchor"]],
        "block_id": f"comments-{env_task.pk}-{anchor['anchor']}" + (f"-{obj.pk}" if obj is not None else ""),
        "missing": anchor["anchor_field"] is not None and obj is None,
        "threads": threads,
        "open_count": sum(1 for t in threads if t.resolved_at is None),
        "submission": _submission(env_task, data.get("submission")),
        "show_task": bool(data.get("show_task")),
        "next": _back_to(request),
        **extra,
    }


def _page_context(request: HttpRequest, env_task: EnvTask) -> dict:
    open_only = request.GET.get("open") == "1"
    threads = list(comment_threads_for_task(user=request.user, env_task=env_task, where=CommentFilter(open_only=open_only))[:MAX_THREADS])
    return {"env_task": env_task, "world": env_task.world, "project": env_task.project, "open_only": open_only,
            "threads": _decorate(threads, request.user, env_task, _may_resolve(request, env_task)), "next": _back_to(request)}


def _open_context(request: HttpRequest, env_task: EnvTask) -> dict:
    threads = list(comment_threads_for_task(user=request.user, env_task=env_task, where=CommentFilter(open_only=True))[:MAX_THREADS])
    return {"env_task": env_task, "threads": _decorate(threads, request.user, env_task, may_resolve=False)}


def _resolved_context(request: HttpRequest, env_task: EnvTask) -> dict:
    submission = _submission(env_task, request.GET.get("submission"))
    threads = list(comments_resolved_since_previous(user=request.user, submission=submission)[:MAX_THREADS]) if submission else []
    return {"env_task": env_task, "submission": submission, "threads": _decorate(threads, request.user, env_task, may_resolve=False)}


@require_http_methods(["GET", "POST"])
def task_comments(request: HttpRequest, task_pk: int) -> HttpResponse:
    """GET: the comments on one anchor with the form to add one (?anchor=…&criterion=…), the
    task's open comments (?view=open), those resolved since the previous version
    (?view=resolved&submission=…), or (a plain GET) the page of all the task's comments.
    POST: add a comment on the anchor the form names."""
    env_task = env_task_get_for_user(user=request.user, pk=task_pk)
    if request.method == "POST":
        return _add(request, env_task)
    view = request.GET.get("view")
    if view == "open":
        return render(request, TEMPLATE + "#open-comments", _open_context(request, env_task))
    if view == "resolved":
        return render(request, TEMPLATE + "#resolved-comments", _resolved_context(request, env_task))
    if request.GET.get("anchor") in CommentAnchor.values and request.htmx:
        return render(request, TEMPLATE + "#comments", _block_context(request, env_task, request.GET))
    if request.GET.get("anchor") in CommentAnchor.values:  # the no-JS link of a placeholder: that anchor's comments only
        context = {"env_task": env_task, "world": env_task.world, "project": env_task.project,
                   "anchor_block": _block_context(request, env_task, request.GET, next=request.get_full_path())}
        return render(request, PAGE, context)
    context = _page_context(request, env_task)
    if request.htmx:
        return render(request, PAGE + "#task-threads", context)
    return render(request, PAGE, context)


def _add(request: HttpRequest, env_task: EnvTask) -> HttpResponse:
    data = request.POST
    _, anchor = _filter(env_task, data)
    back = _safe_next(request, reverse("task-editor", args=[env_task.pk]))
    try:
        if anchor.get("anchor_field") and anchor.get("anchor_object") is None:
            raise ApplicationError(f"That {anchor['anchor_field']} is not part of this task (it may have been deleted): reload the page.")
        services.comment_add(env_task=env_task, user=request.user, body=data.get("body", ""),
                             anchor=data.get("anchor") or CommentAnchor.TASK,
                             **({anchor["anchor_field"]: anchor["anchor_object"]} if anchor.get("anchor_field") else {}),
                             quote=data.get("quote", ""), submission=_submission(env_task, data.get("submission")))
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(back)
        context = _block_context(request, env_task, data, body=data.get("body", ""), quote=data.get("quote", ""))
        return render_error(request, TEMPLATE + "#comments", context, error)
    if not request.htmx:
        messages.success(request, "Comment added.")
        return redirect(back)
    return _changed(render(request, TEMPLATE + "#comments", _block_context(request, env_task, data)))


# --- One thread: reply, resolve, reopen ---------------------------------------------------

def _thread_response(request: HttpRequest, comment: ReviewComment, error: ApplicationError | None = None, **extra) -> HttpResponse:
    env_task = comment.env_task
    root_id = comment.parent_id or comment.pk
    thread = comment_threads_for_task(user=request.user, env_task=env_task).get(pk=root_id)
    _decorate([thread], request.user, env_task, _may_resolve(request, env_task))
    context = {"env_task": env_task, "thread": thread, "next": _safe_next(request, ""), "show_where": request.POST.get("show_where") == "1",
               **extra}
    if error is not None:
        return render_error(request, TEMPLATE + "#thread", context, error)
    return render(request, TEMPLATE + "#thread", context)


def _thread_action(request: HttpRequest, pk: int, action) -> HttpResponse:
    comment = comment_get_for_user(user=request.user, pk=pk)
    back = _safe_next(request, reverse("task-comments", args=[comment.env_task_id]) + f"#comment-{comment.parent_id or comment.pk}")
    try:
        action(comment)
    except ApplicationError as error:
        if not request.htmx:
            messages.error(request, error.message)
            return redirect(back)
        return _thread_response(request, comment, error, reply_body=request.POST.get("body", ""))
    if not request.htmx:
        return redirect(back)
    return _changed(_thread_response(request, comment))


@require_POST
def comment_reply(request: HttpRequest, pk: int) -> HttpResponse:
    def reply(comment: ReviewComment) -> None:
        services.comment_add(env_task=comment.env_task, user=request.user, body=request.POST.get("body", ""), parent=comment,
                    submission=_submission(comment.env_task, request.POST.get("submission")))

    return _thread_action(request, pk, reply)


@require_POST
def comment_resolve(request: HttpRequest, pk: int) -> HttpResponse:
    return _thread_action(request, pk, lambda comment: services.comment_resolve(comment=comment, user=request.user))


@require_POST
def comment_reopen(request: HttpRequest, pk: int) -> HttpResponse:
    return _thread_action(request, pk, lambda comment: services.comment_reopen(comment=comment, user=request.user))
