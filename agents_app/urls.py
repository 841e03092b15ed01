from django.contrib.auth import views as auth_views
from django.urls import path

from agents_app.web import (
    agent_tabs,
    api_keys,
    approvals,
    chat,
    files,
    forks,
    metrics,
    prometheus,
    views,
)
from agents_app.web.dashboard import dashboard
from agents_app.web.run_diff import run_diff_page
from agents_app.web.sign_in import SignInForm
from tools_app.views import tool_list

urlpatterns = [
    path("", dashboard, name="dashboard"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            authentication_form=SignInForm, redirect_authenticated_user=True, next_page="dashboard"
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(next_page="login"), name="logout"),
    path("tasks/new/", views.task_new, name="task_new"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/pause/", views.run_pause, name="run_pause"),
    path("runs/<int:run_id>/resume/", views.run_resume, name="run_resume"),
    path("runs/<int:run_id>/restart/", views.run_restart, name="run_restart"),
    path("runs/<int:run_id>/replay/", views.run_replay_view, name="run_replay"),
    path("runs/<int:run_id>/fork/", forks.run_fork_view, name="run_fork"),
    path("runs/<int:run_id>/diff/<int:other_id>/", run_diff_page, name="run_diff"),
    path("runs/<int:run_id>/files/", files.run_files_tree, name="run_files_tree"),
    path("runs/<int:run_id>/files/view/", files.run_file_view, name="run_file_view"),
    path("runs/<int:run_id>/files/download/", files.run_file_download, name="run_file_download"),
    path(
        "runs/<int:run_id>/files/all.zip",
        files.run_files_download_all,
        name="run_files_download_all",
    ),
    path("chat/", chat.chat_page, name="chat_home"),
    path("chat/new/", chat.chat_new, name="chat_new"),
    path("chat/<int:conversation_id>/", chat.chat_page, name="chat"),
    path("chat/<int:conversation_id>/entries", chat.chat_entries, name="chat_entries"),
    path("chat/<int:conversation_id>/send/", chat.chat_send, name="chat_send"),
    path("chat/<int:conversation_id>/stop/", chat.chat_stop, name="chat_stop"),
    path("chat/<int:conversation_id>/settings/", chat.chat_settings, name="chat_settings"),
    path("chat/<int:conversation_id>/close/", chat.chat_close, name="chat_close"),
    path("chat/<int:conversation_id>/reopen/", chat.chat_reopen, name="chat_reopen"),
    path("chat/agents/new/", agent_tabs.agent_new, name="agent_new"),
    path("chat/agents/start/", agent_tabs.agent_create_start, name="agent_create_start"),
    path("chat/agents/<int:agent_id>/", agent_tabs.agent_tab, name="agent_tab"),
    path("chat/agents/<int:agent_id>/output", agent_tabs.agent_output, name="agent_output"),
    path("chat/agents/<int:agent_id>/start/", agent_tabs.agent_start_view, name="agent_start"),
    path("chat/agents/<int:agent_id>/stop/", agent_tabs.agent_stop_view, name="agent_stop"),
    path("chat/agents/<int:agent_id>/close/", agent_tabs.agent_close, name="agent_close"),
    path("chat/agents/<int:agent_id>/reopen/", agent_tabs.agent_reopen, name="agent_reopen"),
    path(
        "chat/agents/<int:agent_id>/attempts/<int:number>/log",
        agent_tabs.agent_log,
        name="agent_log",
    ),
    path("tools/", tool_list, name="tool_list"),
    path("agent-metrics/", metrics.metrics_page, name="metrics_page"),
    # Prometheus asks for exactly /metrics (web/prometheus.py).
    path("metrics", prometheus.metrics, name="metrics"),
    path("approvals/", approvals.approval_list, name="approval_list"),
    path("approvals/bulk/", approvals.approvals_bulk, name="approvals_bulk"),
    path(
        "approvals/<int:approval_id>/decide/",
        approvals.approval_decide,
        name="approval_decide",
    ),
    path(
        "approvals/<int:approval_id>/plan/",
        approvals.approval_plan_edit,
        name="approval_plan_edit",
    ),
    path("settings/", approvals.settings_page, name="settings"),
    path("settings/yolo/", approvals.yolo_set, name="yolo_set"),
    path("settings/rules/<int:rule_id>/revoke/", approvals.rule_revoke, name="rule_revoke"),
    path("settings/api-keys/", api_keys.api_key_create, name="api_key_create"),
    path(
        "settings/api-keys/<int:key_id>/revoke/",
        api_keys.api_key_revoke,
        name="api_key_revoke",
    ),
]
