# English as mrtrweb writes it: day before month, a 24-hour clock (as the pages always did).
DATE_FORMAT = "j M Y"
TIME_FORMAT = "H:i"
DATETIME_FORMAT = "j M Y, H:i"
MONTH_DAY_FORMAT = "j M"
SHORT_DATETIME_FORMAT = "j M Y, H:i"
