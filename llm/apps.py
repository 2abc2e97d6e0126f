from django.apps import AppConfig
from django.core import checks


class LlmConfig(AppConfig):
    name = "llm"

    def ready(self) -> None:
        checks.register(check_model_key_variables)


def check_model_key_variables(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """A name listed in MODEL_KEY_VARIABLES that is never allowed (SECRET_KEY, *_URL …) is
    ignored; say so where the operator looks, rather than let it fail only at call time."""
    from django.conf import settings

    from llm import egress

    return [
        checks.Warning(
            f"MODEL_KEY_VARIABLES lists {name}, which is never allowed as a model key; it is ignored.",
            hint="Keep the deployment's own secrets out of MODEL_KEY_VARIABLES (see config/settings.py).",
            id="llm.W001",
        )
        for name in settings.MODEL_KEY_VARIABLES
        if egress.key_variable_denied(name)
    ]
