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
