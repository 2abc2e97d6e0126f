"""Documents through the API: the data room, versions and restore, the rendered file,
the uploaded original, and uploads."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import parsers, serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response

from authoring import selectors, services
from authoring.apis.common import EDIT_ERRORS
from authoring.models import Document, DocumentKind
from authoring.services.uploads import MAX_FILES_PER_UPLOAD, UploadRefused, documents_upload
from core.apis import (
    ERRORS,
    ID_PARAMETER,
    ApiView,
    DetailSerializer,
    FirstRendererNegotiation,
    InvalidRequest,
    RevisionedSerializer,
    text_field,
    username_field,
)
from core.files import attachment_response

# --- Serializers -----------------------------------------------------------------------

class DocumentListSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    world = serializers.IntegerField(source="world_id")
    path = serializers.CharField()
    kind = serializers.ChoiceField(choices=DocumentKind.choices)
    format = serializers.CharField()
    brief = serializers.CharField()
    metadata = serializers.DictField()
    target_size = serializers.IntegerField()
    status = serializers.CharField()
    position = serializers.IntegerField()
    revision = serializers.IntegerField()
    updated_by = username_field("updated_by")
    updated_at = serializers.DateTimeField()


class DocumentSerializer(DocumentListSerializer):
    content = serializers.CharField()


class DocumentCreateSerializer(serializers.Serializer):
    path = text_field()
    kind = serializers.ChoiceField(choices=DocumentKind.choices, default=DocumentKind.FILE)
    format = text_field(required=False, default="", help_text="docx, xlsx, pptx, pdf, md or csv; guessed from the path when blank.")
    brief = text_field(required=False, default="")
    metadata = serializers.DictField(required=False, default=dict, help_text="from, to, cc, date, subject, channel, attendees …")
    target_size = serializers.IntegerField(required=False, default=300, help_text="Target length in words.")
    content = text_field(required=False, default="")


class DocumentUpdateSerializer(RevisionedSerializer):
    path = text_field(required=False)
    kind = serializers.ChoiceField(choices=DocumentKind.choices, required=False)
    format = text_field(required=False)
    brief = text_field(required=False)
    metadata = serializers.DictField(required=False)
    target_size = serializers.IntegerField(required=False)
    content = text_field(required=False)
    locked = serializers.BooleanField(required=False, help_text="Lock (true) or unlock (false) the document.")

class DocumentVersionListSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    document = serializers.IntegerField(source="document_id")
    number = serializers.IntegerField(help_text="1 for the document's first version.")
    source = serializers.CharField(help_text="How it came about: edited, drafted, uploaded or restored.")
    note = serializers.CharField(help_text="e.g. the model that drafted it and the redraft instruction.")
    created_by = username_field("created_by")
    created_at = serializers.DateTimeField()


class DocumentVersionSerializer(DocumentVersionListSerializer):
    content = serializers.CharField()
    metadata = serializers.DictField()


class RefusedFileSerializer(serializers.Serializer):
    index = serializers.IntegerField(help_text="Its place among the files sent, from 0.")
    name = serializers.CharField(help_text="Its name, made harmless.")
    detail = serializers.CharField(help_text="Why it was refused.")


class UploadRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField()
    files = RefusedFileSerializer(
        many=True, required=False,
        help_text="Each file refused and why; absent when the request as a whole was (no files, too many files).",
    )


class KeptDocumentSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="document.pk")
    path = serializers.CharField(source="document.path")
    kind = serializers.ChoiceField(source="document.kind", choices=DocumentKind.choices)
    remark = serializers.CharField(help_text="What it is to the upload, e.g. 'Attached to Uploads/re-msa.eml'; often empty.")


class NotKeptSerializer(serializers.Serializer):
    item = serializers.CharField(help_text="What of the file was not kept, e.g. 'The attachment photo.png of the email …'.")
    reason = serializers.CharField(help_text="Why, in plain words.")


class UploadedFileSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="The file's name, made harmless.")
    format = serializers.CharField(help_text="What the file was found to be: docx, xlsx, pptx, pdf, eml, mbox, ics, csv, md or txt.")
    kept = KeptDocumentSerializer(many=True, help_text="The documents it became.")
    not_kept = NotKeptSerializer(many=True, source="left", help_text="What it held that was not kept, and why.")


class UploadReportSerializer(serializers.Serializer):
    documents = DocumentListSerializer(many=True, help_text="Every document added, in data-room order.")
    files = UploadedFileSerializer(many=True, help_text="Per file sent: what it became and what was not kept.")


UPLOAD_REQUEST = inline_serializer("DocumentUploadRequest", fields={
    "files": serializers.ListField(child=serializers.FileField(), help_text="One or more files (multipart field `files`)."),
})


# --- Documents -------------------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class WorldDocumentListApi(ApiView):
    list_filters = ()

    @extend_schema(
        summary="The world's data room, in position order",
        description="Content is left out of the list: read one document for it.",
        responses=DocumentListSerializer(many=True),
    )
    def get(self, request: Request, pk: int) -> Response:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        documents = selectors.document_list_for_user(user=request.user, world_id=world.pk).select_related("updated_by")
        return self.paginated(documents, DocumentListSerializer)

    @extend_schema(
        summary="Add a document to the data room", request=DocumentCreateSerializer, responses={201: DocumentSerializer, **ERRORS}
    )
    def post(self, request: Request, pk: int) -> Response:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(DocumentCreateSerializer)
        document = services.document_create(world=world, user=request.user, **data)
        return Response(DocumentSerializer(document).data, status=status.HTTP_201_CREATED)


@extend_schema(parameters=[ID_PARAMETER])
class DocumentDetailApi(ApiView):
    @extend_schema(summary="One document, with its content", responses={200: DocumentSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(DocumentSerializer(selectors.document_get_for_user(user=request.user, pk=pk)).data)

    @extend_schema(
        summary="Edit a document",
        description="Send `revision` and any fields to change; `locked` locks or unlocks it.",
        request=DocumentUpdateSerializer,
        responses={200: DocumentSerializer, **EDIT_ERRORS},
    )
    def patch(self, request: Request, pk: int) -> Response:
        document: Document = selectors.document_get_for_user(user=request.user, pk=pk)
        data = dict(self.valid_data(DocumentUpdateSerializer))
        base_revision = data.pop("revision")
        document = services.document_update(document=document, user=request.user, base_revision=base_revision, **data)
        return Response(DocumentSerializer(document).data)

    @extend_schema(summary="Delete a document (unlocked only)", request=None, responses={204: None, **ERRORS})
    def delete(self, request: Request, pk: int) -> Response:
        document = selectors.document_get_for_user(user=request.user, pk=pk)
        services.document_delete(document=document, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)




# --- Versions --------------------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class DocumentVersionListApi(ApiView):
    list_filters = ()

    @extend_schema(
        summary="Every earlier version of a document, newest first",
        description="Content is left out of the list: read one version for it.",
        responses=DocumentVersionListSerializer(many=True),
    )
    def get(self, request: Request, pk: int) -> Response:
        document = selectors.document_get_for_user(user=request.user, pk=pk)
        return self.paginated(document.versions.select_related("created_by").order_by("-number"), DocumentVersionListSerializer)


@extend_schema(parameters=[ID_PARAMETER])
class DocumentVersionDetailApi(ApiView):
    @extend_schema(summary="One version of a document, with its content", responses={200: DocumentVersionSerializer, 404: ERRORS[404]})
    def get(self, request: Request, pk: int) -> Response:
        return Response(DocumentVersionSerializer(selectors.document_version_get_for_user(user=request.user, pk=pk)).data)


@extend_schema(parameters=[ID_PARAMETER])
class DocumentVersionRestoreApi(ApiView):
    @extend_schema(
        summary="Bring back this version's content and metadata",
        description="`revision` is the document's current revision. The restore is kept as a new version: nothing in "
        "between is lost.",
        request=RevisionedSerializer,
        responses={200: DocumentSerializer, **EDIT_ERRORS},
    )
    def post(self, request: Request, pk: int) -> Response:
        version = selectors.document_version_get_for_user(user=request.user, pk=pk)
        data = self.valid_data(RevisionedSerializer)
        document = services.document_version_restore(version=version, user=request.user, base_revision=data["revision"])
        return Response(DocumentSerializer(document).data)


# --- Files -----------------------------------------------------------------------------

@extend_schema(parameters=[ID_PARAMETER])
class DocumentFileApi(ApiView):
    content_negotiation_class = FirstRendererNegotiation

    @extend_schema(
        summary="The document rendered as its real file",
        description="docx, xlsx, pptx, pdf, md or csv for files; eml for an email, ics for an event, json for a chat "
        "message. Always an attachment, never shown as a page.",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file, as an attachment."),
            400: OpenApiResponse(
                DetailSerializer, description="The content does not follow the format's conventions: the message says where."
            ),
            404: ERRORS[404],
        },
    )
    def get(self, request: Request, pk: int):
        from authoring.rendering import render_file  # the office libraries load only when a file is made

        document = selectors.document_get_for_user(user=request.user, pk=pk)
        # A RenderError is an ApplicationError: the handler answers 400 with its message.
        rendered = render_file(document.kind, document.format, document.content, document.metadata, path=document.path)
        return attachment_response(rendered.data, filename=rendered.filename, content_type=rendered.content_type)


@extend_schema(parameters=[ID_PARAMETER])
class DocumentOriginalApi(ApiView):
    content_negotiation_class = FirstRendererNegotiation

    @extend_schema(
        summary="The file a document was uploaded from, as it was uploaded",
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="The file, as an attachment."),
            404: OpenApiResponse(DetailSerializer, description="No such document in your projects, or it was not uploaded."),
        },
    )
    def get(self, request: Request, pk: int):
        document = selectors.document_get_for_user(user=request.user, pk=pk)
        if not document.source_file:
            raise NotFound("This document was not uploaded: it has no original file.")
        try:
            with document.source_file.open("rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            raise NotFound("This document's original file is missing from storage.") from None
        return attachment_response(data, filename=document.source_name or document.name, content_type="application/octet-stream")


@extend_schema(parameters=[ID_PARAMETER])
class WorldUploadApi(ApiView):
    parser_classes = [parsers.MultiPartParser]

    @extend_schema(
        summary="Upload existing files into the world's data room",
        description=f"Multipart, field `files` (at most {MAX_FILES_PER_UPLOAD}). Each file's format is decided from its content "
        "(docx, xlsx, pptx, pdf, eml, mbox, ics, csv, md, txt) and its text extracted for agents; it lands in Uploads/. "
        "An email becomes an email document and each attachment a file linked from it (metadata `attachments`); a "
        "mailbox (mbox) becomes its emails, threads kept; a calendar (ics) one calendar event per event. What a file "
        "holds that cannot be kept (an attachment of an unsupported type, an event without a start …) is listed under "
        "`files[].not_kept` with the reason. All or nothing: when any file is refused, none is added and the answer "
        "says why, per file.",
        request={"multipart/form-data": UPLOAD_REQUEST},
        responses={
            201: UploadReportSerializer,
            400: OpenApiResponse(UploadRefusedSerializer, description="Some files were refused; nothing was added."),
            403: ERRORS[403],
            404: ERRORS[404],
        },
    )
    def post(self, request: Request, pk: int) -> Response:
        world = selectors.world_get_for_user(user=request.user, pk=pk)
        files = request.FILES.getlist("files")
        if not files:
            raise InvalidRequest("Send one or more files in the multipart field `files`.")
        try:
            report = documents_upload(world=world, user=request.user, uploaded_files=files)
        except UploadRefused as refused:
            return Response(
                UploadRefusedSerializer({"detail": refused.message, "files": refused.files}).data, status=status.HTTP_400_BAD_REQUEST
            )
        return Response(UploadReportSerializer(report).data, status=status.HTTP_201_CREATED)
