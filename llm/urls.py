from django.urls import path

from llm import views

urlpatterns = [
    path("models/", views.model_endpoints, name="model-endpoints"),
    path("models/<int:pk>/", views.model_endpoints, name="model-endpoint-edit"),
    path("models/<int:pk>/test/", views.endpoint_test, name="model-endpoint-test"),
    path("models/checks/<int:pk>/", views.endpoint_check_status, name="model-endpoint-check"),
]
