"""The admins' pages: every call and round, filtered, searched and paged (``listing``); the
actions on rounds, through the engine (those that cannot be undone ask first); a call's audit
trail (``audit``); people and groups (``people``: invite by email with a set-password link,
roles, groups, switching accounts off).
"""
