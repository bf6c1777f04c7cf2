# German: Django's own, with the short month names the pages have room for.
DATE_FORMAT = "j. M Y"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "j. M Y, H:i"
MONTH_DAY_FORMAT = "j. M"
SHORT_DATETIME_FORMAT = "j. M Y, H:i"
