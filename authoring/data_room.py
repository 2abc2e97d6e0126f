"""The data room as the world editor shows it: the whole tree while it is small, else one
folder at a time (its subfolders, then its documents), a page at a time, like the Drive
replica. A world of 5,000 documents reads one list of (pk, path) pairs and renders at most
one page of rows; the documents' content is never loaded for the tree.

The caller has fetched `world` through a selector (authoring.selectors.world_get_for_user):
this module only shapes what the user may already see."""

from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlencode, urlsplit

from django.core.paginator import Page, Paginator
from django.http import HttpRequest

from authoring.models import Document, World

WHOLE_TREE_MAX = 100  # up to this many documents the tree shows every folder at once
FOLDER_PAGE = 50  # rows (subfolders and documents) per page of one folder


@dataclass
class Subfolder:
    path: str
    name: str
    count: int  # documents anywhere under it


@dataclass
class DataRoom:
    document_count: int
    by_folder: bool  # False: the whole tree (`tree`); True: the folder `folder`, one page
    tree: list[dict]  # [{"folder": ..., "documents": [...]}], as the template renders them
    folder: str = ""
    page: Page | None = None
    subfolders: list[Subfolder] = field(default_factory=list)
    missing_folder: str = ""

    @property
    def breadcrumbs(self) -> list[dict]:
        parts = self.folder.split("/") if self.folder else []
        return [{"path": "/".join(parts[: n + 1]), "name": part} for n, part in enumerate(parts)]

    # What templates/_list_pagination.html reads of a list (core.listing.Listing's names).
    page_param = "page"
    ignored: tuple = ()

    @property
    def query(self) -> str:
        return f"&{urlencode({'folder': self.folder})}"


def _rows(world: World):
    # Only what the tree shows: the content (and versions) stay in the database.
    return world.documents.defer("content")


def where_asked(request: HttpRequest) -> tuple[str | None, str | None]:
    """The folder and page the user is looking at: from the query string, else (for an htmx
    action such as Move or Delete) from the page the request came from."""
    if "folder" in request.GET:
        return request.GET.get("folder", ""), request.GET.get("page")
    current = request.headers.get("HX-Current-URL") if request.htmx else None
    if current:
        query = parse_qs(urlsplit(current).query)
        if "folder" in query:
            return query["folder"][0], (query.get("page") or [None])[0]
    return None, None


def data_room_view(*, world: World, folder: str | None = None, page: str | None = None) -> DataRoom:
    paths = list(world.documents.order_by("position", "id").values_list("pk", "path"))
    if folder is None and len(paths) <= WHOLE_TREE_MAX:
        groups: dict[str, list[Document]] = {}
        for document in _rows(world).order_by("position", "id"):
            groups.setdefault(document.folder, []).append(document)
        tree = [{"folder": name, "documents": docs} for name, docs in sorted(groups.items())]
        return DataRoom(document_count=len(paths), by_folder=False, tree=tree)

    folder = (folder or "").strip().strip("/")
    missing = ""
    entries, counts = _folder_entries(paths, folder)
    if folder and not entries:
        missing, folder = folder, ""
        entries, counts = _folder_entries(paths, folder)
    shown = Paginator(entries, FOLDER_PAGE).get_page(page)
    pks = [pk for kind, pk in shown.object_list if kind == "document"]
    documents = {d.pk: d for d in _rows(world).filter(pk__in=pks)}
    prefix = f"{folder}/" if folder else ""
    subfolders = [Subfolder(path=f"{prefix}{name}", name=name, count=counts[name]) for kind, name in shown.object_list if kind == "folder"]
    rows = [documents[pk] for pk in pks if pk in documents]
    return DataRoom(
        document_count=len(paths), by_folder=True, tree=[{"folder": folder, "documents": rows}] if rows else [],
        folder=folder, page=shown, subfolders=subfolders, missing_folder=missing,
    )


def _folder_entries(paths: list[tuple[int, str]], folder: str) -> tuple[list[tuple[str, object]], Counter]:
    """One folder's rows: its subfolders (by name), then its own documents (in position order)."""
    prefix = f"{folder}/" if folder else ""
    counts: Counter = Counter()
    documents: list[tuple[str, object]] = []
    for pk, path in paths:
        if not path.startswith(prefix):
            continue
        head, slash, _rest = path[len(prefix):].partition("/")
        if slash:
            counts[head] += 1
        else:
            documents.append(("document", pk))
    folders: list[tuple[str, object]] = [("folder", name) for name in sorted(counts, key=str.lower)]
    return folders + documents, counts
