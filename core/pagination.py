"""API lists a page at a time, by offset or by cursor.

- **Offset pages** (`?offset=N&limit=M`) answer as DRF's LimitOffsetPagination does: the
  count, and next/previous links that carry `offset`. Existing clients keep working.
- **Cursor pages** (keyset): a list answered without `offset` links its next and previous
  pages by `cursor`, an opaque token holding the sort values of the row at the page's edge.
  The next page is read as "rows after these values" in the list's order, which an index on
  that order finds directly: the 100th page costs what the first does, and a row added or
  moved while a client walks the list never makes it see a row twice or miss one that
  stayed put. The count comes with the first page only (counting reads the whole list).

A list can be walked by cursor when its order is a list of the model's own non-null columns
(the primary key is added as the last tie-breaker, so ties on `updated_at` are ordered too).
Other lists (ordered by a relation or an expression, unions, plain Python lists) page by
offset only, and a `cursor` sent to them is a 400.
"""

import base64
import binascii
import datetime
import json
from decimal import Decimal
from functools import reduce
from operator import or_

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db.models import Field, Q, QuerySet
from rest_framework import exceptions
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.utils.urls import remove_query_param, replace_query_param

MAX_CURSOR_LENGTH = 1000


class InvalidCursor(exceptions.APIException):
    status_code = 400
    default_detail = "The cursor is not one this list gave: follow the `next` and `previous` links as they are."
    default_code = "invalid_cursor"


def keyset_order(queryset: object) -> list[tuple[Field, bool]] | None:
    """The list's order as (column, descending) pairs ending in the primary key, or None
    when it cannot be walked by cursor (see the module docstring)."""
    if not isinstance(queryset, QuerySet) or queryset.query.combinator or queryset.query.extra_order_by:
        return None
    query, meta = queryset.query, queryset.model._meta
    names = query.order_by or (meta.ordering if query.default_ordering else ())
    order: list[tuple[Field, bool]] = []
    for name in names:
        if not isinstance(name, str) or name == "?":
            return None
        descending = name.startswith("-")
        bare = name.lstrip("-")
        try:
            field = meta.pk if bare == "pk" else meta.get_field(bare)
        except FieldDoesNotExist:
            return None  # an annotation or a relation's column
        # A foreign key named by its field sorts by the related model's ordering; by its
        # column (`project_id`) it sorts by the column, which a keyset can follow.
        if not field.concrete or field.null or (field.is_relation and bare != field.attname):
            return None
        order.append((field, descending))
        if field.primary_key:
            return order
    if not order:
        return None
    return [*order, (meta.pk, order[-1][1])]


def _encode(values: list, *, backwards: bool) -> str:
    plain = [v.isoformat() if isinstance(v, datetime.date) else str(v) if isinstance(v, Decimal) else v for v in values]
    raw = json.dumps({"v": plain, "b": int(backwards)}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(token: str, order: list[tuple[Field, bool]]) -> tuple[list, bool]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        values, backwards = data["v"], data["b"]
        if not isinstance(values, list) or len(values) != len(order) or backwards not in (0, 1):
            raise InvalidCursor
        if any(not isinstance(value, (str, int, float)) or "\x00" in str(value) for value in values):
            raise InvalidCursor
        # clean(): the column's type and range (an id past bigint would be a database error).
        return [field.clean(value, None) for (field, _), value in zip(order, values, strict=True)], bool(backwards)
    except (ValueError, TypeError, KeyError, OverflowError, binascii.Error, UnicodeDecodeError, ValidationError):
        raise InvalidCursor from None


def _beyond(order: list[tuple[Field, bool]], values: list, *, backwards: bool) -> Q:
    """Rows strictly after `values` in the list's order (before them when `backwards`):
    (a > x) or (a = x and b > y) or …, with the first column's bound repeated on its own
    so that the database can start its index scan there."""
    clauses, same = [], Q()
    for (field, descending), value in zip(order, values, strict=True):
        lookup = "lt" if descending != backwards else "gt"
        clauses.append(same & Q(**{f"{field.attname}__{lookup}": value}))
        same &= Q(**{field.attname: value})
    (first, descending), start = order[0], values[0]
    return Q(**{f"{first.attname}__{'lte' if descending != backwards else 'gte'}": start}) & reduce(or_, clauses)


def _row_values(row: object, order: list[tuple[Field, bool]]) -> list:
    if isinstance(row, dict):
        return [row[field.attname] for field, _ in order]
    return [getattr(row, field.attname) for field, _ in order]


class ApiPagination(LimitOffsetPagination):
    default_limit = 50
    max_limit = 200
    cursor_query_param = "cursor"

    def paginate_queryset(self, queryset, request, view=None):
        self.request = request
        self.order = keyset_order(queryset)
        token = request.query_params.get(self.cursor_query_param)
        if self.order is None and token is not None:
            raise InvalidCursor("This list pages by offset only: use `offset` and `limit`.")
        if self.order is None or self.offset_query_param in request.query_params:
            return self._offset_page(queryset, request, view)
        if len(token or "") > MAX_CURSOR_LENGTH:
            raise InvalidCursor
        self.limit = self.get_limit(request)
        self.first_page = token is None
        values, backwards = (None, False) if token is None else _decode(token, self.order)
        self.count = queryset.count() if self.first_page else None
        rows = queryset.order_by(*(f"{'-' if descending != backwards else ''}{field.attname}" for field, descending in self.order))
        if values is not None:
            rows = rows.filter(_beyond(self.order, values, backwards=backwards))
        page = list(rows[: self.limit + 1])
        more, page = len(page) > self.limit, page[: self.limit]
        if backwards:
            page.reverse()
        # Forwards: a next page when a row was left over, a previous one unless this is the
        # first page; backwards, the other way round. (An empty page, whose rows were all
        # deleted meanwhile, links nowhere: start again from the first.)
        has_next, has_previous = (True, more) if backwards else (more, values is not None)
        self.next_cursor = _encode(_row_values(page[-1], self.order), backwards=False) if has_next and page else None
        self.previous_cursor = _encode(_row_values(page[0], self.order), backwards=True) if has_previous and page else None
        return page

    def _offset_page(self, queryset, request, view) -> list:
        """LimitOffsetPagination's page. Deep in a list whose order an index can follow, the
        page's ids are found first, in a subquery the index alone answers (skipping 4,900
        entries of an index is cheap, reading 4,900 rows is not), and only the page's rows
        are read: still one query."""
        offset = self.get_offset(request)
        if self.order is None or offset == 0:
            self.order = None
            return super().paginate_queryset(queryset, request, view)
        self.order = None  # the answer links by offset
        self.request, self.limit, self.offset = request, self.get_limit(request), offset
        self.count = self.get_count(queryset)
        if self.count > self.limit and self.template is not None:
            self.display_page_controls = True
        if self.count == 0 or self.offset > self.count:
            return []
        ids = queryset.values("pk")[self.offset:self.offset + self.limit]  # sliced, so it keeps its order
        return list(queryset.filter(pk__in=ids))

    def _cursor_link(self, token: str | None) -> str | None:
        if token is None:
            return None
        url = remove_query_param(self.request.build_absolute_uri(), self.offset_query_param)
        return replace_query_param(url, self.cursor_query_param, token)

    def get_paginated_response(self, data) -> Response:
        if self.order is None:
            return super().get_paginated_response(data)
        body = {"count": self.count} if self.first_page else {}
        body.update(next=self._cursor_link(self.next_cursor), previous=self._cursor_link(self.previous_cursor), results=data)
        return Response(body)

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": ["next", "previous", "results"],
            "properties": {
                "count": {
                    "type": "integer", "example": 123,
                    "description": "How many objects the list holds. On the first page and on offset pages; "
                    "left out of cursor pages (counting reads the whole list).",
                },
                "next": {
                    "type": "string", "nullable": True, "format": "uri",
                    "description": "The next page, or null on the last. Carries `offset` when this page was asked for "
                    "by offset, else `cursor` (offset-only lists: always `offset`).",
                    "example": "http://api.example.org/api/tasks/?cursor=eyJ2IjpbXX0&limit=50",
                },
                "previous": {
                    "type": "string", "nullable": True, "format": "uri",
                    "description": "The previous page, or null on the first; as `next`.",
                },
                "results": schema,
            },
        }

    def get_schema_operation_parameters(self, view) -> list[dict]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.offset_query_param:
                parameter["description"] = "Start this many objects in; the answer links its pages by offset, with the count."
        if getattr(view, "list_cursor", True):
            parameters.append({
                "name": self.cursor_query_param, "required": False, "in": "query",
                "description": "Where the page starts: take it from a `next` or `previous` link. Not with `offset`.",
                "schema": {"type": "string", "maxLength": MAX_CURSOR_LENGTH},
            })
        return parameters
