from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from accounts.models import Membership, Project, User

admin.site.register(User, UserAdmin)


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    inlines = [MembershipInline]
