"""Long lists a page at a time: Django's Paginator, with the sort keys, filter values and
search fields each list allows. Nothing the client sends becomes an ORM lookup: a sort key
maps to fixed `order_by` fields, a filter value must be one of the list's choices, and the
search text is only ever a value. Anything else is ignored, and the page says so."""

from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import urlencode

from django.core.exceptions import FieldDoesNotExist
from django.core.paginator import Page, Paginator
from django.db.models import F, Model, Q, QuerySet
from django.db.models.expressions import OrderBy
from django.http import HttpRequest, QueryDict

MAX_SEARCH = 100


def _nulls_last(field: str, model: type[Model]) -> OrderBy | str:
    """Empty values last, both ways, on every database (PostgreSQL puts NULLs first when
    descending, SQLite last): a list sorted by score shows the scored rollouts first.
    A column that cannot be empty is sorted plainly: PostgreSQL uses an index only for the
    NULLS order it was built with, and `DESC NULLS LAST` would make it sort the table."""
    name = field.removeprefix("-")
    try:
        column = model._meta.get_field(name)
    except FieldDoesNotExist:
        column = None  # an annotation: a count, a state, a score
    if column is not None and column.concrete and not column.null and not column.is_relation:
        return field
    return F(name).desc(nulls_last=True) if field.startswith("-") else F(name).asc(nulls_last=True)


def _descending(order_by: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f[1:] if f.startswith("-") else f"-{f}" for f in order_by)


@dataclass(frozen=True)
class ListSpec:
    """What one list allows. `sorts` maps a key to its ascending `order_by` ("-key" sorts
    descending); `filters` maps a parameter to (field, allowed values); `search` names the
    fields ?q= looks in (icontains)."""

    sorts: dict[str, tuple[str, ...]]
    default_sort: str
    filters: dict[str, tuple[str, Iterable[str]]] = field(default_factory=dict)
    search: tuple[str, ...] = ()
    per_page: int = 50
    prefix: str = ""  # when a page shows two lists, each keeps its own parameters

    def param(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def order_by(self, sort: str) -> tuple[str, ...]:
        key = sort.removeprefix("-")
        return _descending(self.sorts[key]) if sort.startswith("-") else self.sorts[key]


@dataclass
class Header:
    url: str
    aria_sort: str  # "ascending" / "descending" on the column the list is sorted by, else ""
    arrow: str


@dataclass
class Listing:
    page: Page
    spec: ListSpec
    sort: str
    kept: dict[str, str]  # the accepted sort / filters / search, to carry into every link
    ignored: list[str]

    @property
    def rows(self) -> list:
        return list(self.page.object_list)

    @property
    def page_param(self) -> str:
        return self.spec.param("page")

    @property
    def query(self) -> str:
        """The kept parameters, to append after `?page=N`: '&sort=title&status=draft'."""
        return f"&{urlencode(self.kept)}" if self.kept else ""

    def value(self, name: str) -> str:
        return self.kept.get(self.spec.param(name), "")

    @property
    def q(self) -> str:
        return self.value("q")

    @property
    def filtered(self) -> bool:
        return any(k != self.spec.param("sort") for k in self.kept)

    @property
    def headers(self) -> dict[str, Header]:
        """A link per sortable column: ascending first, descending when already ascending."""
        headers = {}
        for key in self.spec.sorts:
            current = self.sort.removeprefix("-") == key
            descending = self.sort.startswith("-")
            target = f"-{key}" if current and not descending else key
            kept = {**self.kept, self.spec.param("sort"): target}
            headers[key] = Header(
                url=f"?{urlencode(kept)}",
                aria_sort=("descending" if descending else "ascending") if current else "",
                arrow=(" ↓" if descending else " ↑") if current else "",
            )
        return headers


def list_page(request: HttpRequest, rows: QuerySet, spec: ListSpec, params: QueryDict | None = None) -> Listing:
    """One page of `rows`, sorted and filtered as the request asks, within what `spec` allows."""
    params = request.GET if params is None else params
    kept: dict[str, str] = {}
    ignored: list[str] = []

    sort = params.get(spec.param("sort"), "").strip()
    if sort and sort.removeprefix("-") in spec.sorts:
        kept[spec.param("sort")] = sort
    else:
        if sort:
            ignored.append(f"“{sort[:40]}” is not a way this list can be sorted")
        sort = spec.default_sort

    for name, (field_name, allowed) in spec.filters.items():
        value = params.get(spec.param(name), "").strip()
        if not value:
            continue
        if value in set(allowed):
            rows = rows.filter(**{field_name: value})
            kept[spec.param(name)] = value
        else:
            ignored.append(f"“{value[:40]}” is not a {name} this list knows")

    q = params.get(spec.param("q"), "").strip()[:MAX_SEARCH]
    if q and spec.search:
        match = Q()
        for field_name in spec.search:
            match |= Q(**{f"{field_name}__icontains": q})
        rows = rows.filter(match)
        kept[spec.param("q")] = q

    rows = rows.order_by(*(_nulls_last(field, rows.model) for field in spec.order_by(sort)))
    page = Paginator(rows, spec.per_page).get_page(params.get(spec.param("page")))
    return Listing(page=page, spec=spec, sort=sort, kept=kept, ignored=ignored)
