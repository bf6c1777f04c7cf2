from django.contrib import admin

from mrtrweb.people.admin import ReadOnlyAdmin

from .models import Delegation, Policy

admin.site.register(Policy, ReadOnlyAdmin)
admin.site.register(Delegation, ReadOnlyAdmin)
