"""A run's workspace files over the API: the REST listing and downloads (`rest`)."""
