"""Dataset builders that ship with memplug: generators and loaders of official releases."""
