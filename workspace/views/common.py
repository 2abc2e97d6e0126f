"""What every replica page shares: the scope it shows (a world, or an overlay over its
world), always reached through a selector so a project the user is not in is a 404; the
Workspace over it (the same layer the agent's tools read); and the choice between the
full page and the named partial an htmx request targets."""

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from email.utils import getaddresses
from functools import cached_property

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from accounts.selectors import membership_for
from authoring.models import DocumentKind, World
from authoring.selectors import world_get_for_user
from workspace.models import Overlay, OverlayPurpose
from workspace.selectors import overlay_get_for_user
from workspace.tools import Workspace

WORLDS, OVERLAYS = "worlds", "overlays"
APP_KINDS = {"drive": DocumentKind.FILE, "mail": DocumentKind.EMAIL, "chat": DocumentKind.CHAT, "calendar": DocumentKind.EVENT}
CHANGE_LABELS = {"added": "Added", "modified": "Modified", "deleted": "Deleted"}
HEADER_ID = "replica-head"
HEADER_TEMPLATE = "workspace/_replica_header.html#replica-head"
SANDBOX_CHANGED = "sandbox-changed"


class ScopeConverter:
    """The first segment of a replica URL: the world itself, or an overlay over it."""

    regex = f"{WORLDS}|{OVERLAYS}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


@dataclass
class Scope:
    kind: str  # WORLDS or OVERLAYS: the first segment of its URLs
    pk: int
    world: World
    overlay: Overlay | None
    user: object = field(repr=False)

    @cached_property
    def workspace(self) -> Workspace:
        return Workspace(self.world, self.overlay)

    @property
    def drive_url(self) -> str:
        return reverse("replica-drive", args=[self.kind, self.pk])

    @property
    def mail_url(self) -> str:
        return reverse("replica-mail", args=[self.kind, self.pk])

    @property
    def chat_url(self) -> str:
        return reverse("replica-chat", args=[self.kind, self.pk])

    @property
    def calendar_url(self) -> str:
        return reverse("replica-calendar", args=[self.kind, self.pk])

    @property
    def is_overlay(self) -> bool:
        return self.overlay is not None

    @property
    def is_sandbox(self) -> bool:
        return self.overlay is not None and self.overlay.purpose == OverlayPurpose.SANDBOX

    @property
    def name(self) -> str:
        """What the overlay is called on screen."""
        if self.overlay is None:
            return ""
        noun = "Sandbox" if self.is_sandbox else "Rollout workspace"
        return f"{noun} “{self.overlay.label}”" if self.overlay.label else f"{noun} #{self.overlay.pk}"

    @cached_property
    def can_author(self) -> bool:
        membership = membership_for(user=self.user, project_id=self.world.project_id)
        return bool(membership and membership.can_author)

    @cached_property
    def change_counts(self) -> dict[str, int]:
        """Changed items per app, read from the already loaded workspace (no query)."""
        counts = dict.fromkeys(APP_KINDS, 0)
        apps = {kind: app for app, kind in APP_KINDS.items()}
        for item in self.workspace.items():
            if item.change:
                counts[apps[item.kind]] += 1
        for path in self.workspace.deleted_paths:
            original = self.workspace.world_item(path)
            counts[apps[original.kind]] += 1
        return counts

    @cached_property
    def change_kinds(self) -> list[tuple[str, int]]:
        """[(added|modified|deleted, how many)] for the kinds of change present."""
        items = self.workspace.items()
        counts = {"added": sum(1 for i in items if i.change == "added"), "modified": sum(1 for i in items if i.change == "modified"),
                  "deleted": len(self.workspace.deleted_paths)}
        return [(kind, n) for kind, n in counts.items() if n]

    @cached_property
    def item_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(APP_KINDS, 0)
        apps = {kind: app for app, kind in APP_KINDS.items()}
        for item in self.workspace.items():
            counts[apps[item.kind]] += 1
        return counts

    @property
    def change_total(self) -> int:
        return sum(self.change_counts.values())


def scope_get(request: HttpRequest, scope: str, pk: int) -> Scope:
    if scope == OVERLAYS:
        overlay = overlay_get_for_user(user=request.user, pk=pk)
        return Scope(OVERLAYS, pk, overlay.world, overlay, request.user)
    return Scope(WORLDS, pk, world_get_for_user(user=request.user, pk=pk), None, request.user)


def render_screen(request: HttpRequest, template: str, context: dict, *, partials: tuple[str, ...], status: int = 200) -> HttpResponse:
    """The full page, or the named partial whose DOM id an htmx request targets (a history
    restore, which has lost the page around it, gets the full page). Every screen also
    answers for its header (HEADER_ID), which a sandbox's page reloads after a write."""
    htmx = request.htmx
    if htmx and not htmx.history_restore_request and htmx.target == HEADER_ID:
        return render(request, HEADER_TEMPLATE, context, status=status)
    if htmx and not htmx.history_restore_request and htmx.target in partials:
        template = f"{template}#{htmx.target}"
    return render(request, template, context, status=status)


def fresh(scope: Scope) -> Scope:
    """The same scope read again: after a write its loaded workspace is out of date."""
    return Scope(scope.kind, scope.pk, scope.world, scope.overlay, scope.user)


def written(response: HttpResponse, *, url: str = "") -> HttpResponse:
    """An htmx answer to a sandbox write: the address of what it shows, and the event the
    page's header listens for to show the new change count (one fragment per response)."""
    if url:
        response["HX-Push-Url"] = url
    response["HX-Trigger"] = SANDBOX_CHANGED
    return response


def people(addresses: str) -> str:
    """'Priya Raman <p.raman@x.com>, tom@y.com' → 'Priya Raman, tom@y.com'."""
    found = [name or addr for name, addr in getaddresses([addresses or ""]) if name or addr]
    return ", ".join(found) or (addresses or "").strip()


def snippet(text: str, length: int = 140) -> str:
    words = " ".join((text or "").split())
    return words if len(words) <= length else words[: length - 1].rstrip() + "…"


def anchor(path: str) -> str:
    """A stable DOM id for a data-room path (paths hold spaces and slashes)."""
    return "change-" + hashlib.sha1(path.encode(), usedforsecurity=False).hexdigest()[:12]


def initials(name: str) -> str:
    letters = [w[0] for w in name.replace("@", " ").split() if w[:1].isalnum()]
    return "".join(letters[:2]).upper() or "?"


def zone(when: dt.datetime) -> str:
    """A datetime's own offset as people write it: UTC, UTC+01:00."""
    offset = when.utcoffset() or dt.timedelta()
    if not offset:
        return "UTC"
    minutes = int(offset.total_seconds() // 60)
    return f"UTC{'+' if minutes >= 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def shown(when: dt.datetime | None, *, long: bool = False) -> str:
    """A date in the offset it was written with (never converted: the agent reads it so)."""
    if when is None:
        return ""
    day = f"{when.day} {when:%b %Y}"
    return f"{when:%a} {day}, {when:%H:%M} ({zone(when)})" if long else day
