from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.http import HttpResponse
from django.utils.http import content_disposition_header

# Files people or models made are never rendered by the browser as a page: always an
# attachment, never sniffed, and sandboxed should a browser try anyway.
SANDBOX_CSP = "default-src 'none'; sandbox"


def attachment_response(data: bytes, *, filename: str, content_type: str) -> HttpResponse:
    response = HttpResponse(data, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=filename)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = SANDBOX_CSP
    return response


def save_once(name: str, data: bytes) -> None:
    """Keep `data` in Django's storage at `name`, a name that stands for its content (a
    digest): when it is there already, nothing is written. Two processes saving the same
    name at once may both write; a backend that then picks another name for the second copy
    has that copy removed again, so only `name` is ever kept."""
    if not default_storage.exists(name):
        saved = default_storage.save(name, ContentFile(data))
        if saved != name:
            default_storage.delete(saved)
