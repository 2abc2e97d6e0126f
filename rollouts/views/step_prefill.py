"""What "Make a criterion from this step" writes for the expert to start from: the step's
substance, not boilerplate. A tool call becomes what the agent did ("Reads Deal/SPA.docx
before answering", "Sends an email to cfo@beta.test about “Price”"); a message becomes its
key sentence, the one stating a fact (an amount, a date, a name), quoted."""

import re

from rollouts.models import Step, StepKind
from rollouts.views.display import call_signature

PREFILL_CHARS = 300
# Openers that carry no claim: "Sure.", "Let me check the files.", "Here is the memo:".
FILLER = re.compile(
    r"^(sure|ok(ay)?|certainly|of course|great|thanks?( you)?|let me|i('ll| will| am going to| need to)|"
    r"here (is|are)|below (is|are)|based on|to answer|i have (read|reviewed|looked))\b",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(A-Z0-9$€£])|\n+")
FACTLIKE = re.compile(r"[$€£¥]\s?\d|\d[\d,.]*\s?(%|percent|million|m\b|bn|billion|days?|months?|years?)|\b\d{4}-\d{2}-\d{2}\b|\d")


def _clip(text: str) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= PREFILL_CHARS else text[: PREFILL_CHARS - 1] + "…"


def key_sentence(text: str) -> str:
    """The sentence of a message most worth checking: the first that states a fact (a number,
    an amount, a date), else the first that is not a pleasantry, else the first."""
    plain = re.sub(r"[*_`#>|]+", " ", text or "")  # markdown marks are not part of the claim
    sentences = [" ".join(s.split()).strip(" -•") for s in SENTENCE_END.split(plain)]
    sentences = [s for s in sentences if len(s) > 2]
    if not sentences:
        return ""
    substantive = [s for s in sentences if not FILLER.match(s)]
    factual = [s for s in substantive if FACTLIKE.search(s)]
    return _clip((factual or substantive or sentences)[0])


def _arg(arguments: object, *names: str) -> str:
    if not isinstance(arguments, dict):
        return ""
    for name in names:
        value = arguments.get(name)
        if isinstance(value, list):
            value = ", ".join(str(v) for v in value if v)
        if value not in (None, ""):
            return _clip(str(value))[:160]
    return ""


def _quoted(value: str) -> str:
    return f"“{value}”"


def describe_call(name: str, arguments: object) -> str:
    """What a tool call does, as a criterion would say it (the agent is the subject)."""
    path = _arg(arguments, "path")
    folder = _arg(arguments, "folder")
    query = _arg(arguments, "query", "text", "subject")
    to = _arg(arguments, "to")
    subject = _arg(arguments, "subject")
    channel = _arg(arguments, "channel").lstrip("#")
    said = _arg(arguments, "text")
    phrases = {
        "read_file": f"Reads {path} before answering" if path else "",
        "list_files": f"Looks through the {folder} folder of the data room" if folder else "Looks through the data room's files",
        "search_files": f"Searches the files for {_quoted(query)}" if query else "",
        "write_file": f"Writes {path}" if path else "",
        "delete_file": f"Deletes {path}" if path else "",
        "list_emails": "Looks through the mailbox",
        "search_emails": f"Searches the mail for {_quoted(query)}" if query else "Searches the mail",
        "read_email": "Reads the email before answering",
        "read_thread": "Reads the whole email thread before answering",
        "send_email": f"Sends an email to {to}" + (f" about {_quoted(subject)}" if subject else "") if to else "",
        "reply_email": f"Replies to the email: {_quoted(key_sentence(_arg(arguments, 'body')))}" if _arg(arguments, "body") else "",
        "forward_email": f"Forwards the email to {to}" if to else "",
        "list_channels": "Looks through the chat channels",
        "read_channel": f"Reads the #{channel} chat channel before answering" if channel else "",
        "read_chat_thread": "Reads the whole chat thread before answering",
        "search_chat": f"Searches the chat for {_quoted(query)}" if query else "",
        "post_message": f"Posts in #{channel}: {_quoted(key_sentence(said))}" if channel and said else "",
        "reply_message": f"Replies in the chat thread: {_quoted(key_sentence(said))}" if said else "",
        "list_events": "Checks the calendar",
        "search_events": f"Searches the calendar for {_quoted(query)}" if query else "",
        "read_event": "Reads the calendar event before answering",
        "create_event": f"Schedules {_quoted(subject)}" + (f" for {_arg(arguments, 'start')}" if _arg(arguments, "start") else "")
        if subject else "",
        "update_event": "Changes the calendar event",
    }
    return phrases.get(name) or f"Calls {call_signature(name, arguments)}"


def criterion_prefill(step: Step) -> str:
    """A starting point the expert rewrites: the substance of what the step did or said."""
    if step.kind == StepKind.MODEL:
        calls = step.tool_calls or []
        sentence = key_sentence(step.text)
        if calls and (not sentence or FILLER.match(sentence)):  # "Let me look…" + a call: the call is the substance
            return describe_call(calls[0].get("name", ""), calls[0].get("arguments"))
        return f'States that "{sentence}"' if sentence else "…"
    if step.is_error:
        return f"Does not make the failing call {call_signature(step.tool_name, step.arguments)}"
    return describe_call(step.tool_name, step.arguments)
