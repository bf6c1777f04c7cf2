"""Who is who: the roles of the people using the site (``roles``), below every app that asks;
how to speak to them (``speaking``: in their language and zone; ``when``: moments as read)."""
