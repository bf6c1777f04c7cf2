from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_preferences"),
    ]

    operations = [
        migrations.AddField(
            model_name="preferences",
            name="language",
            field=models.CharField(blank=True, default="", max_length=16),
        ),
    ]
