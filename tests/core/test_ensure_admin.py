import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from tests.support.factories import wide

pytestmark = pytest.mark.django_db
User = get_user_model()


def run_ensure_admin(*args: str) -> str:
    out = io.StringIO()
    call_command("ensure_admin", *args, stdout=out)
    return out.getvalue()


def test_creates_admin_with_a_password_printed_once():
    first = run_ensure_admin()

    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    password = first.split("password: ", 1)[1].split()[0]
    assert len(password) >= 20
    assert admin.check_password(password)

    second = run_ensure_admin()

    assert password not in second
    assert User.objects.count() == 1
    admin.refresh_from_db()
    assert admin.check_password(password)  # the second run changed nothing


def test_the_password_is_boxed_with_the_sign_in_page(settings):
    settings.MRTRWEB_BASE_URL = "http://127.0.0.1:8123"

    out = run_ensure_admin()

    lines = out.strip().splitlines()
    assert lines[0].startswith("+--") and lines[-1] == lines[0]
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines[1:-1])
    assert len({len(line) for line in lines}) == 1  # a closed box
    assert "http://127.0.0.1:8123/accounts/login/" in out
    assert "/admin/" not in out
    assert "username: admin" in out


def test_does_nothing_when_any_superuser_exists():
    User.objects.create_superuser("root", "", "a-long-password-123")

    assert run_ensure_admin() == ""
    assert list(User.objects.values_list("username", flat=True)) == ["root"]


@pytest.mark.parametrize("existing", ["admin", "Admin", wide("ADMIN")])
def test_refuses_to_take_over_an_ordinary_user_named_admin(existing):
    User.objects.create_user(existing, "", "a-long-password-123")

    with pytest.raises(CommandError, match=r"(?i)admin"):
        run_ensure_admin()
    assert not User.objects.filter(is_superuser=True).exists()
    assert User.objects.count() == 1


def test_a_fullwidth_username_is_stored_as_it_reads():
    run_ensure_admin("--username", wide("root"))
    assert User.objects.get(is_superuser=True).username == "root"
