from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.exceptions import ApplicationError, StaleEditError


def exception_handler(exc, context):
    """Map domain errors to clear 400/409 answers; everything else as DRF does."""
    if isinstance(exc, StaleEditError):
        return Response({"detail": exc.message, **exc.extra}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, ApplicationError):
        return Response({"detail": exc.message, **exc.extra}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)
