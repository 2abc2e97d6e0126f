"""Model-assisted drafting through the API: skeleton proposals, draft runs and their
jobs. The same services as the world editor's drafting panel: work is queued after
commit on the `drafting` queue, so writes answer 202 and the client polls the run."""

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from authoring import selectors
from authoring.apis.documents import DocumentListSerializer
from authoring.models import DraftJob, DraftRun, SkeletonProposal
from authoring.services import drafting
from authoring.services.documents import MAX_DOCUMENTS_PER_WORLD
from core.apis import ERRORS, ID_PARAMETER, ApiView, DetailSerializer, InvalidRequest, id_field, text_field, username_field
from llm.apis import usable_endpoint

# --- Serializers -----------------------------------------------------------------------

class EndpointRequestSerializer(serializers.Serializer):
    endpoint = id_field(help_text="The model endpoint to use: an enabled one from GET /api/model-endpoints/.")


class DraftRequestSerializer(EndpointRequestSerializer):
    documents = serializers.ListField(
        child=id_field(), required=False, allow_empty=False, max_length=MAX_DOCUMENTS_PER_WORLD,
        help_text="Documents of this world to draft (or redraft). Left out: every undrafted document (\"Draft all\").",
    )
    instruction = text_field(required=False, default="", help_text='For a redraft, e.g. "make the CFO sound more defensive".')


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "enum": ["all"]}]})
class IndexOrAllField(serializers.Field):
    """An item's index in the proposal (from 0), or "all"."""

    default_error_messages = {"invalid": 'Give an item\'s index in `items` (a whole number from 0) or "all".'}

    def to_internal_value(self, data):
        if data == "all":
            return None
        if isinstance(data, bool) or not isinstance(data, int) or not 0 <= data < 2**31:
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return "all" if value is None else value


class SkeletonAcceptSerializer(serializers.Serializer):
    index = IndexOrAllField(help_text='The item to accept (its index in `items`, from 0), or "all" for every acceptable item.')


class SkeletonItemSerializer(serializers.Serializer):
    path = serializers.CharField()
    kind = serializers.CharField()
    format = serializers.CharField()
    brief = serializers.CharField()
    metadata = serializers.DictField()
    target_size = serializers.IntegerField()
    accepted = serializers.BooleanField(help_text="Already added to the data room.")
    problem = serializers.CharField(help_text="Why it cannot be accepted as proposed (empty when it can).")


class SkeletonProposalSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    world = serializers.IntegerField(source="world_id")
    status = serializers.CharField(help_text="queued, ready or failed.")
    endpoint = serializers.IntegerField(source="endpoint_id", allow_null=True)
    endpoint_name = serializers.CharField()
    endpoint_is_scripted = serializers.BooleanField(
        source="endpoint.is_scripted", default=False, help_text="The scripted sample model, not a real one."
    )
    items = SkeletonItemSerializer(many=True, help_text="Accept an item by its index in this list, from 0.")
    error = serializers.CharField(help_text="Why the proposal failed.")
    requested_by = username_field("requested_by")
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


class SkeletonAcceptedSerializer(serializers.Serializer):
    documents = DocumentListSerializer(many=True, help_text="The skeleton documents just added.")
    proposal = SkeletonProposalSerializer()


class DraftProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    done = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    running = serializers.IntegerField()
    remaining = serializers.IntegerField(help_text="Queued or running.")
    percent = serializers.IntegerField(help_text="Finished jobs (done, failed or cancelled), in percent.")
    is_finished = serializers.BooleanField(help_text="Nothing left to do: stop polling.")
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=14, decimal_places=6, help_text="In dollars, at the endpoint's prices.")


class DraftJobSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    run = serializers.IntegerField(source="run_id")
    document = serializers.IntegerField(source="document_id")
    document_path = serializers.CharField(source="document.path")
    status = serializers.CharField(help_text="queued, running, done, failed or cancelled.")
    error = serializers.CharField(help_text="Why it failed: retry it alone with POST /api/draft-jobs/{id}/retry/.")
    attempts = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)


class DraftRunSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    world = serializers.IntegerField(source="world_id")
    endpoint = serializers.IntegerField(source="endpoint_id", allow_null=True)
    endpoint_name = serializers.CharField()
    endpoint_is_scripted = serializers.BooleanField(
        source="endpoint.is_scripted", default=False, help_text="The scripted sample model, not a real one."
    )
    instruction = serializers.CharField()
    requested_by = username_field("requested_by")
    cancelled_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField()
    progress = DraftProgressSerializer()
    jobs = DraftJobSerializer(many=True, source="job_list")


def _run_data(run: DraftRun) -> dict:
    progress = drafting.draft_run_progress(run=run)
    for name in ("input_tokens", "output_tokens", "cost"):
        progress[name] = progress[name] or 0  # a sum over no rows is None
    run.progress = progress
    run.job_list = list(run.jobs.select_related("document"))
    return DraftRunSerializer(run).data


def _proposal_data(proposal_id: int, user) -> dict:
    return SkeletonProposalSerializer(selectors.skeleton_proposal_get_for_user(user=user, pk=proposal_id)).data


# --- Skeleton proposals ----------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class WorldSuggestSkeletonApi(ApiView):
    @extend_schema(
        summary="Ask a model to propose the world's data room",
        description="From the outline and facts sheet, the model proposes documents (path, kind, brief, metadata, target "
        "size). The proposal is made on the `drafting` queue: poll GET /api/skeleton-proposals/{id}/ until it is ready, "
        "then accept items.",
        request=EndpointRequestSerializer,
        responses={202: SkeletonProposalSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(EndpointRequestSerializer)
        proposal = drafting.skeleton_suggest(world=world, user=request.user, endpoint=usable_endpoint(data["endpoint"]))
        return Response(_proposal_data(proposal.pk, request.user), status=status.HTTP_202_ACCEPTED)


@extend_schema(parameters=[ID_PARAMETER])
class SkeletonProposalDetailApi(ApiView):
    @extend_schema(summary="A skeleton proposal and its items", responses={200: SkeletonProposalSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(_proposal_data(pk, request.user))


@extend_schema(parameters=[ID_PARAMETER])
class SkeletonAcceptApi(ApiView):
    @extend_schema(
        summary="Add proposed items to the data room as skeleton documents",
        description='One item by its index, or "all": every item not yet accepted and without a problem.',
        request=SkeletonAcceptSerializer,
        responses={200: SkeletonAcceptedSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        proposal: SkeletonProposal = selectors.skeleton_proposal_get_for_user(user=request.user, pk=pk)
        index = self.valid_data(SkeletonAcceptSerializer)["index"]
        created = drafting.skeleton_accept(proposal=proposal, user=request.user, indexes=None if index is None else [index])
        return Response({"documents": DocumentListSerializer(created, many=True).data, "proposal": _proposal_data(pk, request.user)})


# --- Draft runs and jobs ---------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class WorldDraftApi(ApiView):
    @extend_schema(
        summary="Draft documents with a model (\"Draft all\", or the ones named)",
        description="Queues one job per document on the `drafting` queue. Without `documents`: every undrafted one. "
        "Locked documents are never touched; documents already being drafted are skipped. Poll "
        "GET /api/draft-runs/{id}/ for progress.",
        request=DraftRequestSerializer,
        responses={202: DraftRunSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(DraftRequestSerializer)
        documents = None
        if "documents" in data:
            ids = set(data["documents"])
            documents = list(selectors.document_list_for_user(user=request.user, world_id=world.pk).filter(pk__in=ids))
            if len(documents) != len(ids):
                raise InvalidRequest("Those documents are not all in this world.")
        run = drafting.draft_run_start(
            world=world, user=request.user, endpoint=usable_endpoint(data["endpoint"]), documents=documents,
            instruction=data["instruction"],
        )
        return Response(_run_data(run), status=status.HTTP_202_ACCEPTED)


@extend_schema(parameters=[ID_PARAMETER])
class DraftRunDetailApi(ApiView):
    @extend_schema(
        summary="A draft run: progress, and every job with its status, error, tokens and cost",
        responses={200: DraftRunSerializer, 404: ERRORS[404]},
    )
    def get(self, request: Request, pk: int) -> Response:
        return Response(_run_data(selectors.draft_run_get_for_user(user=request.user, pk=pk)))


@extend_schema(parameters=[ID_PARAMETER])
class DraftRunCancelApi(ApiView):
    @extend_schema(
        summary="Cancel a draft run",
        description="Queued jobs never start; the results of running ones are dropped. Done jobs stay done.",
        request=None,
        responses={200: DraftRunSerializer, **ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        run = selectors.draft_run_get_for_user(user=request.user, pk=pk)
        drafting.draft_run_cancel(run=run, user=request.user)
        return Response(_run_data(selectors.draft_run_get_for_user(user=request.user, pk=pk)))


@extend_schema(parameters=[ID_PARAMETER])
class DraftJobRetryApi(ApiView):
    @extend_schema(
        summary="Retry one failed or cancelled document of a run",
        request=None,
        responses={202: DraftJobSerializer,
                   400: OpenApiResponse(DetailSerializer, description="Not failed or cancelled, locked, or already being drafted."),
                   403: ERRORS[403], 404: ERRORS[404]},
    )
    def post(self, request: Request, pk: int) -> Response:
        job: DraftJob = selectors.draft_job_get_for_user(user=request.user, pk=pk)
        job = drafting.draft_job_retry(job=job, user=request.user)
        return Response(DraftJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)
