from django.contrib import admin

from llm.models import ModelCall, ModelEndpoint


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "model", "base_url", "api_key_env", "max_concurrency", "enabled"]


@admin.register(ModelCall)
class ModelCallAdmin(admin.ModelAdmin):
    list_display = ["created_at", "endpoint_name", "purpose", "outcome", "input_tokens", "output_tokens", "cost", "latency_ms"]
    list_filter = ["purpose", "outcome", "endpoint_name"]
    readonly_fields = [f.name for f in ModelCall._meta.fields]
