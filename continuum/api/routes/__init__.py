"""API routers, one per area; `continuum.api.app.create_app` mounts them."""
