"""What the authorizations app tells the rest: an account was connected (or connected again).

Sent after the transaction that saved the tokens commits, with ``connection`` and ``user``
(``None`` for the connection's own authorization). The engine listens, to send the rounds and
calls that waited for it.
"""

from django.dispatch import Signal

connected = Signal()
