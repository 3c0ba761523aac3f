from django.db import migrations, models

from runs.migration_operations import AddFieldInPlace


class Migration(migrations.Migration):
    """Runs keep whether a reported time is below the physics floor (records.floor), and the ranking indexes
    leave such runs out of the ranked part as they leave out runs a rerun did not reproduce. Runs stored before
    are decided by `manage.py decide_floors`."""

    dependencies = [
        ('runs', '0021_verification_models_moved'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='run',
            name='run_group_ranked',
        ),
        migrations.RemoveIndex(
            model_name='run',
            name='run_group_demoted',
        ),
        migrations.RemoveIndex(
            model_name='run',
            name='run_group_source_rank',
        ),
        migrations.RemoveIndex(
            model_name='run',
            name='run_group_source_demoted',
        ),
        AddFieldInPlace(
            model_name='run',
            name='faster_than_floor',
            field=models.BooleanField(default=False),
        ),
        AddFieldInPlace(
            model_name='run',
            name='floor_breach',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(condition=models.Q(('withdrawn_at', None), ('latency_ns__isnull', False), ('status__in', ('passed', 'measured')), models.Q(('evidence', 'not_reproduced'), ('faster_than_floor', True), _connector='OR', _negated=True)), fields=['group', 'latency_ns', 'run_id'], name='run_group_ranked'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(condition=models.Q(('withdrawn_at', None), ('latency_ns__isnull', False), ('status__in', ('passed', 'measured')), models.Q(('evidence', 'not_reproduced'), ('faster_than_floor', True), _connector='OR')), fields=['group', 'latency_ns', 'run_id'], name='run_group_demoted'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(models.F('group'), models.F('source_rank'), models.F('run_id'), condition=models.Q(('withdrawn_at', None), ('source_rank__isnull', False), models.Q(('evidence', 'not_reproduced'), ('faster_than_floor', True), _connector='OR', _negated=True)), name='run_group_source_rank'),
        ),
        migrations.AddIndex(
            model_name='run',
            index=models.Index(models.F('group'), models.F('source_rank'), models.F('run_id'), condition=models.Q(('withdrawn_at', None), ('source_rank__isnull', False), models.Q(('evidence', 'not_reproduced'), ('faster_than_floor', True), _connector='OR')), name='run_group_source_demoted'),
        ),
    ]
