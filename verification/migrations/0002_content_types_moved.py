from django.db import migrations

# The six models' content types move with them, so that what points at a content type keeps working: the
# custom permission `request_rerun` (now "verification.request_rerun") and the models' default permissions
# held by users and groups, the admin's log entries, and any generic relation. On a new database there are
# none yet (they are made after migrating), and nothing is done.
MODELS = ("rerunrequest", "evidencechange", "rerunworker", "workerkey", "rerunattestation", "verificationpause")


def move_content_types(apps, schema_editor, source="runs", target="verification"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    db = schema_editor.connection.alias
    for model in MODELS:
        # A content type the target app got already (a migrate run with the old rows still there) gives way
        # to the old one, which the permissions and log entries point at.
        if ContentType.objects.using(db).filter(app_label=source, model=model).exists():
            ContentType.objects.using(db).filter(app_label=target, model=model).delete()
            ContentType.objects.using(db).filter(app_label=source, model=model).update(app_label=target)
    ContentType.objects.clear_cache()


def move_content_types_back(apps, schema_editor):
    move_content_types(apps, schema_editor, source="verification", target="runs")


class Migration(migrations.Migration):
    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("verification", "0001_initial"),
    ]

    operations = [migrations.RunPython(move_content_types, move_content_types_back)]
