"""An example memplug plugin: the `hello` dataset and the `hello` agent."""
