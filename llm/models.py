from decimal import Decimal

from django.conf import settings
from django.db import models

from core.models import TimeStampedModel


class EndpointKind(models.TextChoices):
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible (OpenAI, vLLM, SGLang, Ollama, llama.cpp, OpenRouter …)"
    ANTHROPIC = "anthropic", "Anthropic Messages API"
    SCRIPTED = "scripted", "Scripted (sample answers, no model)"


class ModelEndpoint(TimeStampedModel):
    """A model an admin has configured. The API key itself is never stored: only the
    *name* of the environment variable that holds it on the web and worker machines."""

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=24, choices=EndpointKind.choices)
    base_url = models.URLField(blank=True, help_text="e.g. https://api.openai.com/v1 or http://127.0.0.1:11434/v1 (Ollama)")
    model = models.CharField(max_length=200, blank=True, help_text="The provider's model name, e.g. gpt-4.1-mini")
    api_key_env = models.CharField(
        max_length=100, blank=True, help_text="Name of the environment variable holding the key, e.g. OPENAI_API_KEY"
    )
    max_concurrency = models.PositiveSmallIntegerField(default=4, help_text="Calls in flight at once, across every worker.")
    connect_timeout = models.FloatField(default=10.0)
    read_timeout = models.FloatField(default=120.0)
    max_retries = models.PositiveSmallIntegerField(default=4)
    stream = models.BooleanField(
        default=False,
        help_text="Ask for the answer as a stream of events. Keeps long answers alive through proxies that cut a "
                  "connection that stays silent; costs a little more CPU per call.",
    )
    price_input_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    price_output_per_mtok = models.DecimalField(max_digits=10, decimal_places=4, default=Decimal("0"))
    enabled = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} (scripted sample model)" if self.is_scripted else self.name

    @property
    def is_scripted(self) -> bool:
        return self.kind == EndpointKind.SCRIPTED

    @property
    def picker_label(self) -> str:
        """How a model picker names it: its name and model, or, for the scripted sample model,
        that it is not a real model (said once, when its name says what it is already)."""
        if not self.is_scripted:
            return f"{self.name} · {self.model}"
        if "scripted sample model" in self.name.lower():
            return f"{self.name} — not a real model"
        return f"{self.name} — scripted sample model, not a real model"

    def cost_of(self, input_tokens: int, output_tokens: int) -> Decimal:
        prices = Decimal(str(self.price_input_per_mtok)), Decimal(str(self.price_output_per_mtok))
        return (prices[0] * input_tokens + prices[1] * output_tokens) / Decimal(1_000_000)


class CallPurpose(models.TextChoices):
    SKELETON = "skeleton", "Suggest skeleton"
    DRAFTING = "drafting", "Drafting"
    ROLLOUT = "rollout", "Rollout"
    JUDGE = "judge", "Judge"
    CHECK = "check", "Connection test"
    OTHER = "other", "Other"


class CallOutcome(models.TextChoices):
    OK = "ok", "OK"
    ERROR = "error", "Error"


class ModelCall(models.Model):
    """One call through llm.client, successful or not: what it cost and how it went."""

    endpoint = models.ForeignKey(ModelEndpoint, null=True, on_delete=models.SET_NULL, related_name="calls")
    endpoint_name = models.CharField(max_length=100)
    project_id = models.PositiveBigIntegerField(null=True, blank=True, db_index=True)
    purpose = models.CharField(max_length=16, choices=CallPurpose.choices)
    outcome = models.CharField(max_length=8, choices=CallOutcome.choices)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal("0"))
    latency_ms = models.PositiveIntegerField(default=0)
    attempts = models.PositiveSmallIntegerField(default=1)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The pickers' default (llm.selectors.endpoint_default): each endpoint's latest calls in a project.
        indexes = [models.Index(fields=["endpoint", "project_id", "created_at"], name="llm_call_endpoint_project_at"),
                   models.Index(fields=["project_id", "created_at", "id"], name="llm_call_project_list")]

    def __str__(self) -> str:
        return f"{self.purpose} on {self.endpoint_name}: {self.outcome}"


class EndpointCheckStatus(models.TextChoices):
    QUEUED = "queued", "Waiting for a worker"
    RUNNING = "running", "Testing"
    OK = "ok", "OK"
    FAILED = "failed", "Failed"


class EndpointCheck(models.Model):
    """One "Test connection" of an endpoint: a tiny call through llm.client, run on the
    `default` queue (no model call runs inside a web request), its result polled by the page."""

    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.CASCADE, related_name="checks")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=8, choices=EndpointCheckStatus.choices, default=EndpointCheckStatus.QUEUED)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Why it failed, in words an admin can act on.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["endpoint", "created_at"], name="llm_check_endpoint_at")]

    def __str__(self) -> str:
        return f"Connection test of {self.endpoint_id}: {self.status}"

    @property
    def is_finished(self) -> bool:
        return self.status in (EndpointCheckStatus.OK, EndpointCheckStatus.FAILED)
