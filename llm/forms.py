from django import forms

from llm.models import ModelEndpoint


class EndpointChoiceField(forms.ModelChoiceField):
    """A model picker's field: each endpoint by ModelEndpoint.picker_label."""

    def label_from_instance(self, obj) -> str:
        return obj.picker_label


class EndpointForm(forms.ModelForm):
    class Meta:
        model = ModelEndpoint
        fields = ["name", "kind", "base_url", "model", "api_key_env", "max_concurrency", "connect_timeout", "read_timeout",
                  "max_retries", "stream", "price_input_per_mtok", "price_output_per_mtok", "enabled"]
        labels = {"api_key_env": "API key variable (name only)", "price_input_per_mtok": "$ per million input tokens",
                  "price_output_per_mtok": "$ per million output tokens", "max_concurrency": "Max concurrent calls",
                  "stream": "Stream answers",
                  "connect_timeout": "Connect timeout (seconds)", "read_timeout": "Read timeout (seconds)"}
        help_texts = {
            "api_key_env": "Name of the environment variable holding the key: one starting with TASKWRIGHT_MODEL_KEY_ "
                           "(e.g. TASKWRIGHT_MODEL_KEY_OPENAI), or one the server's MODEL_KEY_VARIABLES lists (e.g. OPENAI_API_KEY).",
            "base_url": "e.g. https://api.openai.com/v1. A model on this machine or the local network "
                        "(http://127.0.0.1:11434/v1, Ollama) needs MODEL_ALLOW_PRIVATE_NETWORKS=1 on the server.",
        }
