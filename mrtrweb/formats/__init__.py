"""The site's date and number formats per language (settings.FORMAT_MODULE_PATH), over Django's
own: short month names and a 24-hour clock in both languages, so a deadline reads "2 Dec,
07:29" in English and "2. Dez, 07:29" in German. Only the names set here differ from Django's.
"""
