from django.urls import path

from llm import views

urlpatterns = [
    path("models/", views.model_endpoints, name="model-endpoints"),
    path("models/<int:pk>/", views.model_endpoints, name="model-endpoint-edit"),
]
