"""Database helpers for hot paths.

`insert_row(obj)` saves a new row the way `obj.save()` does, for append-only rows written
hundreds of times a second by one worker process (rollout steps, the model-call log). A
plain `save()` rebuilds the INSERT statement from the model's fields on every call, which
cost more CPU than the database round trip itself; here the statement is built once per
model and database, and each call only prepares the values, with the fields' own
`pre_save` (auto_now_add) and `get_db_prep_save` (JSON, decimals, dates), so it follows the
model as it changes. Unlike `save()` it sends no pre_save/post_save signals: use it only
for models that have no receivers and no `save()` override (checked when a model is
first inserted).

`insert_rows(objs)` inserts several such rows, of any models, all or none; on PostgreSQL in
one round trip. In a busy worker each round trip makes the thread wait for the interpreter
lock again behind dozens of others, which costs more than the statement.
"""

import functools
from collections.abc import Sequence

from django.db import connections, models, transaction
from django.db.models.signals import post_save, pre_save


@functools.lru_cache(maxsize=32)
def _statement(model: type[models.Model], alias: str) -> tuple[str, tuple[models.Field, ...], bool]:
    meta = model._meta
    if model.save is not models.Model.save or pre_save.has_listeners(model) or post_save.has_listeners(model):
        raise TypeError(f"insert_row() skips save() and its signals; {model.__name__} has its own.")
    connection = connections[alias]
    quote = connection.ops.quote_name
    fields = tuple(f for f in meta.concrete_fields if f is not meta.auto_field and not f.generated)
    sql = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) VALUES ({', '.join(['%s'] * len(fields))})"  # noqa: S608 (names from the model, quoted; values are parameters)
    returning = connection.features.can_return_columns_from_insert
    if returning:
        sql += f" RETURNING {quote(meta.pk.column)}"
    return sql, fields, returning


def _params(obj: models.Model, fields: tuple[models.Field, ...], connection) -> list:
    return [field.get_db_prep_save(field.pre_save(obj, add=True), connection=connection) for field in fields]


def _saved(obj: models.Model, pk, using: str) -> None:
    obj.pk = pk
    obj._state.adding = False
    obj._state.db = using


def insert_row[M: models.Model](obj: M, *, using: str = "default") -> M:
    """INSERT `obj` (a new instance whose primary key is an auto field) and set its pk."""
    sql, fields, returning = _statement(type(obj), using)
    connection = connections[using]
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        cursor.execute(sql, _params(obj, fields, connection))
        pk = cursor.fetchone()[0] if returning else connection.ops.last_insert_id(cursor, obj._meta.db_table, obj._meta.pk.column)
    _saved(obj, pk, using)
    return obj


def insert_rows(objs: Sequence[models.Model], *, using: str = "default") -> None:
    """INSERT every object of `objs` (as insert_row does), in that order, all or none."""
    if not objs:
        return
    connection = connections[using]
    joined = (
        connection.vendor == "postgresql" and connection.features.can_return_columns_from_insert
        and not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")
    )
    if not joined:
        # One after another (SQLite is in the process: there is no round trip to save).
        with transaction.atomic(using):
            for obj in objs:
                insert_row(obj, using=using)
        return
    # Client-side binding (Django's default with psycopg) sends the statements as one query
    # string; PostgreSQL runs such a string as one transaction, or as part of the open one.
    statements = [_statement(type(obj), using) for obj in objs]
    params = [value for obj, (_, fields, _) in zip(objs, statements, strict=True) for value in _params(obj, fields, connection)]
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        cursor.execute("; ".join(sql for sql, _, _ in statements), params)
        for i, obj in enumerate(objs):
            if i:
                cursor.nextset()
            _saved(obj, cursor.fetchone()[0], using)
