from django.urls import path

from mrtrweb.dashboard import people, views

app_name = "dashboard"

urlpatterns = [
    path("", views.home, name="home"),
    path("rounds/", views.rounds, name="rounds"),
    path("rounds/bulk/", views.bulk, name="bulk"),
    path("calls/", views.calls, name="calls"),
    path("calls/<int:pk>/audit/", views.call_audit, name="call_audit"),
    path("people/", people.people, name="people"),
    path("people/invite/", people.invite, name="invite"),
    path("people/<int:pk>/", people.person, name="person"),
    path("people/<int:pk>/active/", people.person_active, name="person_active"),
    path("people/<int:pk>/link/", people.person_link, name="person_link"),
    path("groups/", people.groups, name="groups"),
    path("groups/<int:pk>/", people.group, name="group"),
]
