"""The htmx pages: views for runs and tasks (`views`) and approvals (`approvals`), their
forms (`forms`), the HTML fragments that pages and sockets render (`fragments`) and what every
page's header needs (`context_processors`)."""
