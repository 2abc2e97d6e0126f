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
one round trip (with Django's default client-side binding; with `server_side_binding` one
statement after another, in a transaction). In a busy worker each round trip makes the thread wait for the interpreter
lock again behind dozens of others, which costs more than the statement.

`update_row(model, pk, values, where=...)` is `Model.objects.filter(pk=pk, **where).update(**values)`
for plain fields and equalities, with the statement built once per model and set of names:
the ORM compiles an UPDATE anew each time, which cost a busy worker more than the round trip.

`fetch_instances(model, sql, params)` runs a statement of your own that returns whole rows
of `model` (`columns(model)`, in that order: an `UPDATE … RETURNING`, say, which the ORM
does not offer) and gives back instances, with the values converted as the ORM converts
them. `fetch_sets([(model, sql, params), …])` runs several such statements, in order, in
one round trip on PostgreSQL (client-side binding, as for insert_rows).
"""

import functools
from collections.abc import Sequence

from django.db import connections, models, transaction
from django.db.models.signals import post_save, pre_save


@functools.lru_cache(maxsize=32)
def _statement(model: type[models.Model], alias: str) -> tuple[str, tuple[tuple[models.Field, str, object, str], ...], bool]:
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
    return sql, tuple((f, f.attname, *_shortcut(f)) for f in fields), returning


_PREP = ("pre_save", "get_db_prep_save", "get_db_prep_value", "get_prep_value", "to_python")


def _inherits(field: models.Field, base: type[models.Field]) -> bool:
    """`field` is a `base` that prepares values exactly as `base` does."""
    return isinstance(field, base) and all(getattr(type(field), name) is getattr(base, name) for name in _PREP)


def _shortcut(field: models.Field) -> tuple[object, str]:
    """(the exact type of value whose preparation this field's own methods would reduce to
    the shortcut, the shortcut): "same" (the value as it is), "integer" (the backend's
    adapt_integerfield_value) or "key" (validate_autopk_value, for a foreign key to an auto
    field); (None, "") for a field that always takes its own path. Fields that prepare
    values their own way (a subclass overriding any of _PREP) take their own path too."""
    for base, kind in ((models.CharField, str), (models.TextField, str), (models.BooleanField, bool)):
        if _inherits(field, base):
            return kind, "same"
    if _inherits(field, models.IntegerField) and not isinstance(field, models.AutoField):
        return int, "integer"
    if _inherits(field, models.ForeignKey) and type(field.target_field) in (models.AutoField, models.BigAutoField, models.SmallAutoField):
        return int, "key"
    return None, ""


def _params(obj: models.Model, fields, connection) -> list:
    """The values of `fields` (as _statement gives them) as field.get_db_prep_save(field.pre_save(obj))
    makes them, with the common cases (a str into a text column, an int into an integer
    column or a foreign key, a bool) shortened: Django's chain of calls per field cost more
    CPU than the round trip to save the row."""
    ops = connection.ops
    values = []
    for field, attname, kind, shortcut in fields:
        if kind is not None and type(value := getattr(obj, attname)) is kind:
            if shortcut == "same":
                values.append(value)
            elif shortcut == "integer":
                values.append(ops.adapt_integerfield_value(value, field.get_internal_type()))
            else:
                values.append(ops.validate_autopk_value(value))
        else:
            values.append(field.get_db_prep_save(field.pre_save(obj, add=True), connection=connection))
    return values


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


def _one_query_string(connection) -> bool:
    """Whether several statements can go to the database as one query string, in one round
    trip: PostgreSQL with client-side binding (Django's default with psycopg), which runs
    such a string as one transaction, or as part of the open one."""
    return (
        connection.vendor == "postgresql" and connection.features.can_return_columns_from_insert
        and not connection.settings_dict.get("OPTIONS", {}).get("server_side_binding")
    )


def insert_rows(objs: Sequence[models.Model], *, using: str = "default") -> None:
    """INSERT every object of `objs` (as insert_row does), in that order, all or none."""
    if not objs:
        return
    connection = connections[using]
    if not _one_query_string(connection):
        # One after another (SQLite is in the process: there is no round trip to save).
        with transaction.atomic(using):
            for obj in objs:
                insert_row(obj, using=using)
        return
    statements = [_statement(type(obj), using) for obj in objs]
    params = [value for obj, (_, fields, _) in zip(objs, statements, strict=True) for value in _params(obj, fields, connection)]
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        cursor.execute("; ".join(sql for sql, _, _ in statements), params)
        for i, obj in enumerate(objs):
            if i:
                cursor.nextset()
            _saved(obj, cursor.fetchone()[0], using)


def columns(model: type[models.Model], using: str = "default") -> str:
    """The model's concrete columns, quoted, in the order fetch_instances() reads them."""
    quote = connections[using].ops.quote_name
    return ", ".join(quote(f.column) for f in model._meta.concrete_fields)


@functools.lru_cache(maxsize=32)
def _converters(model: type[models.Model], alias: str) -> tuple[tuple[str, ...], tuple]:
    """(attnames, per column: (its Col, the backend's and the field's converters)), as
    SQLCompiler.apply_converters uses them. Kept per alias: they are called with the calling
    thread's connection (the backend's read only the alias's settings from their own)."""
    connection = connections[alias]
    fields = model._meta.concrete_fields
    converters = []
    for field in fields:
        column = field.get_col(model._meta.db_table)
        converters.append((column, tuple(connection.ops.get_db_converters(column) + column.get_db_converters(connection))))
    return tuple(f.attname for f in fields), tuple(converters)


def fetch_instances[M: models.Model](model: type[M], sql: str, params: Sequence, *, using: str = "default") -> list[M]:
    """Instances of `model` from a statement returning its rows' `columns(model)`."""
    return fetch_sets([(model, sql, params)], using=using)[0]


def fetch_sets(queries: Sequence[tuple[type[models.Model], str, Sequence]], *, using: str = "default") -> list[list]:
    """fetch_instances() for each (model, sql, params), run in that order; a later statement
    sees what an earlier one changed. On PostgreSQL with client-side binding as one query
    string (one round trip, one transaction); otherwise one after another, each in autocommit
    unless the caller holds a transaction (SQLite is in the process: no round trip to save)."""
    connection = connections[using]
    found = []
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        if len(queries) > 1 and _one_query_string(connection):
            cursor.execute("; ".join(sql for _, sql, _ in queries), [value for _, _, params in queries for value in params])
            for i in range(len(queries)):
                if i:
                    cursor.nextset()
                found.append(cursor.fetchall())
        else:
            for _, sql, params in queries:
                cursor.execute(sql, params)
                found.append(cursor.fetchall())
    return [_instances(model, rows, connection, using) for (model, _, _), rows in zip(queries, found, strict=True)]


def _instances(model: type[models.Model], rows: list, connection, using: str) -> list:
    attnames, converters = _converters(model, using)
    instances = []
    for row in rows:
        values = list(row)
        for i, (column, functions) in enumerate(converters):
            for function in functions:
                values[i] = function(values[i], column, connection)
        instances.append(model.from_db(using, attnames, values))
    return instances


@functools.lru_cache(maxsize=64)
def _update_statement(model: type[models.Model], alias: str, names: tuple[str, ...], where: tuple[str, ...]) -> tuple[str, tuple, tuple]:
    meta = model._meta
    quote = connections[alias].ops.quote_name
    fields = tuple(meta.get_field(name) for name in names)
    conditions = tuple(meta.get_field(name) for name in where)
    if any(not f.concrete or f.primary_key or f.many_to_many for f in (*fields, *conditions)):
        raise TypeError("update_row() sets and compares the model's own non-key columns only.")
    sql = (
        f"UPDATE {quote(meta.db_table)} SET {', '.join(f'{quote(f.column)} = %s' for f in fields)} "  # noqa: S608 (names from the model, quoted; values are parameters)
        f"WHERE {quote(meta.pk.column)} = %s{''.join(f' AND {quote(f.column)} = %s' for f in conditions)}"
    )
    return sql, fields, conditions


def update_row(model: type[models.Model], pk, values: dict, *, where: dict | None = None, using: str = "default") -> int:
    """Set `values` on the row `pk` if each of `where` (equalities, no None) holds; how many rows changed (0 or 1)."""
    where = where or {}
    sql, fields, conditions = _update_statement(model, using, tuple(values), tuple(where))
    connection = connections[using]
    params = [
        *(field.get_db_prep_save(values[field.name], connection=connection) for field in fields),
        model._meta.pk.get_db_prep_value(pk, connection),
        *(field.get_db_prep_value(where[field.name], connection, prepared=False) for field in conditions),
    ]
    with transaction.mark_for_rollback_on_error(using), connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
