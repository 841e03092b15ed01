"""The htmx pages: views for runs and tasks (`views`), approvals (`approvals`), API keys
(`api_keys`), the Settings page they share (`settings_page`), their
forms (`forms`), what the run page shows (`run_page`), two runs side by side
(`run_diff`), the HTML fragments the sockets send
(`fragments`), what every page's header needs (`context_processors`) and the sign-in form
(`sign_in`, throttled by core/sign_in)."""
