"""A world holding every kind and format, and helpers to export and import it."""

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from authoring import services
from authoring.services.world_transfer import world_export, world_import
from tests.rendering.samples import CAP_TABLE, CHATS, CSV, DECK, EMAILS, EVENTS, MEMO, ROOT

NOTES = "# Read me\n\nThe data room of **Project Falcon**.\n\n- Deal/ holds the signed papers\n- Finance/ the model"
# What reading a docx back cannot tell apart (a second numbered list, inline code, bold
# in a table, a literal asterisk): world.json brings it back exactly.
TRICKY = """# Closing checklist

1. Sign the SPA
2. Pay the price

1) File the *Form 8-K*
2) Update `cap_table_v3.xlsx`

| Step | Owner |
|---|---|
| **Funds flow** | Treasury \\* |

#### Fine print
"""
FILES = [  # path, format, content, metadata
    ("Deal/Memo.docx", "docx", MEMO, {"author": "Jane Doe"}),
    ("Deal/Memo.pdf", "pdf", MEMO, {}),
    ("Deal/LOI", "docx", "# Letter of intent\n\nAcme offers **€48.5m** for Zoë Analytics.\n", {}),  # no extension: exported as LOI.docx
    ("Deal/Closing checklist.docx", "docx", TRICKY, {}),
    ("Deal/Board deck.pptx", "pptx", DECK, {"author": "John Smith"}),
    ("Deal/Model.xlsx", "xlsx", CAP_TABLE, {}),
    ("Parties.csv", "csv", CSV, {}),
    ("Notes/readme.md", "md", NOTES, {}),  # no final newline: kept as typed
    ("Notes/minutes.txt", "md", "Minutes of the kick-off call.\n\nAll present.\n", {}),
    ("Notes/empty.md", "md", "", {}),
]


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"  # imports keep the originals of extracted files
    return settings.MEDIA_ROOT


OUTLINE = "# Project Falcon\n\nAcme buys Zoë Analytics; the buyer's counsel must find the change-of-control clause."
FACTS = [{"key": "Walk-away price", "value": "EUR 51.2m"}, {"key": "Signing", "value": "15 February 2026"}]
LOCKED = {"Deal/Memo.docx", ROOT, "Calendar/IC meeting"}  # locked by the author: must come back locked
DRAFTED = {"Deal/Board deck.pptx", "Chat/deal-team/002"}  # as a model drafted them


def brief(path: str) -> str:
    return f"Brief of {path}: what it says and why it matters."


def target_size(path: str) -> int:
    return 100 + 10 * len(path)


@pytest.fixture
def full_world(team, media):
    world = services.world_create(project_id=team.project.pk, user=team.author, title="Project Falcon", outline=OUTLINE, facts=FACTS)
    for path, fmt, content, metadata in FILES:
        document = services.document_create(world=world, user=team.author, path=path, format=fmt, content=content, metadata=metadata,
                                            brief=brief(path), target_size=target_size(path))
        if not content:  # an edited-to-empty file is a real (empty) file, not a skeleton
            document.status = "edited"
            document.save(update_fields=["status"])
    for kind, items in (("email", EMAILS), ("chat", CHATS), ("event", EVENTS)):
        for item in items:
            services.document_create(world=world, user=team.author, path=item.path, kind=kind, content=item.content, metadata=item.metadata,
                                     brief=brief(item.path), target_size=target_size(item.path))
    for document in world.documents.filter(path__in=LOCKED):
        services.document_update(document=document, user=team.author, base_revision=document.revision, locked=True)
    world.documents.filter(path__in=DRAFTED).update(status="drafted")
    return world


def export_bytes(world, user) -> bytes:
    with world_export(world=world, user=user) as archive:
        return archive.read()


def import_bytes(data: bytes, project, user, name: str = "world.zip", title: str = ""):
    return world_import(project_id=project.pk, user=user, uploaded_file=SimpleUploadedFile(name, data, "application/zip"), title=title)


def entries(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}
