"""Signing in, and a person's own settings.

- ``signin``: the password sign-in and setting a new password by email (Django's views with
  our form, pages and email; the link on ``MRTRWEB_BASE_URL``); a new password, changed or
  reset, ends the person's other sessions at once (``sessions.end_other_sessions``);
- ``backends``: ``AccountBackend``, Django's ``ModelBackend`` whose read of the signed-in person
  on every request is one written-out statement (`raw()`) that brings their permissions too
  (``people.roles.person_sql``);
- ``sessions``: the session store (Django's database sessions) and ending a person's other
  sessions;
- ``second_factor``, ``middleware``, ``qr``: two-step sign-in (django-otp devices, who must use
  it, enrolment, ``SecondFactorMiddleware`` keeping unverified sessions of admins, operators
  and staff on those pages; ``manage.py reset_two_step``);
- ``oidc``: single sign-on (mozilla-django-oidc), active people only, identities by
  ``iss`` + ``sub``, groups mapped from claims, the provider's ``amr`` as a second factor;
- ``timezones`` and ``languages``: the account page's choice of time zone and language wins
  over the browser's (``/account/``).
"""
