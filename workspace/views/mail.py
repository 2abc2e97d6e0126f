"""Mail: conversations newest first, a search over sender, recipients, subject and text,
and a thread read oldest first. Bodies are plain text: the template escapes them."""

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from workspace.forms import EmailComposeForm, EmailReplyForm
from workspace.tools import Email
from workspace.views.common import Scope, anchor, initials, people, render_screen, scope_get, shown, snippet

TEMPLATE = "workspace/replica_mail.html"
MAX_QUERY = 200


def _matches(email: Email, words: list[str]) -> bool:
    haystack = " ".join((email.sender, email.to, email.cc, email.subject, email.body)).lower()
    return all(word in haystack for word in words)


def _newest_first(emails: list[Email]) -> list[Email]:
    dated = sorted((e for e in emails if e.date), key=lambda e: (e.date, e.id), reverse=True)
    return dated + [e for e in emails if not e.date]


def _message(email: Email) -> dict:
    return {"email": email, "sender_name": people(email.sender) or "Unknown sender",
            "sent": email.folder.rpartition("/")[2].lower() == "sent", "initials": initials(people(email.sender)),
            "anchor": anchor(email.id), "day": shown(email.date) or "no date",
            "when": shown(email.date, long=True) or email.date_text or "—"}


@require_GET
def mail(request: HttpRequest, scope: str, pk: int) -> HttpResponse:
    return mail_screen(request, scope_get(request, scope, pk), request.GET)


def mail_screen(request: HttpRequest, s: Scope, params, *, status: int = 200, compose_form=None, reply_form=None,
                error: str = "", notice: str = "") -> HttpResponse:
    """The mailbox as `params` (the page's query) asks for it; in a sandbox, with the forms to
    write (bound, with their errors, after a refused write)."""
    ws = s.workspace
    query = " ".join(params.get("q", "").split())[:MAX_QUERY]
    emails = ws.emails()
    by_thread: dict[str, list[Email]] = {}
    for email in emails:
        by_thread.setdefault(email.thread, []).append(email)
    words = query.lower().split()
    matching = [e for e in emails if _matches(e, words)] if words else emails
    selected_id = params.get("id", "")
    selected = ws.email(selected_id) if selected_id else None
    conversations, seen = [], set()
    for email in _newest_first(matching):  # one row per thread, shown by its newest (matching) email
        if email.thread in seen:
            continue
        seen.add(email.thread)
        thread = by_thread[email.thread]
        conversations.append({
            **_message(email), "snippet": snippet(email.body), "count": len(thread),
            "change": "added" if any(e.change == "added" for e in thread) else "modified" if any(e.change for e in thread) else "",
            "active": selected is not None and selected.thread == email.thread,
            "participants": people(", ".join(dict.fromkeys(e.sender for e in thread))),
        })
    thread = [_message(e) for e in ws.email_thread(selected.id)] if selected else []
    writable = s.is_sandbox and s.can_author
    composing = writable and (compose_form is not None or bool(params.get("compose")))
    context = {
        "scope": s, "app": "mail", "query": query, "conversations": conversations, "email_total": len(emails),
        "selected": selected, "selected_id": selected_id, "thread": thread,
        "thread_subject": (thread[0]["email"].subject if thread else "") or "(no subject)",
        "attachment_paths": {p for m in thread for p in m["email"].attachments if ws.get(p)},
        "writable": writable, "error": error, "notice": notice,
        "compose_form": (compose_form or EmailComposeForm()) if composing else None,
        "reply_form": (reply_form or EmailReplyForm()) if writable and thread and not composing else None,
    }
    return render_screen(request, TEMPLATE, context, partials=("replica-mailbox", "replica-reading"), status=status)
