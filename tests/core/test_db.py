from decimal import Decimal

import pytest
from django.db import IntegrityError, connection, models, transaction

from core.db import insert_row, insert_rows
from llm.models import ModelCall
from rollouts.models import Step, StepKind
from workspace.models import Overlay


@pytest.fixture
def rollout(team, world, endpoint, django_capture_on_commit_callbacks):
    from rollouts import services
    from tests import factories

    with django_capture_on_commit_callbacks(execute=False):
        batch = services.rollout_batch_start(env_task=factories.env_task(world, team.author), user=team.author, endpoint=endpoint, n=1)
    return batch.rollouts.get()


def test_insert_row_saves_what_save_would(rollout):
    calls = [{"id": "c1", "name": "read_file", "arguments": {"path": "Deal/ä.md"}, "raw_arguments": ""}]
    step = insert_row(Step(rollout=rollout, index=0, kind=StepKind.MODEL, text="Looking.", tool_calls=calls, cost=Decimal("0.25"), input_tokens=7))
    assert step.pk and not step._state.adding and step.created_at is not None  # auto_now_add ran
    saved = Step.objects.get(pk=step.pk)
    assert (saved.text, saved.tool_calls, saved.cost, saved.input_tokens, saved.arguments) == ("Looking.", calls, Decimal("0.25"), 7, None)
    assert saved.created_at == step.created_at
    call = insert_row(ModelCall(endpoint_name="x", purpose="rollout", outcome="ok", latency_ms=3, attempts=1))
    assert ModelCall.objects.get(pk=call.pk).latency_ms == 3


def test_insert_row_keeps_the_unique_constraints(rollout):
    insert_row(Step(rollout=rollout, index=0, kind=StepKind.TOOL, text="a"))
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_row(Step(rollout=rollout, index=0, kind=StepKind.TOOL, text="b"))
    assert list(rollout.steps.values_list("text", flat=True)) == ["a"]  # the outer transaction is still usable


def test_insert_row_refuses_a_model_whose_save_or_signals_it_would_skip(db):
    class Noisy(Overlay):
        class Meta:
            app_label = "workspace"
            proxy = True

        def save(self, *args, **kwargs):  # pragma: no cover - never called
            super().save(*args, **kwargs)

    with pytest.raises(TypeError, match="skips save"):
        insert_row(Noisy())


def test_insert_rows_saves_rows_of_several_models_all_or_none(rollout, django_assert_max_num_queries):
    call = ModelCall(endpoint_name="x", purpose="rollout", outcome="ok", latency_ms=3, attempts=1)
    steps = [Step(rollout=rollout, index=0, kind=StepKind.MODEL, text="Looking."), Step(rollout=rollout, index=1, kind=StepKind.TOOL, text="[]")]
    with django_assert_max_num_queries(1 if connection.vendor == "postgresql" else 5):  # one round trip on PostgreSQL (SQLite: 3 + a savepoint)
        insert_rows([*steps, call])
    assert all(obj.pk and not obj._state.adding for obj in [*steps, call])
    assert list(rollout.steps.order_by("index").values_list("pk", "text")) == [(steps[0].pk, "Looking."), (steps[1].pk, "[]")]
    assert ModelCall.objects.get(pk=call.pk).latency_ms == 3

    again = ModelCall(endpoint_name="y", purpose="rollout", outcome="ok", latency_ms=4, attempts=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_rows([again, Step(rollout=rollout, index=2, kind=StepKind.TOOL, text="new"), Step(rollout=rollout, index=1, kind=StepKind.TOOL, text="clash")])
    assert rollout.steps.count() == 2 and not ModelCall.objects.filter(endpoint_name="y").exists()  # none of the three


def test_fetch_instances_reads_rows_of_an_update_as_the_orm_does(rollout):
    from django.utils import timezone

    from core.db import columns, fetch_instances
    from rollouts.models import Rollout

    Rollout.objects.filter(pk=rollout.pk).update(cost=Decimal("1.250000"), stop_requested=True, heartbeat_at=timezone.now())
    table = connection.ops.quote_name(Rollout._meta.db_table)
    sql = f"UPDATE {table} SET attempts = attempts + 1 WHERE id = %s RETURNING {columns(Rollout)}"
    [got] = fetch_instances(Rollout, sql, [rollout.pk])
    expected = Rollout.objects.get(pk=rollout.pk)
    fields = [f.attname for f in Rollout._meta.concrete_fields]
    assert [getattr(got, name) for name in fields] == [getattr(expected, name) for name in fields]
    assert got.attempts == 1 and got.stop_requested is True and got.heartbeat_at.tzinfo is not None and not got._state.adding
    assert fetch_instances(Rollout, sql, [rollout.pk + 1000]) == []


def test_fetch_sets_runs_statements_in_order_and_on_postgresql_in_one_round_trip(rollout):
    from django.test.utils import CaptureQueriesContext

    from core.db import columns, fetch_sets
    from rollouts.models import Rollout, RolloutBatch

    quote = connection.ops.quote_name
    rollouts, batches = quote(Rollout._meta.db_table), quote(RolloutBatch._meta.db_table)
    queries = [
        (Rollout, f"UPDATE {rollouts} SET attempts = attempts + 5 WHERE id = %s RETURNING {columns(Rollout)}", [rollout.pk]),
        (Rollout, f"SELECT {columns(Rollout)} FROM {rollouts} WHERE id = %s", [rollout.pk + 1000]),  # finds nothing
        (RolloutBatch, f"SELECT {columns(RolloutBatch)} FROM {batches} WHERE id = (SELECT batch_id FROM {rollouts} WHERE id = %s AND attempts = %s)", [rollout.pk, 5]),
    ]
    with CaptureQueriesContext(connection) as captured:
        updated, nothing, [batch] = fetch_sets(queries)
    assert [r.attempts for r in updated] == [5] and nothing == []
    assert batch == rollout.batch and batch.system_prompt == rollout.batch.system_prompt  # the last statement saw the first one's change
    assert len(captured) == (1 if connection.vendor == "postgresql" else 3)


def test_update_row_is_a_filtered_update_of_one_row(rollout):
    from django.utils import timezone

    from core.db import update_row
    from rollouts.models import Rollout

    now = timezone.now()
    assert update_row(Rollout, rollout.pk, {"heartbeat_at": now, "cost": Decimal("0.5"), "input_tokens": 9}, where={"stop_requested": False}) == 1
    saved = Rollout.objects.get(pk=rollout.pk)
    assert (saved.heartbeat_at, saved.cost, saved.input_tokens) == (now, Decimal("0.5"), 9)
    assert update_row(Rollout, rollout.pk, {"reason": "x"}, where={"status": "running"}) == 0  # it is queued: nothing changes
    assert Rollout.objects.get(pk=rollout.pk).reason == ""
    assert update_row(Rollout, rollout.pk + 1000, {"reason": "x"}) == 0
    with pytest.raises(TypeError):
        update_row(Rollout, rollout.pk, {"id": 5})


@pytest.mark.parametrize("model_name", ["rollouts.Step", "llm.ModelCall", "rollouts.Rollout", "workspace.OverlayEntry"])
def test_insert_parameters_are_what_djangos_own_preparation_makes(db, model_name):
    """The shortened preparation of common values (a str, an int, a bool, a key) gives exactly
    what each field's get_db_prep_save would, type included; other values take that path."""
    import datetime as dt

    from django.apps import apps
    from django.utils.functional import lazy

    from core.db import _params, _statement

    model = apps.get_model(model_name)
    _, fields, _ = _statement(model, "default")
    lazy_text = lazy(lambda: "lazy", str)()
    samples = {
        models.CharField: ["", "text", lazy_text, None], models.TextField: ["long " * 50, lazy_text, None],
        models.BooleanField: [True, False, 1, None], models.IntegerField: [0, 7, True, "8", None], models.ForeignKey: [1, "2", None],
        models.JSONField: [{"a": [1, "b"]}, [], None], models.DecimalField: [Decimal("0.5"), None],
        models.DateTimeField: [dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC), None],
    }
    shortened = 0
    for field, attname, kind, _ in fields:
        values = next((v for base, v in samples.items() if isinstance(field, base)), [None])
        for value in values:
            obj = model()
            setattr(obj, attname, value)
            expected = field.get_db_prep_save(field.pre_save(obj, add=True), connection=connection)
            obj = model()
            setattr(obj, attname, value)
            got = _params(obj, [(field, attname, kind, _)], connection)[0]
            if isinstance(field, models.DateTimeField) and (field.auto_now or field.auto_now_add):
                continue  # pre_save sets the time of the call
            assert type(got) is type(expected) and (got == expected or str(got) == str(expected)), (field.name, value, got, expected)
            shortened += kind is not None and type(value) is kind
    assert shortened  # some values took the shortcut
