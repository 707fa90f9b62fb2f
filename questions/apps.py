from django.apps import AppConfig


class QuestionsConfig(AppConfig):
    name = "questions"
    verbose_name = "Question sets"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from questions.services.audit import audit_sign_in

        # a sign-in (a password or the identity provider) is an action of the audit log
        user_logged_in.connect(audit_sign_in, dispatch_uid="questions.audit_sign_in")
