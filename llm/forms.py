from django import forms

from llm.models import ModelEndpoint


class EndpointForm(forms.ModelForm):
    class Meta:
        model = ModelEndpoint
        fields = ["name", "kind", "base_url", "model", "api_key_env", "max_concurrency", "connect_timeout", "read_timeout",
                  "max_retries", "price_input_per_mtok", "price_output_per_mtok", "enabled"]
        labels = {"api_key_env": "API key variable (name only)", "price_input_per_mtok": "$ per million input tokens",
                  "price_output_per_mtok": "$ per million output tokens", "max_concurrency": "Max concurrent calls"}
