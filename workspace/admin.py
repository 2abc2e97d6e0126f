from django.contrib import admin

from workspace.models import Overlay, OverlayEntry


class OverlayEntryInline(admin.TabularInline):
    model = OverlayEntry
    fields = ("path", "kind", "format", "action", "updated_at")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Overlay)
class OverlayAdmin(admin.ModelAdmin):
    list_display = ("id", "label", "world", "purpose", "actor_email", "created_by", "created_at")
    list_filter = ("purpose",)
    search_fields = ("label", "world__title", "actor_email")
    list_select_related = ("world", "created_by")
    raw_id_fields = ("world", "created_by")
    inlines = [OverlayEntryInline]


@admin.register(OverlayEntry)
class OverlayEntryAdmin(admin.ModelAdmin):
    list_display = ("path", "overlay", "kind", "action", "updated_at")
    list_filter = ("kind", "action")
    search_fields = ("path",)
    list_select_related = ("overlay",)
    raw_id_fields = ("overlay",)
