"""Mail: conversations newest first, a search over sender, recipients, subject and text,
and a thread read oldest first. Bodies are plain text: the template escapes them."""

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from workspace.tools import Email
from workspace.views.common import anchor, initials, people, render_screen, scope_get, shown, snippet

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
    s = scope_get(request, scope, pk)
    ws = s.workspace
    query = " ".join(request.GET.get("q", "").split())[:MAX_QUERY]
    emails = ws.emails()
    by_thread: dict[str, list[Email]] = {}
    for email in emails:
        by_thread.setdefault(email.thread, []).append(email)
    words = query.lower().split()
    matching = [e for e in emails if _matches(e, words)] if words else emails
    selected_id = request.GET.get("id", "")
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
    context = {
        "scope": s, "app": "mail", "query": query, "conversations": conversations, "email_total": len(emails),
        "selected": selected, "selected_id": selected_id, "thread": thread,
        "thread_subject": (thread[0]["email"].subject if thread else "") or "(no subject)",
        "attachment_paths": {p for m in thread for p in m["email"].attachments if ws.get(p)},
    }
    return render_screen(request, TEMPLATE, context, partials=("replica-mailbox", "replica-reading"))
