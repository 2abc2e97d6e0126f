"""The verifier-quality API, mirroring the Verifier panel and the batch quality page: a
batch's grades with their verdicts, expert verdicts, the expert's ranking and its
agreement with the rubric, regrading, difficulty (pass@k), reward-hacking probes and the
rubric's grading settings. Thin: parse, call the same services and reads as the pages."""

import math

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring import services as authoring_services
from authoring.apis.common import EDIT_ERRORS
from authoring.selectors import env_task_get_for_user, rubric_version_get_for_user
from core.apis import ERRORS, ID_PARAMETER, READ_ERRORS, ApiView, InvalidRequest, RevisionedSerializer, id_field, text_field, username_field
from llm.apis import usable_endpoint
from rollouts import selectors as rollout_selectors
from rollouts.grading.services import batch_failed_grades_retry, batch_grading_cancel, batch_regrade
from rollouts.models import GradeStatus, ProbeRunStatus, RolloutBatch, Verdict
from verification import selectors
from verification.selectors import ranking_agreement
from verification.services import MAX_CHEATS_PER_KIND, expert_verdict_set, probe_run_cancel, probe_run_start, ranking_set

RUBRIC_PARAMETER = OpenApiParameter(
    "rubric", OpenApiTypes.INT, description="A rubric version number; by default the newest version that graded the batch."
)


def _number(value: float | None) -> float | None:
    """JSON has no NaN: an undefined metric is null."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


# --- Serializers ---------------------------------------------------------------------------------

class RubricRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    number = serializers.IntegerField()
    pass_threshold = serializers.FloatField()
    all_must_pass = serializers.BooleanField()
    judge_samples = serializers.IntegerField()


class RubricSettingsSerializer(RubricRefSerializer):
    task = serializers.IntegerField(source="env_task_id")
    revision = serializers.IntegerField(help_text="Send it back as `revision` with your next rubric edit.")
    frozen = serializers.BooleanField(source="is_frozen")


class VerdictSerializer(serializers.Serializer):
    criterion = serializers.IntegerField(source="criterion.pk")
    number = serializers.IntegerField(help_text="The criterion's number as the rubric lists it (1..n); errors name criteria by it.")
    position = serializers.IntegerField(source="criterion.position", help_text="Its stored sort key (not renumbered after a delete).")
    text = serializers.CharField(source="criterion.text")
    points = serializers.IntegerField(source="criterion.points")
    grader_kind = serializers.CharField(source="criterion.grader_kind")
    met = serializers.BooleanField(source="verdict.met", allow_null=True, default=None,
                                   help_text="For a negative criterion: the bad behaviour is present. Null: no verdict (yet).")
    rationale = serializers.CharField(source="verdict.rationale", default="")
    samples = serializers.JSONField(source="verdict.samples", default=list)
    disagreement = serializers.FloatField(source="verdict.disagreement", default=0.0)
    error = serializers.CharField(source="verdict.error", default="")
    expert_met = serializers.BooleanField(source="expert", allow_null=True, help_text="Your own call; null: you agree with the judge.")
    expert_carried_from = serializers.IntegerField(source="expert_from", allow_null=True, default=None,
                                                   help_text="Your call was made on this earlier rubric version and carries over "
                                                   "(same text and points).")
    changed_since = serializers.IntegerField(allow_null=True, default=None,
                                             help_text="The criterion is new or changed since this version: "
                                             "no expert call carries over to it.")


class GradeRowSerializer(serializers.Serializer):
    rollout = serializers.IntegerField(source="rollout.pk")
    number = serializers.IntegerField()
    rollout_status = serializers.CharField(source="rollout.status")
    status = serializers.ChoiceField(source="grade.status", choices=GradeStatus.choices, allow_null=True, default=None,
                                     help_text="queued / running: waiting for the grader; graded; grading_failed: see `error`; "
                                     "cancelled: an author cancelled the grading before it finished. Null: not graded by this version.")
    score = serializers.FloatField(source="grade.score", allow_null=True, default=None)
    passed = serializers.BooleanField(source="grade.passed", allow_null=True, default=None)
    met_points = serializers.IntegerField(source="grade.met_points", allow_null=True, default=None)
    positive_points = serializers.IntegerField(source="grade.positive_points", allow_null=True, default=None)
    per_tag = serializers.JSONField(source="grade.per_tag", default=dict)
    error = serializers.CharField(source="grade.error", default="")
    verdicts = VerdictSerializer(source="cells", many=True)


class BatchGradesSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    rubric_version = RubricRefSerializer()
    graded_versions = serializers.ListField(
        child=serializers.IntegerField(), help_text="Numbers of the rubric versions that graded this batch."
    )
    grades = GradeRowSerializer(many=True)


class ExpertVerdictRequestSerializer(serializers.Serializer):
    rollout = id_field()
    criterion = id_field()
    met = serializers.BooleanField(allow_null=True, help_text="true / false; null clears it (you agree with the judge).")
    note = text_field(required=False, default="")


class ExpertVerdictSerializer(serializers.Serializer):
    rollout = serializers.IntegerField()
    criterion = serializers.IntegerField()
    met = serializers.BooleanField(allow_null=True)
    judge_met = serializers.BooleanField(allow_null=True)


class AgreementSerializer(serializers.Serializer):
    tau = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b between the rubric's scores and your order.")
    rho = serializers.FloatField(allow_null=True, help_text="Spearman's rho.")
    warning = serializers.CharField(help_text="Every warning's text, in one string (see `warnings`).")
    warnings = serializers.ListField(child=serializers.DictField(), required=False,
                                     help_text="[{kind, text}]: kind is same_score, low_tau, "
                                     "no_separation (your bottom third scores within 0.1 of your top third), "
                                     "ceiling (most answers at the maximum score) or probe_passes.")
    culprits = serializers.SerializerMethodField(help_text="The positive criteria that reward the answers you ranked lowest: "
                                                 "[{criterion, text, low_met, low, high_met, high}].")

    def get_culprits(self, agreement: dict) -> list[dict]:
        return [{"criterion": c["criterion"].pk, "text": c["criterion"].text, **{k: c[k] for k in ("low_met", "low", "high_met", "high")}}
                for c in agreement.get("culprits", [])]
    points = serializers.ListField(child=serializers.DictField(), help_text="[{rollout, score, rank}], rank 1 the best.")


class RankingSerializer(serializers.Serializer):
    order = serializers.ListField(child=serializers.IntegerField(), help_text="Rollout ids, best first.")
    rubric_version = serializers.IntegerField(help_text="The rubric version whose scores the agreement uses.")
    agreement = AgreementSerializer(allow_null=True)


class RankingRequestSerializer(serializers.Serializer):
    order = serializers.ListField(child=id_field(), help_text="Every completed rollout of the batch once, best first.")


class RegradeRequestSerializer(serializers.Serializer):
    rubric_version = id_field(required=False, help_text="A rubric version's id; by default the task's current version.")


class RegradeSerializer(serializers.Serializer):
    rubric_version = RubricRefSerializer()
    grades = serializers.IntegerField(help_text="Grades of this version for the batch's completed rollouts.")
    pending = serializers.IntegerField(help_text="Of those, still waiting for the grader. Poll the grades until none is.")


class RetryFailedRequestSerializer(serializers.Serializer):
    rubric_version = id_field(
        required=False,
        help_text="A rubric version's id: retry only the grades of that version; by default every failed or cancelled grade of the batch.",
    )


class RetryFailedSerializer(serializers.Serializer):
    retried = serializers.IntegerField(help_text="Failed and cancelled grades sent to the grader again.")
    pending = serializers.IntegerField(help_text="Of those, still waiting for the grader. Poll the grades until none is.")


class CancelGradingRequestSerializer(serializers.Serializer):
    rubric_version = id_field(required=False, help_text="A rubric version's id; by default the newest version that graded the batch.")


class CancelGradingSerializer(serializers.Serializer):
    rubric_version = RubricRefSerializer()
    cancelled = serializers.IntegerField(help_text="Grades that will not be graded: their status becomes `cancelled` (not counted in "
                                                   "pass@k); POST …/retry-failed-grades/ resumes them.")


class DifficultySerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    rubric_version = RubricRefSerializer()
    n = serializers.IntegerField(help_text="Graded rollouts, plus those that failed to run (they count as not passed). "
                                 "A rollout whose grade failed, was cancelled or is pending is not counted.")
    c = serializers.IntegerField(help_text="Of those, passed.")
    pending = serializers.IntegerField(help_text="Grades still waiting for the grader.")
    grading_failed = serializers.IntegerField(help_text="Completed rollouts whose grade failed: left out of n until retried "
                                              "(POST …/retry-failed-grades/).")
    grading_cancelled = serializers.IntegerField(help_text="Completed rollouts whose grading an author cancelled: left out of n "
                                                 "until graded (POST …/retry-failed-grades/ resumes them).")
    pass_at_k = serializers.DictField(child=serializers.FloatField(), help_text="k → unbiased pass@k, for k = 1, 2, 4, 8, 16 up to n.")
    band = serializers.CharField(
        help_text="too easy / learnable / too hard; empty while no rollout is counted (none finished, or none graded)."
    )


class CriterionAgreementSerializer(serializers.Serializer):
    criterion = serializers.IntegerField()
    text = serializers.CharField()
    graded = serializers.IntegerField()
    expert_marks = serializers.IntegerField()
    tp = serializers.IntegerField()
    fp = serializers.IntegerField(help_text="The judge said met, an expert says not met.")
    fn = serializers.IntegerField()
    tn = serializers.IntegerField()
    precision = serializers.FloatField(
        allow_null=True, help_text="Null while no expert has marked a verdict of the criterion (no marks, no figure)."
    )
    recall = serializers.FloatField(allow_null=True, help_text="Null as precision is.")
    f1 = serializers.FloatField(allow_null=True, help_text="Null as precision is.")
    stability = serializers.FloatField(allow_null=True, help_text="1 − the mean share of judge samples disagreeing with the majority; "
                                       "null for a check or a rubric that asks the judge once (one sample cannot disagree with itself).")
    experts = serializers.DictField(allow_null=True,
                                    help_text="Where two experts marked the same verdicts of this criterion: {pairs, shared, kappa, f1, "
                                    "judge_f1} (Cohen's kappa and the F1 of one expert against the other, the mean over pairs of experts; "
                                    "the judge's F1 against them on the same verdicts): the ceiling for the judge's F1. Null otherwise.")
    changed_since = serializers.IntegerField(
        allow_null=True, help_text="New or changed since this rubric version: expert calls start empty on it."
    )


class ProbeSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="probe.pk")
    kind = serializers.CharField(source="probe.kind")
    label = serializers.CharField(source="probe.label")
    answer = serializers.CharField(source="probe.answer")
    status = serializers.ChoiceField(source="grade.status", choices=GradeStatus.choices, allow_null=True, default=None,
                                     help_text="The probe's grade: queued, running, graded, grading_failed (see `error`) or cancelled.")
    score = serializers.FloatField(source="grade.score", allow_null=True, default=None)
    passed = serializers.BooleanField(source="grade.passed", allow_null=True, default=None)
    error = serializers.CharField(source="grade.error", default="")
    detail = serializers.DictField(source="probe.detail", help_text="What the probe was built from: {fact, wrong, fact_kind, alternatives} "
                                   "for a hedge or near miss, {aimed_at} for a model-written cheat.")
    control = serializers.BooleanField(help_text="The reference answer itself: never flagged; a sound rubric passes it.")
    flagged = serializers.BooleanField(
        help_text="Passed, or scored the run's flag_score or more; a near miss when it scored as much as the control."
    )
    fooled = serializers.SerializerMethodField(help_text="The positive criteria a flagged probe met: [{id, text}].")
    fixes = serializers.SerializerMethodField(
        help_text="Per fooled criterion, the suggested fix: [{criterion, text (null for a check), evidence, why}]."
    )
    pitfall = serializers.DictField(allow_null=True, help_text="A pitfall to add that this probe would meet: {text, points}.")

    def get_fooled(self, row: dict) -> list[dict]:
        return [{"id": c.pk, "text": c.text} for c in row["fooled"]]

    def get_fixes(self, row: dict) -> list[dict]:
        return [
            {"criterion": f["criterion"].pk, "text": f["text"], "evidence": f["evidence"], "why": f["why"]} for f in row.get("fixes", [])
        ]


class ProbeRunSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="run.pk")
    task = serializers.IntegerField(source="run.env_task_id")
    rubric_version = RubricRefSerializer(source="run.rubric_version")
    created_by = username_field("run.created_by")
    created_at = serializers.DateTimeField(source="run.created_at")
    status = serializers.ChoiceField(source="run.status", choices=ProbeRunStatus.choices,
                                     help_text="queued / writing: the cheat model is still to write its cheats "
                                     "(they join `probes` when written); ready: every probe is queued for grading; "
                                     "failed: the cheats could not be written (see `error`), the built-in probes are graded.")
    error = serializers.CharField(source="run.error", help_text="Why the cheats (or some kinds of them) could not be written.")
    cheats_per_kind = serializers.IntegerField(source="run.cheats_per_kind")
    flag_score = serializers.FloatField(source="run.flag_score")
    pending = serializers.IntegerField(help_text="Probes whose grade is still waiting for the grader.")
    flagged = serializers.IntegerField()
    grading_failed = serializers.IntegerField(help_text="Probes that could not be graded (see each probe's `error`): "
                                              "they prove nothing either way, so `flagged: 0` with every probe failed is not a clean bill.")
    grading_cancelled = serializers.IntegerField(help_text="Probes whose grading was cancelled (POST …/cancel/): they prove nothing "
                                                 "either way either.")
    probes = ProbeSerializer(many=True)


class ProbeRunRequestSerializer(serializers.Serializer):
    judge_endpoint = id_field(help_text="The model endpoint that judges LLM-judged criteria.")
    cheat_endpoint = id_field(
        required=False, allow_null=True, default=None, help_text="Optional: a model that writes cheats aimed at the rubric."
    )
    cheats_per_kind = serializers.IntegerField(required=False, allow_null=True, default=None, min_value=0, max_value=MAX_CHEATS_PER_KIND,
                                               help_text="How many cheats the cheat model writes of each kind "
                                               "(default: the site's PROBE_CHEATS_PER_KIND).")
    flag_score = serializers.FloatField(required=False, allow_null=True, default=None, min_value=0.05, max_value=1,
                                        help_text="Flag a probe scoring this or more (default: the site's PROBE_FLAG_SCORE).")


class RubricSettingsRequestSerializer(RevisionedSerializer):
    pass_threshold = serializers.FloatField(required=False)
    all_must_pass = serializers.BooleanField(required=False)
    judge_samples = serializers.IntegerField(required=False)


# --- Helpers -----------------------------------------------------------------------------------------

class QualityApiView(ApiView):
    query_filters: tuple[str, ...] = ()

    # Only the parameters a view names are accepted (the base allows `format` alone outside lists).
    def _check_query_params(self, request: Request) -> None:
        unknown = sorted(set(request.query_params) - {"format", *self.query_filters})
        if unknown:
            raise InvalidRequest(f"Unknown query parameter(s): {', '.join(unknown)[:200]}. This endpoint accepts: "
                                 f"{', '.join(sorted({'format', *self.query_filters}))}.")

    def batch(self, pk: int) -> RolloutBatch:
        return rollout_selectors.batch_get_for_user(user=self.request.user, pk=pk)

    def rubric(self, batch: RolloutBatch):
        number = self.int_param("rubric")
        rubric, versions = selectors.grading_rubric(batch=batch, number=number)
        if number and rubric.number != number:
            raise InvalidRequest(
                f"Rubric version {number} has not graded this batch; these have: {', '.join(str(v.number) for v in versions) or 'none'}."
            )
        return rubric, versions


def _probe_run_data(run) -> dict:
    rows = selectors.probe_rows(run=run, current=[])
    summary = selectors.probe_summary(rows)
    return ProbeRunSerializer({
        "run": run, "probes": rows, "pending": sum(1 for r in rows if r["pending"]), "flagged": summary["flagged"],
        "grading_failed": summary["failed"], "grading_cancelled": summary["cancelled"],
    }).data


# --- Batches -------------------------------------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER, RUBRIC_PARAMETER])
class BatchGradesApi(QualityApiView):
    query_filters = ("rubric",)

    @extend_schema(summary="Grades of a batch, with each criterion's verdict", responses={200: BatchGradesSerializer, **READ_ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        rubric, versions = self.rubric(batch)
        rows = selectors.grade_rows(batch=batch, rubric=rubric, user=request.user)
        return Response(BatchGradesSerializer({
            "batch": batch.pk, "rubric_version": rubric, "graded_versions": [v.number for v in versions], "grades": rows,
        }).data)


@extend_schema(parameters=[ID_PARAMETER])
class ExpertVerdictApi(QualityApiView):
    @extend_schema(
        summary="Set your own verdict on a criterion of a trajectory",
        description="Authors and reviewers mark where they disagree with the judge; `met: null` clears the mark.",
        request=ExpertVerdictRequestSerializer, responses={200: ExpertVerdictSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        data = self.valid_data(ExpertVerdictRequestSerializer)
        rollout = selectors.batch_rollout(batch=batch, pk=data["rollout"])
        criterion = selectors.task_criterion(env_task_id=batch.env_task_id, pk=data["criterion"])
        saved = expert_verdict_set(rollout=rollout, criterion=criterion, user=request.user, met=data["met"], note=data["note"])
        judge = Verdict.objects.filter(grade__rollout=rollout, criterion=criterion).values_list("met", flat=True).first()
        return Response(ExpertVerdictSerializer({"rollout": rollout.pk, "criterion": criterion.pk, "met": saved.met if saved else None,
                                                 "judge_met": judge}).data)


@extend_schema(parameters=[ID_PARAMETER, RUBRIC_PARAMETER])
class BatchAgreementApi(QualityApiView):
    query_filters = ("rubric",)

    @extend_schema(
        summary="Judge vs expert agreement per criterion", responses={200: CriterionAgreementSerializer(many=True), **READ_ERRORS}
    )
    def get(self, request: Request, pk: int) -> Response:
        rubric, _ = self.rubric(self.batch(pk))
        rows = []
        for row in selectors.agreement_rows(rubric=rubric):
            counts = row["confusion"] or {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "precision": None, "recall": None, "f1": None}
            rows.append({"criterion": row["criterion"].pk, "text": row["criterion"].text, "graded": row["graded"],
                         "expert_marks": row["expert_marks"], **{k: counts[k] for k in ("tp", "fp", "fn", "tn")},
                         **{k: _number(counts[k]) for k in ("precision", "recall", "f1")}, "stability": _number(row["stability"]),
                         "experts": ({k: _number(row["experts"][k]) for k in ("pairs", "shared", "kappa", "f1", "judge_f1")}
                                     if row["experts"] else None),
                         "changed_since": row["changed_since"]})
        return Response(CriterionAgreementSerializer(rows, many=True).data)


@extend_schema(parameters=[ID_PARAMETER, RUBRIC_PARAMETER])
class BatchRankingApi(QualityApiView):
    query_filters = ("rubric",)

    def _data(self, batch: RolloutBatch, rubric) -> dict:
        items, saved = selectors.ranking_items(batch=batch, user=self.request.user)
        agreement = ranking_agreement(batch=batch, user=self.request.user, rubric_version=rubric) if saved else None
        if agreement:
            agreement = {**agreement, "points": [{"rollout": pk, "score": score, "rank": rank} for pk, score, rank in agreement["points"]]}
        return RankingSerializer(
            {"order": [r.pk for r in items] if saved else [], "rubric_version": rubric.number, "agreement": agreement}
        ).data

    @extend_schema(
        summary="Your ranking of the batch's trajectories, with its agreement with the rubric",
        responses={200: RankingSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        return Response(self._data(batch, self.rubric(batch)[0]))

    @extend_schema(
        summary="Set your ranking (best first)",
        description="Authors and reviewers rank every completed trajectory once. Answers Kendall's tau-b and Spearman's rho "
        "between the rubric's scores and your order, and a warning when they agree little.",
        request=RankingRequestSerializer, responses={200: RankingSerializer, **ERRORS},
    )
    def put(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        rubric = self.rubric(batch)[0]
        ranking_set(batch=batch, user=request.user, order=self.valid_data(RankingRequestSerializer)["order"])
        return Response(self._data(batch, rubric))


@extend_schema(parameters=[ID_PARAMETER])
class BatchRegradeApi(QualityApiView):
    @extend_schema(
        summary="Regrade the batch against a rubric version",
        description="Authors only. Queues a grade of every completed rollout under the version (the task's current one by default); "
        "grades that exist are kept, except failed or cancelled ones, which are tried again. Poll the grades with ?rubric=<number>.",
        request=RegradeRequestSerializer, responses={202: RegradeSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        data = self.valid_data(RegradeRequestSerializer)
        rubric = rubric_version_get_for_user(user=request.user, pk=data["rubric_version"]) if data.get("rubric_version") else None
        grades = batch_regrade(batch=batch, user=request.user, rubric_version=rubric)
        rubric = grades[0].rubric_version if grades else (rubric or selectors.grading_rubric(batch=batch)[0])
        pending = sum(1 for g in grades if g.status in (GradeStatus.QUEUED, GradeStatus.RUNNING))
        return Response(
            RegradeSerializer({"rubric_version": rubric, "grades": len(grades), "pending": pending}).data, status=status.HTTP_202_ACCEPTED
        )


@extend_schema(parameters=[ID_PARAMETER])
class BatchRetryFailedGradesApi(QualityApiView):
    @extend_schema(
        summary="Retry the batch's failed and cancelled grades",
        description="Authors only. Sends every failed or cancelled grade of the batch (of one rubric version with `rubric_version`) to "
        "the grader again, on the grading queue: the verdicts it reached are kept, the ones that failed (a malformed judge answer, a "
        "broken check) are asked again, the ones a cancel stopped it before are asked for the first time. A failed or cancelled grade is "
        "never counted as met nor as a failed attempt; until graded it is left out of pass@k.",
        request=RetryFailedRequestSerializer, responses={202: RetryFailedSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        data = self.valid_data(RetryFailedRequestSerializer)
        rubric = rubric_version_get_for_user(user=request.user, pk=data["rubric_version"]) if data.get("rubric_version") else None
        grades = batch_failed_grades_retry(batch=batch, user=request.user, rubric_version=rubric)
        pending = sum(1 for g in grades if g.status in (GradeStatus.QUEUED, GradeStatus.RUNNING))
        return Response(RetryFailedSerializer({"retried": len(grades), "pending": pending}).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(parameters=[ID_PARAMETER])
class BatchCancelGradingApi(QualityApiView):
    @extend_schema(
        summary="Cancel the grading of the batch under a rubric version",
        description="Authors only. The grades not in yet are not graded (a running one stops before its next criterion, keeping the "
        "verdicts it reached); the grades already in are kept.",
        request=CancelGradingRequestSerializer, responses={200: CancelGradingSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        data = self.valid_data(CancelGradingRequestSerializer)
        rubric = (rubric_version_get_for_user(user=request.user, pk=data["rubric_version"]) if data.get("rubric_version")
                  else selectors.grading_rubric(batch=batch)[0])
        cancelled = batch_grading_cancel(batch=batch, user=request.user, rubric_version=rubric)
        return Response(CancelGradingSerializer({"rubric_version": rubric, "cancelled": cancelled}).data)


@extend_schema(parameters=[ID_PARAMETER, RUBRIC_PARAMETER])
class BatchDifficultyApi(QualityApiView):
    query_filters = ("rubric",)

    @extend_schema(summary="Difficulty of the batch: pass@k and its band", responses={200: DifficultySerializer, **READ_ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        batch = self.batch(pk)
        rubric = self.rubric(batch)[0]
        result = selectors.batch_difficulty(batch=batch, rubric=rubric)
        return Response(DifficultySerializer({
            "batch": batch.pk, "rubric_version": rubric, "n": result["n"], "c": result["c"], "pending": result["pending"],
            "grading_failed": result["grading_failed"], "grading_cancelled": result["grading_cancelled"],
            "pass_at_k": {str(k): value for k, value in result["curve"]}, "band": result["band"],
        }).data)


# --- Probes and grading settings -------------------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class ProbeRunListApi(QualityApiView):
    @extend_schema(
        summary="Run the reward-hacking probes against the task's current rubric",
        description="Authors only. The built-in adversarial answers are graded like rollouts on the grading queue. With `cheat_endpoint`, "
        "a model writes cheats aimed at the rubric, on the same queue, after this answers; they are graded once written. "
        "Poll the run until `status` is `ready` or `failed` and `pending` is 0.",
        request=ProbeRunRequestSerializer, responses={201: ProbeRunSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(ProbeRunRequestSerializer)
        judge = usable_endpoint(data["judge_endpoint"])
        cheat = usable_endpoint(data["cheat_endpoint"]) if data.get("cheat_endpoint") else None
        run = probe_run_start(env_task=env_task, user=request.user, judge_endpoint=judge, cheat_endpoint=cheat,
                              cheats_per_kind=data.get("cheats_per_kind"), flag_score=data.get("flag_score"))
        return Response(_probe_run_data(run), status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class ProbeRunDetailApi(QualityApiView):
    @extend_schema(
        summary="A probe run: each probe's grade, and the criteria a flagged probe fooled",
        responses={200: ProbeRunSerializer, **READ_ERRORS},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(_probe_run_data(selectors.probe_run_get_for_user(user=request.user, pk=pk)))


@extend_schema(parameters=[ID_PARAMETER])
class ProbeRunCancelApi(QualityApiView):
    @extend_schema(
        summary="Cancel a probe run",
        description="Authors only. The kinds of cheat not written yet are not written, the probes not graded yet are not graded "
        "(their status becomes `cancelled`, counted in `grading_cancelled`); the graded probes and their flags are kept.",
        request=None, responses={200: ProbeRunSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        probe_run_cancel(run=selectors.probe_run_get_for_user(user=request.user, pk=pk), user=request.user)
        return Response(_probe_run_data(selectors.probe_run_get_for_user(user=request.user, pk=pk)))


@extend_schema(parameters=[ID_PARAMETER])
class RubricSettingsApi(QualityApiView):
    @extend_schema(summary="The current rubric version's grading settings", responses={200: RubricSettingsSerializer, **READ_ERRORS})
    def get(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        return Response(RubricSettingsSerializer(env_task.rubric_versions.order_by("-number").first()).data)

    @extend_schema(
        summary="Change the rubric's grading settings",
        description="Authors only. `revision` is the rubric's. Pass threshold 0–1; judge samples 1–9 (odd avoids ties). "
        "Changing a frozen version (one that graded trials or was submitted) makes a new version, as a criterion edit does.",
        request=RubricSettingsRequestSerializer, responses={200: RubricSettingsSerializer, **EDIT_ERRORS},
    )
    def patch(self, request: Request, pk: int) -> Response:
        env_task = env_task_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(RubricSettingsRequestSerializer)
        current = env_task.rubric_versions.order_by("-number").first()
        rubric = authoring_services.rubric_settings_update(
            env_task=env_task, user=request.user, base_revision=data["revision"],
            **{name: data.get(name, getattr(current, name)) for name in ("pass_threshold", "all_must_pass", "judge_samples")},
        )
        return Response(RubricSettingsSerializer(rubric).data)
