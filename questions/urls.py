from django.urls import path

from questions import views

urlpatterns = [
    path("", views.home, name="home"),
    path("validate/", views.document_validate, name="document-validate"),
]
