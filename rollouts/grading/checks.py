"""Deterministic checks. A criterion with grader_kind "check" carries its check in
grader_config: {"check": <kind>, ...}. Each returns (met, rationale); a malformed config is
a CheckError, which fails the grade rather than counting as met or not met.

  contains / not_contains   {"value", "case_sensitive"?}       on the final answer
  regex                     {"pattern", "flags"?: "i"}         on the final answer (1 s timeout)
  exact                     {"value"}                          whitespace- and case-normalised
  numeric                   {"value", "tolerance"?, "relative"?: bool, "unit"?}  any number in the answer
  file_exists               {"path"}                           in the rollout's overlay
  file_contains             {"path", "value"}                  docx/md/pdf text, case-insensitive
  xlsx_cell                 {"path", "cell", "sheet"?, "value", "tolerance"?}
  email_sent                {"to", "subject_contains"?}        an email the agent sent
"""

import re

import regex

from core.exceptions import ApplicationError
from rollouts.grading.attempt import Attempt

KINDS = ("contains", "not_contains", "regex", "exact", "numeric", "file_exists", "file_contains", "xlsx_cell", "email_sent")
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "million": 1e6, "bn": 1e9, "b": 1e9, "billion": 1e9, "%": 1}
NUMBER = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)\s*(k|thousand|mm|m|million|bn|b|billion|%)?\b", re.I)


class CheckError(ApplicationError):
    pass


def _need(config: dict, key: str) -> object:
    if config.get(key) in (None, ""):
        raise CheckError(f"The check is missing its {key!r} setting.")
    return config[key]


def numbers_in(text: str) -> list[float]:
    values = []
    for match in NUMBER.finditer(text.replace("\u00a0", " ")):
        try:
            value = float(match.group(1).replace(",", ""))
        except ValueError:
            continue
        suffix = (match.group(2) or "").lower()
        values.append(value * _SCALE.get(suffix, 1) if suffix != "%" else value)
    return values


def _overlay_item(attempt: Attempt, path: str):
    if attempt.overlay is None:
        return None
    item = attempt.workspace().get(path)
    return item if item is not None and item.change else None  # only what the agent made or changed


def run_check(config: dict, attempt: Attempt) -> tuple[bool, str]:
    kind = config.get("check")
    answer = attempt.answer or ""
    if kind in ("contains", "not_contains"):
        value = str(_need(config, "value"))
        found = value in answer if config.get("case_sensitive") else value.lower() in answer.lower()
        met = found if kind == "contains" else not found
        return met, f"The answer {'contains' if found else 'does not contain'} {value!r}."
    if kind == "regex":
        pattern = str(_need(config, "pattern"))
        flags = regex.IGNORECASE if "i" in str(config.get("flags", "")) else 0
        try:
            found = regex.search(pattern, answer, flags, timeout=1.0)
        except regex.error as exc:
            raise CheckError(f"The regular expression is invalid: {exc}.") from None
        except TimeoutError:
            raise CheckError("The regular expression took too long on this answer.") from None
        return bool(found), (f"Matched {found.group(0)[:100]!r}." if found else "No match.")
    if kind == "exact":
        want = " ".join(str(_need(config, "value")).split()).lower()
        got = " ".join(answer.split()).lower()
        return got == want, "The answer is exactly the expected text." if got == want else "The answer differs from the expected text."
    if kind == "numeric":
        try:
            want = float(_need(config, "value"))
            tolerance = float(config.get("tolerance", 0))
        except (TypeError, ValueError):
            raise CheckError("The numeric check needs a number and a tolerance.") from None
        limit = abs(want) * tolerance if config.get("relative") else tolerance
        close = [v for v in numbers_in(answer) if abs(v - want) <= limit]
        return bool(close), (f"Found {close[0]:g}, within {limit:g} of {want:g}." if close else f"No number within {limit:g} of {want:g}.")
    if kind == "file_exists":
        path = str(_need(config, "path"))
        item = _overlay_item(attempt, path)
        return item is not None, f"{path} was {'written' if item else 'not written'} by the agent."
    if kind == "file_contains":
        path, value = str(_need(config, "path")), str(_need(config, "value"))
        item = _overlay_item(attempt, path)
        if item is None:
            return False, f"{path} was not written by the agent."
        from workspace.tools import file_text

        text = file_text(item)
        return value.lower() in text.lower(), f"{path} {'contains' if value.lower() in text.lower() else 'does not contain'} {value!r}."
    if kind == "xlsx_cell":
        return _xlsx_cell(config, attempt)
    if kind == "email_sent":
        return _email_sent(config, attempt)
    raise CheckError(f"Unknown check {kind!r}; choose one of {', '.join(KINDS)}.")


def _xlsx_cell(config: dict, attempt: Attempt) -> tuple[bool, str]:
    from openpyxl.utils.cell import column_index_from_string, coordinate_from_string

    from authoring.rendering.sheets import parse_sheets
    from authoring.rendering.workbook import Workbook

    path, cell = str(_need(config, "path")), str(_need(config, "cell")).upper()
    try:
        letters, row = coordinate_from_string(cell)
    except ValueError:
        raise CheckError(f"{cell!r} is not a cell reference like B4.") from None
    item = _overlay_item(attempt, path)
    if item is None:
        return False, f"{path} was not written by the agent."
    try:
        workbook = Workbook(*parse_sheets(item.content))
    except ApplicationError as error:
        return False, f"{path} is not a valid workbook: {error.message}"
    sheet = str(config.get("sheet") or (workbook.sheets[0].name if workbook.sheets else ""))
    index = workbook.by_name.get(sheet.upper())
    if index is None:
        return False, f"{path} has no sheet {sheet!r}."
    found = workbook.sheets[index].cells.get((row, column_index_from_string(letters)))
    value = None if found is None else found.value
    want = config.get("value")
    try:
        met = abs(float(value) - float(want)) <= float(config.get("tolerance", 0))
    except (TypeError, ValueError):
        met = str(value).strip().lower() == str(want).strip().lower()
    return met, f"{sheet}!{cell} is {value!r}; expected {want!r}."


def _email_sent(config: dict, attempt: Attempt) -> tuple[bool, str]:
    to = str(_need(config, "to")).lower()
    subject = str(config.get("subject_contains", "")).lower()
    if attempt.overlay is None:
        return False, "No email was sent."
    for email in attempt.workspace().emails():
        if not email.change:
            continue
        recipients = " ".join((email.to, email.cc, email.bcc)).lower()
        if to in recipients and subject in email.subject.lower():
            return True, f"Sent {email.subject!r} to {email.to}."
    return False, f"No email to {to!r}" + (f" with {subject!r} in the subject" if subject else "") + " was sent."
