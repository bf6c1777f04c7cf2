"""Who is who: the roles of the people using the site (``roles``), below every app that asks."""
